"""`inspect` for people (a short block per section) and for machines (JSON): one version of a
job, its checkpoint, the settings it pins against the stored manifest's, its runs."""

from __future__ import annotations

import json
from typing import Any

from flink_sql_runner.decide.changes import CHECKPOINT_VALUE_RULE, property_rule
from flink_sql_runner.model.checkpoint_report import (
    CheckpointReport,
    Inspection,
    SourceProgress,
    StateReport,
)
from flink_sql_runner.model.json_values import datetime_of_ms, json_status
from flink_sql_runner.model.sizes import human_size

#: Files of a file source's last entry shown in text (all in JSON).
SHOWN_FILES = 3


def pin_agreement(inspection: Inspection) -> list[dict[str, Any]]:
    """Per setting the checkpoint pins: its value there, the stored manifest's (None: not
    set), and whether they agree as a deploy judges it (`agrees`: the manifest sets the
    checkpoint's own value; None when it does not set it: the checkpoint's value holds)."""
    report = inspection.report
    if report is None or report.pinned is None:
        return []
    props = inspection.manifest.job.get("sparkProperties") or {}
    rows = []
    for key, kept in sorted(report.pinned.items()):
        mine = props.get(key)
        agrees = None
        if mine is not None:
            agrees = property_rule(key, None, report.pinned, mine) == CHECKPOINT_VALUE_RULE
        manifest = None if mine is None else str(mine)
        rows.append({"setting": key, "checkpoint": kept, "manifest": manifest, "agrees": agrees})
    return rows


def inspect_json(inspection: Inspection) -> str:
    report = inspection.report
    doc: dict[str, Any] = {
        "name": inspection.name,
        "version": inspection.version,
        "stored-version": inspection.manifest.meta.query_version,
        "spark-version": inspection.spark_version,
        "checkpoint": report.to_dict() if report else {"location": inspection.location},
        "pins": pin_agreement(inspection),
        "runs": [r.to_dict() for r in inspection.runs],
        "last-status": json_status(inspection.status),
        "notes": list(inspection.notes),
    }
    if inspection.state is not None:
        doc["state"] = inspection.state.to_dict()
    if report is None:
        doc["checkpoint"]["exists"] = False
    return json.dumps(doc, indent=2)


def utc(ms: int | None) -> str:
    """A time of Spark's (milliseconds since 1970) for people; one no date can show (outside
    years 1 to 9999) as the number, with a note."""
    if ms is None:
        return "-"
    at = datetime_of_ms(ms)
    if at is None:
        return f"{ms} (milliseconds since 1970: outside years 1 to 9999)"
    return f"{at.year:04d}-{at:%m-%dT%H:%M:%S}Z"


def inspect_text(inspection: Inspection) -> str:
    stored = inspection.manifest.meta.query_version
    which = "the stored version" if inspection.version == stored else f"stored: v{stored}"
    out = [f"{inspection.name} v{inspection.version} ({which})"]
    report = inspection.report
    if inspection.location is None:
        out.append("  checkpoint  none: converted by `migrate`, not deployed by this tool yet")
        out.append(f"  no checkpoint yet: the next deploy starts it clean, as v{stored + 1}")
    elif report is None:
        out.append(f"  checkpoint  {inspection.location}")
        out.append("  no checkpoint yet: no run of this version has planned a batch")
    else:
        out.append(f"  checkpoint  {inspection.location}")
        out += _checkpoint_lines(report)
        if inspection.state is not None:
            out += _state_lines(inspection.state)
        out += _pin_lines(pin_agreement(inspection))
    out += _run_lines(inspection)
    out += [f"  note: {note}" for note in inspection.notes]
    return "\n".join(out)


