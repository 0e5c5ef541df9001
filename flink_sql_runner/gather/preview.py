"""`preview NAME`: the slice of input the stored (running or last) version read in its last
committed batches, read from its checkpoint (`checkpoint_reader.batches_input`: a file source's
files, a Kafka source's offset ranges), or rows the user gives (`--sample-from`), and the old
and the new query run on it by the runner's preview probe (`runner/preview_probe.py`, in a child
process: the deployer never imports pyspark). Only reads: the probe writes no sink, no
checkpoint and no store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoint_reader import (
    CheckpointUnreadable,
    batches_input,
)
from flink_sql_runner.gather.spark_child import run_child_with
from flink_sql_runner.model.preview import PreviewFacts, Slice, SlicePart
from flink_sql_runner.model.runtime import probe_manifest, spark_conf
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.read.secrets import MASK, is_secret, redact_text
from flink_sql_runner.read.sinks import schema_policy
from flink_sql_runner.stores.storage import Storage

#: Spark's offset for a partition's earliest record (startingOffsets JSON).
EARLIEST = -2
#: A preview that takes longer is stopped: nothing is shown of it.
PREVIEW_TIMEOUT = 600.0
#: Asks the preview probe: request -> (answer, why there is none).
AskPreview = Callable[[dict[str, Any]], tuple[dict[str, Any], str | None]]
#: The job's settings its preview's Spark starts with (the jars its sources need, how its
#: storage is reached); its spark.sql.* settings go to each side's session.
SESSION_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.jars.repositories",
                    "spark.jars.excludes", "spark.jars.ivy", "spark.jars.ivySettings")  # fmt: skip


def ask_preview_probe(
    request: dict[str, Any], spark_submit: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """The preview probe's answer; the request's `session` goes to its Spark as its settings."""
    return run_child_with("preview_probe", request, "session", PREVIEW_TIMEOUT, spark_submit)


@dataclass(frozen=True)
class PreviewAsk:
    """What a preview is asked for: how many of the last committed batches, how many rows at
    most (input or output), the key rows are compared by (empty: the sink's own, if any), and
    rows the user gives per source table (`samples`, by table; "" for the only one)."""

    batches: int = 10
    max_rows: int = 100_000
    key: tuple[str, ...] = ()
    samples: dict[str, str] = field(default_factory=dict)


def gather_preview(
    storage: Storage,
    stored: StoredManifest | None,
    desired: StoredManifest,
    ask: PreviewAsk,
    run: AskPreview = ask_preview_probe,
    session: dict[str, str] | None = None,
) -> PreviewFacts:
    """The facts of one job's preview: `desired` (the manifest its new version would start
    with) against `stored` (None: a new job) on the slice of the stored version's last batches,
    or on the rows `ask.samples` gives. `session`: settings the probe's Spark starts with
    beyond the job's own (the connectors its sources need)."""
    old_version = stored.meta.query_version if stored is not None else None
    try:
        new = probe_manifest(desired, "preview")
        # A manifest `migrate` converted names no checkpoint root (slice_of says so): its
        # query runs all the same on rows given, under the new one's root (nothing written).
        old = None
        if stored is not None:
            root = stored.checkpoint_root or desired.job["checkpoint-root"]
            old = probe_manifest(replace(stored, job={**stored.job, "checkpoint-root": root}),
                                 "preview")  # fmt: skip
    except FsrError as exc:  # an environment variable not set here
        why = f"the job's manifest cannot be resolved here: {exc}"
        return PreviewFacts(desired.name, old_version, desired.meta.query_version,
                            Slice(old_version, missing=why))  # fmt: skip
    target = new["tables"].get(new["target-table"]) or {}
    sink_format = str(target.get("format", "")).lower() or None
    key = ask.key or (("key",) if sink_format == "kafka" else ())
    policy, _ = schema_policy(desired.job, desired.tables)
    watermarks = {
        view: (str(t["watermark"]["column"]), str(t["watermark"]["delay"]))
        for view, t in new["tables"].items()
        if view in new["source-tables"] and isinstance(t, dict) and t.get("watermark")
    }
    created = str(new["metadata-columns"]["create-timestamp-column"])
    facts = PreviewFacts(
        desired.name,
        old_version,
        desired.meta.query_version,
        Slice(None),
        policy=policy,
        key=key,
        sink_format=sink_format,
        created_column=created,
        watermarks=watermarks,
    )
    # A new job: its new query alone, on rows given (no old side).
    found = slice_of(storage, stored, old or new, new, ask)
    facts = _with(facts, slice=found)
    if found.missing:
        return facts
    kafka_rows = sum(
        int(end) - max(0, int(((p.start or {}).get(t) or {}).get(part, end)))
        for p in found.parts
        if p.kind == "kafka"
        for t, parts in (p.end or {}).items()
        for part, end in parts.items()
    )
    if kafka_rows > ask.max_rows:
        why = (
            f"the slice's input holds {kafka_rows} Kafka records, more than {ask.max_rows} "
            "(--max-rows): nothing run; ask for fewer --batches or a higher --max-rows"
        )
        return _with(facts, skipped=why)
    try:
        plain, secret = spark_conf(desired, desired.name)
    except FsrError as exc:
        return _with(facts, skipped=f"the preview was not started: {exc}")
    settings = {k: v for k, v in {**plain, **secret}.items()
                if k in SESSION_SETTINGS or k.startswith("spark.hadoop.")}  # fmt: skip
    request = {
        "old": old,
        "new": new,
        "slice": {p.view: p.request() for p in found.parts},
        "max-rows": ask.max_rows,
        "session": {**settings, **(session or {})},
    }
    answer, why = run(request)
    hide = _masker([*secret.values(), *_secret_options(old), *_secret_options(new)])
    if why is not None:
        return _with(facts, skipped=f"the preview probe failed: {hide(why)}")
    return _with(facts, answer=_kafka_retention(_redacted(answer, hide)))


