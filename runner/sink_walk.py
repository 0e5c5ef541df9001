"""What a file sink's readers read today, walked without Spark: the runner's claims
(`<sink>/_flink-sql-runner/claims/`) record the schema each checkpoint writes; for parquet, orc
and avro, the footer of the newest file Spark's file-sink log (`_spark_metadata`) committed tells
what was written last, by whoever wrote it, read by the caller's `read` (Spark's reader on the
driver and in the plan's probe, runner/sink_schema.py; the plan's own footer reader,
gather/sink_footer.py). json, csv and text files carry no schema: without a claim recording one,
what they hold is unknown (never "empty"). Pure Python: the deployer imports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import unquote

from .schema_rules import Field, compare


class Storage(Protocol):
    """The two calls of the runner's storage the walk makes (runner/storage.py)."""

    def names(self, location: str) -> list[str]: ...

    def read(self, location: str) -> str | None: ...


#: File formats whose files carry their schema (a parquet or orc footer, an avro header).
SELF_DESCRIBING = ("parquet", "orc", "avro")
#: How many of the newest `_spark_metadata` log files are read for the last file added (a batch
#: may have added none). Spark compacts its log every 10 batches by default
#: (spark.sql.streaming.fileSink.log.compactInterval), and a compact file lists every file
#: still in the sink: the walk stops there.
LOG_WALK_BACK = 12
#: In a file sink's folder: which checkpoint writes from which sink batch id (Spark's readers
#: skip names starting with "_").
CLAIMS_FOLDER = "_flink-sql-runner/claims"


class NotReadHere(Exception):
    """A schema the caller's own reader does not tell (the plan's, without Spark): Spark reads
    the sink instead."""


def claims_folder(path: str) -> str:
    return f"{path.rstrip('/')}/{CLAIMS_FOLDER}"


def claim_bodies(storage: Storage, path: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(order, first sink batch id, body) of every claim in the sink, in order. Claims written
    before schemas were recorded have no `schema` in their body."""
    found = []
    for name in storage.names(claims_folder(path)):
        order, _, rest = name.partition("-")
        if not (order.isdigit() and rest.removesuffix(".json").isdigit()):
            continue
        body = json.loads(storage.read(f"{claims_folder(path)}/{name}") or "{}")
        found.append((int(order), int(rest.removesuffix(".json")), body))
    return sorted(found, key=lambda c: c[:2])


def claim_words(body: dict[str, Any]) -> str:
    return f"v{body.get('query-version')} of job {body.get('job')}, claimed {body.get('claimed')}"


def metadata_log(storage: Storage, path: str) -> list[tuple[int, str]]:
    """(batch id, file name) of Spark's file-sink log files, oldest first."""
    found = []
    for name in storage.names(f"{path.rstrip('/')}/_spark_metadata"):
        stem = name.removesuffix(".compact")
        if stem.isdigit():
            found.append((int(stem), name))
    return sorted(found)


def newest_file(storage: Storage, path: str, logs: list[tuple[int, str]]) -> tuple[int, str] | None:
    """(batch id of the log file that lists it, path) of the last file the sink's log added
    and did not delete since; None if the newest log files add none. The log names a file by
    its URI (`file:///a/sp%20ace/part-0.parquet`): the path given is decoded (`sp ace`), as
    Hadoop reads it. Lines are read from the end, up to the one that answers."""
    deleted: set[str] = set()
    for batch, name in reversed(logs[-LOG_WALK_BACK:]):
        text = storage.read(f"{path.rstrip('/')}/_spark_metadata/{name}") or ""
        for line in reversed(text.splitlines()[1:]):  # the first line is the log's version
            if not line.strip():
                continue
            entry = json.loads(line)
            where = str(entry.get("path") or "")
            if entry.get("action") == "delete":
                deleted.add(where)
            elif entry.get("action") == "add" and where and where not in deleted:
                return batch, unquote(where)
        if name.endswith(".compact"):
            return None
    return None


def has_data(storage: Storage, path: str) -> bool:
    """Whether the folder holds anything Spark's readers read (names not starting with `_` or
    `.`), from one listing of its top level."""
    return any(not name.startswith(("_", ".")) for name in storage.names(path))


def history_of(
    storage: Storage, kind: str, path: str, read: Callable[[str], list[Field]]
) -> dict[str, Any]:
    """`sink_history` of a sink of the format `kind` (a short name), whose files' schema `read`
    gives (a file or the folder `path`); a read that raises NotReadHere ends it with that."""
    claims = claim_bodies(storage, path)
    history = [
        {"fields": body["schema"], "from": claim_words(body)}
        for _, _, body in claims
        if isinstance(body.get("schema"), list)
    ]
    logs = metadata_log(storage, path)
    if kind in SELF_DESCRIBING:
        if logs:
            newest = newest_file(storage, path, logs)
            # A file committed before the newest claim's first batch is an earlier writer's,
            # which the claims already tell (a rolled-back version restarted, not written yet).
            if newest is None or (claims and newest[0] < claims[-1][1]):
                return {"history": history, "unknown": None}
            location, words = newest[1], f"footer of {newest[1]}"
        elif has_data(storage, path):
            location, words = path, f"the {kind} files in {path}"
        else:
            return {"history": history, "unknown": None}
        try:
            fields = read(location)
        except NotReadHere:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's reason, told as unknown
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            why = f"the {kind} sink {path}: the schema of {location} cannot be read: {reason}"
            return {"history": history, "unknown": why}
        if not history or compare([history[-1]["fields"]], fields, kind)["verdict"] != "same":
            history.append({"fields": fields, "from": words})
        return {"history": history, "unknown": None}
    committed = newest_file(storage, path, logs) is not None if logs else has_data(storage, path)
    if not committed:
        return {"history": history, "unknown": None}
    if not history:
        why = f"the {kind} sink {path} holds files written without a recorded schema"
        return {"history": history, "unknown": why}
    first = next(first for _, first, body in claims if isinstance(body.get("schema"), list))
    if logs and first > 0:
        why = (
            f"the {kind} sink {path} holds files written without a recorded schema "
            f"(its batches before {first})"
        )
        return {"history": history, "unknown": why}
    return {"history": history, "unknown": None}
