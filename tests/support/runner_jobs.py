"""Runtime manifests and runs as the runner's tests drive them on the shared SparkSession: one
job reading JSON people into a parquet sink, its input files, one availableNow run to its end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.query import query_frame, register_sources, start_query, with_metadata
from runner.storage import Storage

SCHEMA = "id BIGINT, name STRING"


def manifest(tmp_path: Path, version: int = 1, **overrides: Any) -> dict[str, Any]:
    doc = {
        "schema-version": 1,
        "name": "people",
        "description": "all people",
        "target-table": "people_out",
        "sql": "SELECT id, name FROM people",
        "code": None,
        "source-tables": ["people"],
        "outputMode": "append",
        "trigger": {"availableNow": True},
        "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
        "tables": {
            "people": {
                "format": "json",
                "options": {"path": str(tmp_path / "in")},
                "schema": SCHEMA,
            },
            "people_out": {"format": "parquet", "options": {"path": str(tmp_path / "out")}},
        },
        "checkpoint-location": str(tmp_path / "ckpt" / str(version)),
        "run-id": "run-1",
        "meta": {
            "query-version": version,
            "query-id": f"id-{version}",
            "query-create-timestamp": "2026-11-22T13:50:00Z",
        },
    }
    doc.update(overrides)
    return doc


def write_input(tmp_path: Path, name: str, ids: range) -> None:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    lines = [json.dumps({"id": i, "name": f"n{i}"}) for i in ids]
    (folder / f"{name}.json").write_text("\n".join(lines) + "\n")


def run_to_end(spark: Any, doc: dict[str, Any]) -> str:
    """Register, build and run one availableNow query to its end, as the runner does; the
    description of the sink it wrote through."""
    register_sources(spark, doc)
    frame = with_metadata(query_frame(spark, doc), doc)
    query = start_query(spark, Storage(spark), doc, frame)
    query.awaitTermination(120)
    assert query.exception() is None
    progress = query.lastProgress
    return progress["sink"]["description"] if progress else ""
