"""The original tool's (flink-sql-runner for Flink) manifests, and what they become here.

The original stores `<prefix>/<name>.yaml` after each deploy: the job merged with its template
(`name`, `description`, `target-table`, `sql` or `code`, `flinkProperties`, ...) and a `meta`
section (`query-id`, `query-version`, `query-create-timestamp`, e.g. '2022-12-07 08:57:42'),
without a `schema-version`. Converted, it keeps its name, query, target and `meta`, and carries
`migrated-from` (the tool, when, and the fields that have no place here, such as
`flinkProperties`). `migrated-from` is a query change against any desired manifest
(changes.JOB_RULES), so the next deploy starts the job clean as the next version: Spark cannot
restore Flink's state.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.errors import Problem
from flink_sql_runner.model.stored import Meta, StoredManifest, utc_now_iso
from flink_sql_runner.read.original import is_original
from flink_sql_runner.read.schemas import schema_problems, shown

TOOL = "flink-sql-runner (Flink)"
MIGRATED_FROM = "migrated-from"
#: The original's fields that keep their meaning here.
KEPT_FIELDS = ("name", "description", "target-table", "sql", "code")


def is_migrated(doc: Any) -> bool:
    return isinstance(doc, dict) and MIGRATED_FROM in doc


@dataclass(frozen=True)
class Converted:
    manifest: StoredManifest
    #: The original's fields kept under `migrated-from` (for the report, never their values).
    carried: tuple[str, ...]


def _timestamp(value: Any) -> str | None:
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, str) and value.strip():
        return value
    return None


def convert(doc: Any, name: str, source: str) -> tuple[Converted | None, list[Problem]]:
    """The original's stored manifest `doc` (stored as `<name>.yaml` at `source`) in this
    product's format, or every problem that keeps it from being converted."""
    problems: list[Problem] = []

    def problem(field: str, message: str) -> None:
        problems.append(Problem(source, field, message))

    if not is_original(doc):
        problem(
            "(document)",
            "not a manifest of the original tool (a mapping with `meta` and no `schema-version`)",
        )
        return None, problems
    meta = doc["meta"]
    version = meta.get("query-version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        problem("meta.query-version", f"must be a whole number of at least 1, got {shown(version)}")
    query_id = meta.get("query-id")
    if not isinstance(query_id, str) or not query_id.strip():
        problem("meta.query-id", "must be text")
    created = _timestamp(meta.get("query-create-timestamp"))
    if created is None:
        problem("meta.query-create-timestamp", "must be a date and time")
    job_name = doc.get("name")
    if not isinstance(job_name, str):
        problem("name", "must be text")
    elif job_name != name:
        problem("name", f"is {shown(job_name)}, but the manifest is stored as {shown(name)}")
    else:  # a job name here is a safe identifier: S3 key, folder and application name
        problems += [
            p for p in schema_problems({"name": job_name}, "job", source) if p.field == "name"
        ]
    if ("sql" in doc) == ("code" in doc):
        problem("sql", "the original's manifest has neither or both of `sql` and `code`")
    for field in ("sql", "code", "target-table", "description"):
        if field in doc and not isinstance(doc[field], str):
            problem(field, f"must be text, got {shown(doc[field])}")
    if "target-table" not in doc:
        problem("target-table", "is required")
    if problems:
        return None, problems
    job = {field: doc[field] for field in KEPT_FIELDS if field in doc}
    others = {k: v for k, v in doc.items() if k not in (*KEPT_FIELDS, "meta")}
    job[MIGRATED_FROM] = {"tool": TOOL, "converted-at": utc_now_iso(), "original": others}
    manifest = StoredManifest(job=job, tables={}, meta=Meta(version, query_id, created))
    return Converted(manifest, tuple(sorted(others))), []


def same_migration(doc: Any, converted: StoredManifest) -> bool:
    """Whether a stored manifest of this product's format is `converted`, written by an
    earlier run of the migration (so running it again changes nothing)."""
    if not is_migrated(doc) or not isinstance(doc.get("meta"), dict):
        return False
    meta = doc["meta"]
    return (
        meta.get("query-id") == converted.meta.query_id
        and meta.get("query-version") == converted.meta.query_version
    )