def _checkpoint_lines(report: CheckpointReport) -> list[str]:
    out = [f"  query id    {report.query_id or '- (no metadata file)'}"]
    if report.continued_from:
        out.append(f"  continued   from the state of {report.continued_from}, copied: its batches "
                   "up to the copy are that version's")  # fmt: skip
    if report.committed:
        count = len(report.committed)
        span = f"{report.first_committed} to {report.last_committed}"
        when = f"planned {utc(report.first_time_ms)} to {utc(report.last_time_ms)}"
        out.append(f"  batches     {span} committed ({count} kept), {when}")
    else:
        out.append("  batches     none committed")
    if report.pending is not None:
        out.append(f"  pending     batch {report.pending} planned, not committed: "
                   "a restart runs it again with the same offsets")  # fmt: skip
    if report.watermark_ms:
        out.append(f"  watermark   {utc(report.watermark_ms)} (the next batch's)")
    else:
        out.append("  watermark   none")
    for source in report.sources:
        out += _source_lines(source)
    for op in report.operators:
        name = op.name or "(its name: Spark 4.0+ writes it)"
        schema = f", state schema {op.schema_version}" if op.schema_version else ""
        out.append(f"  state       operator {op.id} {name}, {op.partitions} partitions{schema}")
    return out


def _offset(source: SourceProgress, offset: Any) -> str:
    if offset is None:
        return "none"
    if source.kind == "kafka":
        return " ".join(
            f"{topic}[{','.join(f'{p}:{o}' for p, o in sorted(parts.items(), key=_partition))}]"
            for topic, parts in sorted(offset.items())
        )
    if source.kind == "file":
        return f"log entry {offset['logOffset']}"
    return json.dumps(offset)


def _partition(item: tuple[str, Any]) -> int:
    return int(item[0])


def _source_lines(source: SourceProgress) -> list[str]:
    committed = _offset(source, source.committed)
    head = f"  source {source.index}    {source.kind}: committed {committed}"
    if source.kind == "file" and source.files_read is not None:
        head += f", {source.files_read} files read"
    out = [head]
    if source.last_files:
        shown = ", ".join(source.last_files[:SHOWN_FILES])
        more = len(source.last_files) - SHOWN_FILES
        out.append(f"              last read: {shown}" + (f" and {more} more" if more > 0 else ""))
    if source.next is not None:
        out.append(f"              next batch reads to {_offset(source, source.next)}")
    return out


def _pin_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["  pinned      unknown (no conf map in the offsets file)"]
    set_here = [r for r in rows if r["manifest"] is not None]
    out = [f"  pinned      {len(rows)} settings; the stored manifest sets {len(set_here)}"]
    for row in set_here:
        if row["agrees"]:
            out.append(f"              {row['setting']} = {row['checkpoint']} (agrees)")
        else:
            setting, mine, kept = row["setting"], row["manifest"], row["checkpoint"]
            out.append(f"              {setting}: the manifest says {mine}, the checkpoint "
                       f"{kept} (Spark runs with {kept})")  # fmt: skip
    return out


def _run_lines(inspection: Inspection) -> list[str]:
    out = []
    for run in inspection.runs:
        text = f"  run         {run.run_id or '-'}"
        if run.started:
            text += f" started {run.started}"
        if run.first_batch is not None:
            text += f", first batch {run.first_batch}"
        if run.up:
            text += ", up now"
        elif run.ended:
            text += f", {run.ended}"
        out.append(text)
    status = inspection.status
    if status and not any(r.run_id == status.get("run-id") for r in inspection.runs):
        out.append(f"  last run    {status.get('run-id')} {status.get('state')} at "
                   f"{status.get('updated')}, batch {status.get('batch-id')}")  # fmt: skip
    if inspection.spark_version:
        out.append(f"  spark       {inspection.spark_version}")
    return out


def _state_lines(state: StateReport) -> list[str]:
    out = []
    if state.unavailable:
        out.append(f"  state rows  not read: {state.unavailable}")
    for store in state.stores:
        head = f"  state rows  operator {store.operator} {store.name or ''} ({store.store})"
        if store.error is not None:
            out.append(f"{head}: not read: {store.error}")
            continue
        total = sum(store.rows.values())
        per = " ".join(f"{p}:{n}" for p, n in store.rows.items())
        out.append(f"{head}: {total} row{'s' if total != 1 else ''} at batch "
                   f"{store.max_batch} (per partition {per})")  # fmt: skip
        for sample in store.sample:
            key, value = json.dumps(sample.get("key")), json.dumps(sample.get("value"))
            out.append(f"              {key} -> {value} (partition {sample.get('partition')})")
    for op, parts in state.disk.items():
        sizes = " ".join(f"{p}:{human_size(n)}" for p, n in parts.items())
        out.append(f"  state disk  operator {op}: {human_size(sum(parts.values()))} "
                   f"(per partition {sizes})")  # fmt: skip
    return out
