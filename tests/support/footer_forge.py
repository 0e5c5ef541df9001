"""Forged sinks for the plan's own read of a file sink (gather/sink_footer.py) against the
runner's read with Spark: sinks with a hand-made `_spark_metadata` log, and the key-value list
of a real (Spark-written) parquet footer rewritten. From the hostile review of issue 57's third
part."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

from runner.parquet_footer import SPARK_SCHEMA_KEY, _key_value, _Reader
from tests.support.parquet_tail import key_value, varint


def spark_file(spark: Any, frame: Any, where: Path) -> bytes:
    """The bytes of the one parquet file Spark writes for `frame`."""
    frame.coalesce(1).write.mode("overwrite").parquet(str(where))
    (part,) = sorted(where.glob("part-*.parquet"))
    return part.read_bytes()


def split(data: bytes) -> tuple[bytes, bytes]:
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[: len(data) - 8 - length], data[len(data) - 8 - length : -8]


def _kv_span(footer: bytes) -> tuple[int, int]:
    reader = _Reader(footer)
    for field, kind in reader.fields():
        start = reader.at
        reader.skip(kind)
        if field == 5:
            return start, reader.at
    raise AssertionError("no key-value list")


def pairs_of(data: bytes) -> list[tuple[str, str | None]]:
    _, footer = split(data)
    start, _ = _kv_span(footer)
    reader = _Reader(footer)
    reader.at = start
    _, size = reader.collection()
    return [_key_value(reader) for _ in range(size)]


def with_pairs(data: bytes, pairs: list[tuple[str, str | None]]) -> bytes:
    """The file with its footer's key-value list replaced by `pairs` (all else kept)."""
    body, footer = split(data)
    start, end = _kv_span(footer)
    size = len(pairs)
    header = bytes([(size << 4) | 0x0C]) if size < 15 else bytes([0xFC]) + varint(size)
    items = b"".join(key_value(k, v) for k, v in pairs)
    footer = footer[:start] + header + items + footer[end:]
    return body + footer + struct.pack("<I", len(footer)) + b"PAR1"


def with_spark_schema(data: bytes, schema: Any) -> bytes:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return with_pairs(data, [(k, text if k == SPARK_SCHEMA_KEY else v) for k, v in pairs_of(data)])


def spark_schema(data: bytes) -> dict[str, Any]:
    return json.loads(dict(pairs_of(data))[SPARK_SCHEMA_KEY])


def sink(
    root: Path, data: bytes, name: str = "part-0.parquet", entry_path: str | None = None
) -> str:
    """A sink folder whose Spark log (batch 0) committed one file holding `data`."""
    out = root
    if out.exists():
        shutil.rmtree(out)
    (out / "_spark_metadata").mkdir(parents=True)
    (out / name).write_bytes(data)
    entry = {
        "path": entry_path or f"file:{out}/{name}",
        "size": len(data),
        "isDir": False,
        "modificationTime": 0,
        "blockReplication": 1,
        "blockSize": 1,
        "action": "add",
    }
    (out / "_spark_metadata" / "0").write_text("v1\n" + json.dumps(entry) + "\n")
    return str(out)


def both(spark: Any, path: str, fmt: str = "parquet") -> tuple[Any, Any]:
    """(the plan's own read, the runner's Spark read) of the sink at `path`."""
    from flink_sql_runner.gather.sink_footer import sink_history_here
    from flink_sql_runner.stores.storage import FileStorage
    from runner.sink_schema import sink_history
    from runner.storage import Storage

    here = sink_history_here(FileStorage(), fmt, path)
    try:
        there = sink_history(spark, Storage(spark), fmt, path)
    except Exception as exc:  # noqa: BLE001 - the probe reports it as {"error"}
        there = {"error": str(exc).splitlines()[0]}
    return here, there


def short(answer: Any) -> Any:
    if not isinstance(answer, dict) or "history" not in answer:
        return answer
    return {
        "fields": [[(f["name"], f["type"]) for f in e["fields"]] for e in answer["history"]],
        "unknown": (answer["unknown"] or "")[:160] or None,
    }
