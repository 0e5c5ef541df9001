"""What a job's page shows, read for each look at it: its row of the fleet, its stored
manifest, its deploy history with the SQL diff between versions, `inspect`'s view of its
checkpoint, the tail of its driver log and its sinks' schema history.

Each part is read on its own: one that cannot be read says why in its place, and the others are
shown. Secrets are masked as the plans mask them (read/secrets.py): values under a secret key,
values that assign one, and free text (SQL, log lines, errors) with assigned secrets masked.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.history import read_history
from flink_sql_runner.gather.inspection import inspect_job
from flink_sql_runner.gather.logs import find_log
from flink_sql_runner.gather.sink_claims import read_sink_claims
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.read.secrets import mask, redact_all, redact_text
from flink_sql_runner.render.inspect import inspect_json
from flink_sql_runner.ui.fleet import Seen

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment

#: Lines of the driver log shown, read from its last TAIL_BYTES, each cut at LINE_LIMIT.
LOG_LINES = 200
TAIL_BYTES = 256 * 1024
LINE_LIMIT = 2000
#: The newest claims of a sink read and shown (anyone who can write the sink can add more).
CLAIMS_SHOWN = 50
#: A value longer than this is cut in the change tables (the diff shows SQL and code whole).
VALUE_LIMIT = 200


def job_page(deployment: Deployment, seen: Seen, name: str) -> dict[str, Any] | None:
    """The page's parts; None when nothing of `name` is known (not in the look, not stored)."""
    look = seen.look
    row = look.by_name.get(name) if look is not None else None
    manifest = look.manifests.get(name) if look is not None else None
    if row is None and seen.failed is None:
        return None
    return {
        "name": name,
        "row": row,
        "manifest": _manifest(manifest) if manifest is not None else None,
        "history": _part(_history, deployment, name, manifest),
        "checkpoint": _part(_checkpoint, deployment, name) if manifest is not None else None,
        "log": _part(_log, deployment, name),
        "sinks": _part(_sinks, deployment, manifest) if manifest is not None else [],
    }


def _part(read: Callable[..., Any], *args: Any) -> Any:
    """One part of the page, or, when reading it failed whatever the way (a forged file, a
    storage that did not answer), its error in its place: the other parts are shown."""
    try:
        return read(*args)
    except Exception as exc:  # noqa: BLE001 (one part's failure is that part's)
        said = (
            _problem(exc)
            if isinstance(exc, FsrError)
            else redact_text(
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
            )
        )
        failed = {"error": f"could not be read: {said}", "entries": [], "diffs": [],
                  "missing": [], "problems": [], "lines": [], "where": None}  # fmt: skip
        return (
            [{"table": "", "path": None, "claims": [], "problem": failed["error"]}]
            if (read is _sinks)
            else failed
        )


def shown_value(value: Any, key: str = "") -> str:
    """A manifest value for the page: masked, JSON for what is not text, cut when long."""
    value = mask(value, key)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 3] + "..."


