"""What a saved plan's decisions were decided from, as digests: for each job of the plan its
file, the catalog files its tables are declared in, the environment values it names, its
manifest as merged and resolved, and what the store held of it (its manifest's deciding content,
its intent record); the template once. No value is kept, only digests salted with the plan's own
salt, so that a secret in a file or the environment cannot be looked up by its digest.

The store is recorded by what decides, not by its raw version token: `watch`, restarting a job
from its checkpoint, records the same manifest again (with the Spark version its run reported),
which gives it a new token (S3's ETag, a file's digest) but decides nothing anew; another
deploy, a `stop`, a prune or an interrupted command's record does. `store_entry` digests the
manifest's job, tables and version (with its query id) and the intent record's kind, phase and
manifest, and leaves out what a restart rewrites (`meta.spark-version`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job

#: `${NAME}` in a value: an environment variable resolved when a run starts (model/runtime.py).
ENV_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def digest(salt: str, data: bytes | str | None) -> str | None:
    """`data`'s SHA-256 with `salt` before it (None: there is no such thing)."""
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(salt.encode("ascii") + b"\0" + raw).hexdigest()


def canonical(value: Any) -> str:
    """One text per value: the same value gives the same digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def file_digest(salt: str, path: str | Path) -> str | None:
    """The digest of the file at `path`; None when it is not there (or not readable)."""
    try:
        return digest(salt, Path(path).read_bytes())
    except OSError:
        return None


def env_names(job: Job) -> list[str]:
    """The environment variables `job` names (`${NAME}` in its fields or tables), sorted."""
    return sorted(set(ENV_VARIABLE.findall(canonical([job.spec, job.tables]))))


def table_files(job: Job, catalog: Catalog | None) -> list[str]:
    """The catalog files the tables of `job` are declared in (none for a final manifest, whose
    tables it holds)."""
    found = set()
    for name in job.tables:
        table = catalog.get(name) if catalog is not None else None
        if table is not None:
            found.add(table.file)
    return sorted(found)


def job_entry(job: Job, catalog: Catalog | None, salt: str) -> dict[str, Any]:
    """What the desired `job` was decided from."""
    return {
        "file": job.file,
        "file-sha256": file_digest(salt, job.file),
        "table-files": {f: file_digest(salt, f) for f in table_files(job, catalog)},
        "env": {n: digest(salt, os.environ.get(n)) for n in env_names(job)},
        "base": job.base,
        "manifest-sha256": digest(salt, canonical({"spec": job.spec, "tables": job.tables})),
    }


def template_entry(template: Path, salt: str) -> dict[str, Any]:
    return {"file": str(template), "sha256": file_digest(salt, template)}


def manifest_digest(manifest: StoredManifest | None, salt: str) -> str | None:
    """What decides of a stored manifest: its job, its tables, its version and query id (not
    the Spark version its last healthy run reported, which a restart records again)."""
    if manifest is None:
        return None
    doc = {
        "job": manifest.job,
        "tables": manifest.tables,
        "query-version": manifest.meta.query_version,
        "query-id": manifest.meta.query_id,
    }
    return digest(salt, canonical(doc))


def store_entry(facts: JobFacts, salt: str) -> dict[str, Any]:
    """What the store held of a job when its plan was decided."""
    intent = facts.intent.intent if facts.intent is not None else None
    intent_doc = None
    if intent is not None:
        intent_doc = {
            "kind": intent.kind.value,
            "phase": intent.phase.value,
            "action": intent.action,
            "run-id": intent.run_id,
            "manifest": manifest_digest(intent.manifest, salt),
        }
    return {
        "version": facts.stored.meta.query_version if facts.stored is not None else None,
        "manifest-sha256": manifest_digest(facts.stored, salt),
        "intent-sha256": digest(salt, canonical(intent_doc)) if intent_doc else None,
    }
