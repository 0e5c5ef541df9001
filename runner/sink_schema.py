"""What a sink's readers read today, and a run's own check of its output against it before its
first write (docs/concepts/schema-contracts.md; the rules themselves are runner/schema_rules.py).

A file sink's history is read cheaply, never its rows and never a listing of all its files
(the walk is runner/sink_walk.py's; here Spark reads the newest file's schema).
"""

from __future__ import annotations

import json
from typing import Any

from .file_sink import continued_unclaimed, file_sink_of, numbers, read_claims
from .log import log
from .manifest import options_of
from .schema_rules import Field, compare, fields_of, kafka_conflicts, reader_conflicts
from .sink_walk import history_of
from .spark_internals import (
    EXACT_PATHS,
    catalog_table_schema_json,
    ddl_schema_json,
    file_format_name,
)
from .storage import Storage

DOCS = "docs/concepts/schema-contracts.md"


class SchemaRefused(Exception):
    """The run's output would break its sink's readers under its policy; one line."""


def read_schema(spark: Any, fmt: str, location: str, base: str) -> list[Field]:
    """The schema Spark reads at `location` (a file: its footer only, with the partition
    columns its path under `base` gives)."""
    reader = spark.read.format(fmt).options(**EXACT_PATHS)  # a path, not a pattern
    if location != base:
        reader = reader.option("basePath", base)
    return fields_of(json.loads(reader.load(location).schema.json()))


def sink_history(spark: Any, storage: Storage, fmt: str, path: str) -> dict[str, Any]:
    """What a file sink's readers read today: `{"history": [{"fields", "from"}, ...] oldest
    first, "unknown": why or None}`. An empty or missing sink has no history."""
    kind = file_format_name(spark, fmt)
    return history_of(storage, kind, path, lambda at: read_schema(spark, kind, at, path))


def declared_fields(spark: Any, ddl: str) -> list[Field]:
    """A DDL column list as Spark parses it."""
    return fields_of(json.loads(ddl_schema_json(spark, ddl)))


def _source_of(entries: list[dict[str, Any]], name: str, kind: str | None = None) -> str:
    for entry in reversed(entries):
        for field in entry["fields"]:
            if field["name"].lower() == name.lower() and kind in (None, field["type"]):
                return str(entry["from"])
    return str(entries[-1]["from"])


def change_line(
    path: str, found: dict[str, Any], entries: list[dict[str, Any]], restart: bool
) -> tuple[str, str] | None:
    """(the change in words, `breaking` or `additive`) of this run's output against the sink's
    history; None for no change. A restart counts only retyped columns as breaking."""
    held: list[tuple[str, str]] = []  # (what the sink holds, where that was read)
    writes: list[str] = []
    newest = str(entries[-1]["from"])
    for r in found["retyped"]:
        held.append((f"{r['name']} as {r['from']}", _source_of(entries, r["name"], r["from"])))
        writes.append(f"{r['name']} as {r['to']}")
    if not restart:
        for f in found["dropped"]:
            held.append((f"{f['name']} as {f['type']}", _source_of(entries, f["name"])))
            writes.append(f"no {f['name']}")
        for r in found["renamed"]:
            held.append((f"{r['from']} as {r['type']}", _source_of(entries, r["from"])))
            writes.append(f"{r['to']} instead")
        if found["moved"]:
            held.append(("its columns in another order", newest))
            writes.append("them in the order " + ", ".join(found["moved"]))
    required = [f for f in found["added"] if f["name"] in found.get("required", [])]
    if found["added"] and not restart:
        writes += [
            f"{f['name']} as {f['type']}{' NOT NULL' if f in required else ''} (new)"
            for f in found["added"]
        ]
        if required:
            names = ", ".join(f["name"] for f in required)
            held.append((f"files without {names}", newest))
    if not writes:
        return None
    if held:
        groups: dict[str, list[str]] = {}
        for what, where in held:
            groups.setdefault(where, []).append(what)
        holds = " and ".join(f"{' and '.join(whats)} ({where})" for where, whats in groups.items())
        verdict, words = "breaking", "breaking for its readers"
    else:
        holds = f"the columns of {newest}"
        verdict, words = "additive", "additive (older files read the new columns as null)"
    return f"the sink {path} holds {holds}; this run writes {', '.join(writes)}: {words}", verdict


def check_before_first_write(spark: Any, storage: Storage, doc: dict[str, Any], frame: Any) -> None:
    """Compare the run's output with what its sink holds, before anything is claimed or
    written: raise SchemaRefused (one line) when the policy refuses the change; under
    `allow`, say it in the log and go on.

    A run restarted from a checkpoint that already claimed the sink (a rollback to the version
    that ran before a failed new one) is refused only for columns whose type changed: the
    columns the failed version added are "dropped" again, and that must not block the
    rollback. So is one from a checkpoint that ran before claims were written (it has offsets)."""
    policy = str(doc.get("on-schema-change", "additive"))
    outcome = "written anyway" if policy == "allow" else "not started"
    name = doc["target-table"]
    target = doc["tables"][name]
    new = fields_of(json.loads(frame.schema.json()))
    lines: list[str] = []
    if str(target.get("format", "")).lower() == "kafka":
        problems = kafka_conflicts(new)
        if problems:
            topic = options_of(target).get("topic", name)
            lines.append(
                f"the Kafka sink {topic} takes this run's output only with: {'; '.join(problems)}"
                f": {outcome} (on-schema-change: {policy}; see {DOCS})"
            )
    declared_text = target.get("schema")
    found_sink = file_sink_of(spark, target, options_of(target))
    declared: list[Field] = []
    if declared_text:
        declared = declared_fields(spark, declared_text)
    elif found_sink is not None and found_sink[2] is not None:
        declared = fields_of(json.loads(catalog_table_schema_json(spark, found_sink[2])))
    problems = reader_conflicts(declared, new)
    if problems:
        lines.append(
            f"the table {name} declares columns its readers read, and this run's output "
            f"differs: {'; '.join(problems)}: breaking for its readers, {outcome} "
            f"(on-schema-change: {policy}; see {DOCS})"
        )
    if found_sink is not None:
        fmt, path, _ = found_sink
        history = sink_history(spark, storage, fmt, path)
        if history["unknown"]:
            log(
                f"{history['unknown']}: this run cannot compare its output with them and "
                f"goes on (on-schema-change: {policy})"
            )
        entries = history["history"]
        if entries:
            checkpoint = doc["checkpoint-location"].rstrip("/")
            # A checkpoint that ran before claims were written has offsets and no claim; a copy
            # made to continue from another version's state has them too, and is a new version.
            restart = any(owner == checkpoint for _, _, owner in read_claims(storage, path)) or (
                bool(numbers(storage.names(f"{checkpoint}/offsets")))
                and not continued_unclaimed(storage, checkpoint, path)
            )
            found = compare([e["fields"] for e in entries], new, file_format_name(spark, fmt))
            change = change_line(path, found, entries, restart)
            if change is not None:
                text, verdict = change
                if verdict == "breaking" or policy == "fail":
                    lines.append(f"{text}, {outcome} (on-schema-change: {policy}; see {DOCS})")
                else:
                    log(f"{text} (on-schema-change: {policy})")
    for line in lines:
        if policy != "allow":
            raise SchemaRefused(line)
        log(line)