def _secret_options(doc: dict[str, Any] | None) -> list[str]:
    """The values of a runtime manifest's table options that are secrets (read/secrets.py)."""
    tables = (doc or {}).get("tables") or {}
    return [str(v) for t in tables.values() if isinstance(t, dict)
            for k, v in (t.get("options") or {}).items() if is_secret(str(k), str(v))]  # fmt: skip


def _masker(secrets: list[str]) -> Callable[[str], str]:
    """Text with each of `secrets` (resolved values; the longest first) and every secret it
    assigns masked: Spark's reason may quote a setting or an option."""
    known = sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)

    def hide(text: str) -> str:
        for value in known:
            text = text.replace(value, MASK)
        return redact_text(text)

    return hide


def _redacted(answer: dict[str, Any], hide: Callable[[str], str]) -> dict[str, Any]:
    """The probe's answer, its errors (the slice's, each side's) masked."""
    found = dict(answer)
    if found.get("error"):
        found["error"] = hide(str(found["error"]))
    for which in ("old", "new"):
        side = found.get(which)
        if isinstance(side, dict) and side.get("error"):
            found[which] = {**side, "error": hide(str(side["error"]))}
    return found


def _with(facts: PreviewFacts, **changes: Any) -> PreviewFacts:
    return replace(facts, **changes)


#: What Spark's Kafka source says when offsets asked for are no longer on the broker.
_RETENTION_SIGNS = ("OffsetOutOfRange", "out of range", "data loss", "dataloss")


