"""What a saved plan's decisions were decided from, as digests: for each job of the plan its
file, the catalog files its tables are declared in, the environment values it names, its
manifest as merged and resolved, and what the store held of it (its manifest's deciding content,
its intent record); the template once. No value is kept, only digests (`Digests`): with the
plan key CI holds (`FLINK_SQL_RUNNER_PLAN_KEY`), keyed (HMAC-SHA256), so that no value can be
guessed from the file without the key; without it, salted with the plan's own salt, and an
environment value whose name says it is a secret (read/secrets.py) is recorded as set, never
digested (a salted digest of a password falls to a word list). Files are digested whole: a
secret written in a job or table file can be tried against its file's salted digest by whoever
has the rest of the file; the key closes that too.

The store is recorded by what decides, not by its raw version token: `watch`, restarting a job
from its checkpoint, records the same manifest again (with the Spark version its run reported),
which gives it a new token (S3's ETag, a file's digest) but decides nothing anew; another
deploy, a `stop`, a prune or an interrupted command's record does. `store_entry` digests the
manifest's job, tables and version (with its query id) and the intent record's kind, phase and
manifest, and leaves out what a restart rewrites (`meta.spark-version`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path
from typing import Any

from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.secrets import is_secret

#: `${NAME}` in a value: an environment variable resolved when a run starts (model/runtime.py).
ENV_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: An environment variable's name that may hold a secret, wider than a property's rule
#: (read/secrets.py): `DB_PASS`, `KAFKA_PWD`, `API_KEY`, `AUTH_HEADER`, `SASL_JAAS`, ... Without
#: the plan key, such a value is recorded as set, never digested (a salted digest falls to a
#: word list); a value used under a secret property's key is too, whatever its name.
SECRET_ENV_NAME = re.compile(
    r"(?i)pass|pwd|secret|token|key|auth|cred|jaas|cert|private|sas|sign|salt|session|cookie"
)


class Digests:
    """How a saved plan digests what it was decided from: `salt` (the plan's own, in its file)
    before the data; with `key` (the plan key), HMAC-SHA256 under it."""

    def __init__(self, salt: str, key: bytes | None = None) -> None:
        self.salt, self.key = salt, key

    def __call__(self, data: bytes | str | None) -> str | None:
        """`data`'s digest (None: there is no such thing)."""
        if data is None:
            return None
        raw = data.encode("utf-8") if isinstance(data, str) else data
        salted = self.salt.encode("ascii") + b"\0" + raw
        if self.key is not None:
            return hmac.new(self.key, salted, hashlib.sha256).hexdigest()
        return hashlib.sha256(salted).hexdigest()

    def env(self, name: str, value: str | None, secret: bool = False) -> str | None:
        """An environment value's entry: its digest, or only whether it is set when it may be
        a secret (`secret`: it is used where a secret is, or its name says it may be one) and
        there is no key to digest it with."""
        if value is not None and self.key is None and (secret or SECRET_ENV_NAME.search(name)):
            return "set (a secret: not digested without the plan key)"
        return self(value)

    def file(self, path: str | Path) -> str | None:
        """The digest of the file at `path`; None when it is not there (or not readable)."""
        try:
            return self(Path(path).read_bytes())
        except OSError:
            return None


def canonical(value: Any) -> str:
    """One text per value: the same value gives the same digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def env_names(job: Job) -> list[str]:
    """The environment variables `job` names (`${NAME}` in its fields or tables), sorted."""
    return sorted(set(ENV_VARIABLE.findall(canonical([job.spec, job.tables]))))


def secret_env_names(job: Job) -> set[str]:
    """The environment variables `job` names in a value a secret is (read/secrets.py: under a
    secret key, or assigning one)."""
    found: set[str] = set()

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and is_secret(key, value):
            found.update(ENV_VARIABLE.findall(value))

    walk([job.spec, job.tables], "")
    return found


def where(path: str | Path) -> str:
    """A file as a plan names it: relative to the folder the command runs in when it is in it
    (a CI build folder differs between pipelines), else absolute."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    inside = absolute.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(absolute, cwd) if inside else absolute


def store_where(location: str) -> str:
    """A manifest store as a plan names it: a URI as it is, a folder absolute (`state/manifests`
    in two folders are two stores)."""
    return location if "://" in location else os.path.abspath(location)


def table_files(job: Job, catalog: Catalog | None) -> list[str]:
    """The catalog files the tables of `job` are declared in (none for a final manifest, whose
    tables it holds)."""
    found = set()
    for name in job.tables:
        table = catalog.get(name) if catalog is not None else None
        if table is not None:
            found.add(table.file)
    return sorted(found)


def job_entry(job: Job, catalog: Catalog | None, digests: Digests) -> dict[str, Any]:
    """What the desired `job` was decided from."""
    return {
        "file": where(job.file),
        "file-sha256": digests.file(job.file),
        "table-files": {where(f): digests.file(f) for f in table_files(job, catalog)},
        "env": {
            n: digests.env(n, os.environ.get(n), n in secret_env_names(job)) for n in env_names(job)
        },
        # Only a job with relative paths depends on the folder it is deployed from (a CI build
        # folder differs between pipelines).
        "base": job.base if job.relative else None,
        "manifest-sha256": digests(canonical({"spec": job.spec, "tables": job.tables})),
    }


def template_entry(template: Path, digests: Digests) -> dict[str, Any]:
    return {"file": where(template), "sha256": digests.file(template)}


def manifest_digest(manifest: StoredManifest | None, digests: Digests) -> str | None:
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
    return digests(canonical(doc))


def store_entry(facts: JobFacts, digests: Digests) -> dict[str, Any]:
    """What the store held of a job when its plan was decided."""
    intent = facts.intent.intent if facts.intent is not None else None
    intent_doc = None
    if intent is not None:
        intent_doc = {
            "kind": intent.kind.value,
            "phase": intent.phase.value,
            "action": intent.action,
            "run-id": intent.run_id,
            "manifest": manifest_digest(intent.manifest, digests),
        }
    return {
        "version": facts.stored.meta.query_version if facts.stored is not None else None,
        "manifest-sha256": manifest_digest(facts.stored, digests),
        "intent-sha256": digests(canonical(intent_doc)) if intent_doc else None,
    }