def _problem(exc: Exception) -> str:
    return redact_text(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _body(job: dict[str, Any]) -> tuple[str, str]:
    """The job's query ("sql") or PySpark code ("code"), secrets masked."""
    if job.get("sql") is not None:
        return "sql", redact_text(str(job["sql"]))
    if job.get("code") is not None:
        return "code", redact_text(str(job["code"]))
    return "sql", ""


def _manifest(manifest: StoredManifest) -> dict[str, Any]:
    job = manifest.job
    kind, body = _body(job)
    shown = {
        k: shown_value(v, str(k))
        for k, v in sorted(job.items())
        if k not in ("sql", "code", "name", "description")
    }
    return {
        "description": redact_text(str(job.get("description") or "")),
        "kind": kind,
        "body": body,
        "fields": shown,
        "version": manifest.meta.query_version,
        "created": manifest.meta.query_create_timestamp,
        "spark-version": manifest.meta.spark_version,
    }


def _history(deployment: Deployment, name: str, manifest: StoredManifest | None) -> dict[str, Any]:
    try:
        history = read_history(deployment.store, name)
    except FsrError as exc:
        return {"error": _problem(exc), "entries": [], "diffs": [], "missing": [], "problems": []}
    entries = []
    for entry in history.entries:
        changes = [
            {
                "field": str(c.get("field", "")),
                "old": shown_value(c.get("old"), str(c.get("field", ""))),
                "new": shown_value(c.get("new"), str(c.get("field", ""))),
                "kind": str(c.get("kind", "")),
                "why": redact_text(str(c.get("why", ""))),
            }
            for c in entry.changes
            if isinstance(c, dict)
        ]
        entries.append(
            {
                "version": entry.version,
                "action": entry.action,
                "reason": redact_text(entry.reason),
                "at": entry.at,
                "release": entry.release,
                "command": entry.command,
                "note": redact_text(entry.note) if entry.note else None,
                "changes": changes,
            }
        )
    current = manifest.meta.query_version if manifest is not None else None
    return {
        "error": None,
        "entries": list(reversed(entries)),  # newest first
        "diffs": _diffs(history.entries),
        "missing": history.missing_versions(current) if current is not None else [],
        "problems": [redact_text(p) for p in history.problems],
    }


def _diffs(entries: list[Any]) -> list[dict[str, Any]]:
    """Per version whose query differs from the version before it: the diff, newest first."""
    by_version: dict[int, str] = {}
    for entry in entries:  # oldest first: each version's last record wins
        if entry.query is not None:
            by_version[entry.version] = redact_text(str(entry.query))
    versions = sorted(by_version)
    diffs = []
    for old, new in zip(versions, versions[1:], strict=False):
        before, after = by_version[old].splitlines(), by_version[new].splitlines()
        if before == after:
            continue
        lines = []
        for line in list(difflib.unified_diff(before, after, lineterm="", n=3))[2:]:
            kind = {"+": "added", "-": "removed", "@": "hunk"}.get(line[:1], "same")
            lines.append({"kind": kind, "text": line})
        diffs.append({"from": old, "to": new, "lines": lines})
    return list(reversed(diffs))


def _checkpoint(deployment: Deployment, name: str) -> dict[str, Any]:
    try:
        found = inspect_job(name, deployment.store, deployment.target, deployment.storage, None)
    except FsrError as exc:
        return {"error": _problem(exc)}
    doc: dict[str, Any] = redact_all(json.loads(inspect_json(found)))
    doc["error"] = None
    return doc


def _log(deployment: Deployment, name: str) -> dict[str, Any]:
    try:
        found = find_log(name, deployment.store, deployment.target)
    except FsrError as exc:
        return {"error": _problem(exc), "where": None, "lines": []}
    if found.log is None:
        return {"error": None, "where": None, "lines": [], "note": "no log of any run yet"}
    if not found.log.files:
        where = redact_text(found.log.where)
        note = f"the driver log is not read from here; {where}"
        return {"error": None, "where": where, "lines": [], "note": note}
    lines: list[str] = []
    for path in found.log.files:
        try:
            lines += _tail(path)
        except OSError as exc:
            where = redact_text(path)
            return {"error": f"{where}: {exc.strerror or exc}", "where": where, "lines": []}
    # Masked as one text: a private key logged over several lines is masked whole.
    shown = redact_text("\n".join(lines[-LOG_LINES:])).split("\n")
    return {"error": None, "where": redact_text(", ".join(found.log.files)), "lines": shown}


def _tail(path: str) -> list[str]:
    """The last LOG_LINES lines of a log, read from its last TAIL_BYTES only, each cut at
    LINE_LIMIT characters: a driver that logs one line of a gigabyte makes no page of one."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TAIL_BYTES))
        data = handle.read(TAIL_BYTES)
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if size > TAIL_BYTES:
        lines[0] = "[...]"  # the line the read began in the middle of
    if lines and lines[-1] == "":
        lines.pop()
    return [
        line
        if len(line) <= LINE_LIMIT
        else f"{line[:LINE_LIMIT]} [... {len(line) - LINE_LIMIT} more characters]"
        for line in lines[-LOG_LINES:]
    ]


def _sinks(deployment: Deployment, manifest: StoredManifest) -> list[dict[str, Any]]:
    """The job's target table, when it is a file sink whose path the manifest says: what its
    claims recorded of the schemas written, oldest first."""
    target = str(manifest.job.get("target-table") or "")
    definition = manifest.tables.get(target)
    if not isinstance(definition, dict):
        return []
    options = {str(k).lower(): v for k, v in (definition.get("options") or {}).items()}
    path = options.get("path")
    if definition.get("format") not in FILE_FORMATS or not path:
        note = "not a file sink: the runner keeps no schema history of it"
        return [{"table": target, "path": None, "claims": [], "note": note}]
    where = (
        str(path)
        .replace("{job_name}", manifest.name)
        .replace("{query_version}", str(manifest.meta.query_version))
    )
    if "${" in where:
        return [{"table": target, "path": redact_text(where), "claims": [],
                 "note": "its path takes environment values the page does not read"}]  # fmt: skip
    found = read_sink_claims(deployment.storage, where, newest=CLAIMS_SHOWN)
    claims = [
        {
            "order": c.order,
            "first-batch": c.first_batch,
            "job": c.job,
            "version": c.version,
            "claimed": c.claimed,
            "schema": [
                f"{f.get('name')} {f.get('type')}{'' if f.get('nullable', True) else ' NOT NULL'}"
                for f in c.schema
            ]
            if c.schema is not None
            else None,
        }
        for c in found.claims
    ]
    return [{"table": target, "path": redact_text(where), "claims": claims, "older": found.older,
             "problem": redact_text(found.problem) if found.problem else None}]  # fmt: skip
