"""A windowed count through a change that keeps its state, on real Spark and real spark-submit
(docs/concepts/state.md).

A file source of JSON drops, a count per key in 20-second windows, watermarked, written in
append mode to parquet. v1 writes the windows it closed; a window is open when the query
changes.

A filter every record passes (kept) with `on-state-change: continue`: v2 continues from v1's
state (its checkpoint copied once v1 stopped) without reading the files again; the window open
at the change is written once, by v2, with every record of it, before and after. (A change that
does not keep it, refused and then rebuilt, is tests/kafka/test_kafka_state.py's, on a broker.)
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
COUNTS = (
    "SELECT k, window.start AS w, count(*) AS c FROM events{where} "
    "GROUP BY k, window(ts, '{size} seconds')"
)


def test_a_kept_state_continues_from_the_old_version_s_checkpoint(
    workspace: Workspace, spark
) -> None:
    ws = workspace
    drops, out = ws.root / "in", ws.root / "out"
    drops.mkdir()
    ws.write_tables([
        {"name": "events", "format": "json", "options": {"path": str(drops)},
         "schema": "k STRING, v BIGINT, ts TIMESTAMP",
         "watermark": {"column": "ts", "delay": "10 seconds"}},
        {"name": "counts", "format": "parquet", "options": {"path": str(out)}},
    ])  # fmt: skip
    job = {"target-table": "counts", "outputMode": "append"}
    records: list[tuple[str, int]] = []  # (key, second)

    def drop(name: str, seconds: list[int]) -> None:
        lines = []
        for n, second in enumerate(seconds):
            key = "ab"[n % 2]
            records.append((key, second))
            at = (EPOCH + timedelta(seconds=second)).isoformat()
            lines.append(json.dumps({"k": key, "v": n, "ts": at}))
        (drops / f"{name}.json").write_text("\n".join(lines) + "\n")

    def truth(size: int, closed_before: int) -> Counter:
        return Counter(
            (key, second // size * size) for key, second in records
            if second // size * size + size <= closed_before
        )  # fmt: skip

    def written(version: int, at_least: int):
        def check():
            if not (out / "_spark_metadata").exists():
                return None
            rows = spark.read.parquet(str(out)).where(f"__query_version = {version}").collect()
            return rows if len(rows) >= at_least else None

        return check

    def windows(rows) -> Counter:
        return Counter({(r.k, int((r.w - EPOCH.replace(tzinfo=None)).total_seconds())): r.c
                        for r in rows})  # fmt: skip

    # v1: windows [0, 20) closed (the watermark passes 25 s), [20, 40) open
    drop("1", [1, 5, 9, 14, 21, 26, 33, 35])
    ws.write_job("counts", **job, sql=COUNTS.format(where="", size=20))
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    v1 = wait_for(written(1, 2), what="v1's closed windows")
    assert windows(v1) == truth(20, 20)

    # kept: v2 continues from v1's state
    ws.write_job("counts", **job, sql=COUNTS.format(where=" WHERE v >= 0", size=20),
                 **{"on-state-change": "continue"})  # fmt: skip
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "state: continued" in result.stdout, result.stdout  # the plan it printed first
    assert "continued from v1's state (" in result.stdout, result.stdout
    drop("2", [37, 39, 44, 52])  # the open window and the next
    drop("3", [100])  # the watermark passes 90: [20, 40) and [40, 60) close
    v2 = wait_for(written(2, 4), what="v2's windows")
    assert windows(v2) == truth(20, 100) - truth(20, 20)  # every record, none twice
    every = spark.read.parquet(str(out)).collect()
    assert Counter((r.k, r.w) for r in every).most_common(1)[0][1] == 1  # each window once