def _from_earliest(
    start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """`start` with each partition `end` has and it lacks (one added to the topic within the
    slice, which the stream read from its earliest offset) at -2, Spark's earliest: a batch
    read given specific offsets must name every partition."""
    filled = {topic: dict(parts) for topic, parts in (start or {}).items()}
    for topic, parts in (end or {}).items():
        for part in parts:
            filled.setdefault(topic, {}).setdefault(part, EARLIEST)
    return filled


def _kafka_retention(answer: dict[str, Any]) -> dict[str, Any]:
    """The probe's answer, an error that is Kafka's retention having dropped the slice's
    offsets said as such."""
    error = str(answer.get("error") or "")
    if error and any(s.lower() in error.lower() for s in _RETENTION_SIGNS):
        why = ("the Kafka topic no longer holds those offsets (its retention dropped them): "
               f"give rows with --sample-from ({error})")  # fmt: skip
        return {**answer, "error": why}
    return answer


def slice_of(
    storage: Storage,
    stored: StoredManifest | None,
    old: dict[str, Any],
    new: dict[str, Any],
    ask: PreviewAsk,
) -> Slice:
    """The input both queries run on: per source view of either, the rows given for it, else
    what the stored version's last `ask.batches` committed batches read of it; or why there is
    none."""
    views = list(dict.fromkeys([*old["source-tables"], *new["source-tables"]]))
    given = _samples(ask.samples, views)
    version = stored.meta.query_version if stored is not None else None
    if all(view in given for view in views):
        return Slice(version, parts=tuple(given[v] for v in views))
    if stored is None:
        lacking = ", ".join(v for v in views if v not in given)
        return Slice(None, missing=f"a new job: no version of it has read any input; give rows "
                     f"of {lacking} with --sample-from")  # fmt: skip
    root = stored.checkpoint_root
    if root is None:
        return Slice(version, missing="the stored version has no checkpoint yet")
    location = f"{root}/{stored.name}/{version}"
    try:
        read = batches_input(storage, location, ask.batches)
    except CheckpointUnreadable as exc:
        return Slice(version, missing=f"its checkpoint cannot be read: {exc}")
    if read.missing:
        return Slice(version, missing=f"version {version}: {read.missing}")
    parts: dict[str, SlicePart] = dict(given)
    sources = tuple((k, _decoded(w) if k == "file" else w) for k, w in read.sources)
    matched = _match(sources, old)
    for index, (kind, what) in enumerate(sources):
        view = matched.get(index)
        if view is None or view in parts:
            continue
        if isinstance(what, str):
            return Slice(version, read.first, read.last, missing=f"{view}: {what}")
        if kind == "file":
            parts[view] = SlicePart(view, "files", files=tuple(what))
        else:
            start, end = what
            parts[view] = SlicePart(view, "kafka", start=_from_earliest(start, end), end=end)
    lacking = [v for v in views if v not in parts]
    if lacking:
        why = (f"no input of {', '.join(lacking)} in version {version}'s checkpoint (a table "
               "the new query reads that the old one did not, or a source it cannot tell "
               "apart); give rows with --sample-from TABLE=PATH")  # fmt: skip
        return Slice(version, read.first, read.last, missing=why)
    return Slice(version, read.first, read.last, tuple(parts[v] for v in views))


def _samples(samples: dict[str, str], views: list[str]) -> dict[str, SlicePart]:
    found = {}
    for table, path in samples.items():
        view = table or (views[0] if len(views) == 1 else "")
        if view not in views:
            raise FsrError(
                f"--sample-from: {table or path}: the job reads "
                f"{', '.join(views) or 'no table'}; name one as TABLE=PATH"
            )
        found[view] = SlicePart(view, "sample", sample=path)
    return found


def _match(sources: tuple[tuple[str, Any], ...], doc: dict[str, Any]) -> dict[int, str]:
    """Which source view each source of the checkpoint is (its offsets' lines follow the
    query's plan, not its tables' order): the only one; else a file source by the folder its
    files are in, a Kafka source by its topics."""
    views = list(doc["source-tables"])
    if len(sources) == 1 and len(views) == 1:
        return {0: views[0]}
    found: dict[int, str] = {}
    for index, (kind, what) in enumerate(sources):
        fitting = []
        for view in views:
            table = doc["tables"][view]
            fmt = str(table.get("format", "")).lower()
            options = {str(k).lower(): str(v) for k, v in (table.get("options") or {}).items()}
            if kind == "file" and fmt in FILE_FORMATS and not isinstance(what, str):
                folder = _local(options.get("path", "")).rstrip("/")
                if folder and all(_local(f).startswith(f"{folder}/") for f in what):
                    fitting.append(view)
            elif kind == "kafka" and fmt == "kafka":
                subscribed = options.get("subscribe")
                topics = {t.strip() for t in subscribed.split(",")} if subscribed else None
                ranges = set(what[1]) if not isinstance(what, str) else set()
                if topics is None or ranges <= topics:
                    fitting.append(view)
            elif kind not in ("file", "kafka") and fmt not in FILE_FORMATS and fmt != "kafka":
                fitting.append(view)
        if len(fitting) == 1:
            found[index] = fitting[0]
    return found


def _decoded(files: Any) -> Any:
    """A file source's files as their names (its log holds them as URIs: a space as %20,
    non-ASCII as UTF-8 percent-encoded); Spark reads a name, not a URI. Why there are none
    (text) as it is."""
    return files if isinstance(files, str) else tuple(unquote(f) for f in files)


def _local(path: str) -> str:
    """A path without its `file:` scheme (`file:///in/a.json` and `/in/a.json` alike)."""
    for scheme in ("file://", "file:"):
        if path.startswith(scheme):
            return path[len(scheme) :]
    return path
