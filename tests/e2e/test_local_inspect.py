"""`inspect` of a stateful job deployed on local Spark with real spark-submit, across a restart:
a count per minute window with a 10 s watermark over files the test writes. What `inspect`
reports (batches, the file source's files, the watermark, the runs and where the restart
resumed, the state's rows and keys) is what the test knows the job was given.

Beside it, in the first deploy, a filter over the same orders (`price > 9000`), `preview`ed
while it runs with its threshold lowered to 5000, a column added and price's type changed: from
the file its running version read, exactly the rows the new filter adds, none lost, the
contract's refusal, and nothing written; then stopped."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyspark
import pytest

from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.stores.storage import FileStorage
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

#: Minute 00:00 has 3 orders and 00:01 2; the watermark then is 00:01:10 less 10 s, which
#: closes 00:00's window. The second file has 4 orders in 00:05: its watermark (00:04:53)
#: closes 00:01's, so the state keeps 00:05's window alone, with 4 rows.
FIRST = ["2026-01-01T00:00:01", "2026-01-01T00:00:02", "2026-01-01T00:00:30",
         "2026-01-01T00:01:05", "2026-01-01T00:01:10"]  # fmt: skip
SECOND = [f"2026-01-01T00:05:0{i}" for i in range(4)]
#: The orders' prices, in the order of FIRST and SECOND.
PRICES = {"first": [9500.0, 6000.0, 100.0, 9100.0, 7000.5],
          "second": [8000.0, 12000.0, 4000.0, 5000.5]}  # fmt: skip


def epoch_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def drop(folder: Path, name: str, times: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    prices = PRICES[name]
    rows = [json.dumps({"order_id": i, "price": prices[i], "order_time": t})
            for i, t in enumerate(times)]  # fmt: skip
    (folder / f"{name}.json").write_text("\n".join(rows) + "\n")


def inspect_json(ws: Workspace, *args: str) -> dict[str, Any]:
    result = ws.cli("inspect", "counts", "--output", "json", *args, paths=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_inspect_a_windowed_count_across_a_restart(workspace: Workspace) -> None:
    ws = workspace
    source = ws.root / "in"
    ws.write_tables([
        {"name": "orders", "format": "json", "options": {"path": str(source)},
         "schema": "order_id BIGINT, price DOUBLE, order_time TIMESTAMP",
         "watermark": {"column": "order_time", "delay": "10 seconds"}},
        {"name": "counts_out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        {"name": "expensive_out", "format": "parquet",
         "options": {"path": str(ws.root / "expensive")}},
    ])  # fmt: skip
    sql = ("SELECT window.start AS minute, count(*) AS orders FROM orders "
           "GROUP BY window(order_time, '1 minute')")  # fmt: skip
    ws.write_job("counts", **{"target-table": "counts_out", "sql": sql})
    expensive = {"target-table": "expensive_out",
                 "sql": "SELECT order_id, price FROM orders WHERE price > 9000"}  # fmt: skip
    ws.write_job("expensive", **expensive)
    checkpoint = ws.state / "checkpoints" / "counts" / "1"

    def reached(log_offset: int, watermark: str) -> Any:
        def check() -> Any:
            report = read_checkpoint(FileStorage(), str(checkpoint))
            if report is None or not report.sources:
                return None
            done = report.sources[0].committed == {"logOffset": log_offset}
            return report if done and report.watermark_ms == epoch_ms(watermark) else None

        return check

    drop(source, "first", FIRST)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    before = wait_for(reached(0, "2026-01-01T00:01:00"), timeout=120, what="the first file")
    previewed_a_lower_threshold(ws, expensive)  # and stopped: one driver less from here on
    assert ws.cli("stop", "counts", paths=False).returncode == 0
    stopped = read_checkpoint(FileStorage(), str(checkpoint))
    assert stopped is not None and stopped.last_committed is not None
    assert stopped.last_committed >= before.last_committed

    drop(source, "second", SECOND)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    wait_for(reached(1, "2026-01-01T00:04:53"), timeout=120, what="the second file")

    doc = inspect_json(ws, "--state", "--sample-keys", "5")
    assert (doc["name"], doc["version"], doc["stored-version"]) == ("counts", 1, 1)
    batches = doc["checkpoint"]["batches"]
    assert batches["first"] == 0 and batches["last"] > stopped.last_committed
    (source_doc,) = doc["checkpoint"]["sources"]
    assert source_doc["kind"] == "file" and source_doc["committed"] == {"logOffset": 1}
    assert source_doc["files-read"] == 2
    assert source_doc["last-files"] == [f"file://{source}/second.json"]
    assert doc["checkpoint"]["watermark"] == "2026-01-01T00:04:53.000Z"
    assert doc["checkpoint"]["operators"][0]["partitions"] == 2  # the template's shuffle
    pins = {p["setting"]: p for p in doc["pins"]}
    assert pins["spark.sql.shuffle.partitions"] == {"setting": "spark.sql.shuffle.partitions",
        "checkpoint": "2", "manifest": "2", "agrees": True}  # fmt: skip
    runs = doc["runs"]
    assert [r["first-batch"] for r in runs] == [0, stopped.last_committed + 1], (
        "the restart resumed right after the last batch its checkpoint committed"
    )
    assert [(r["ended"], r["up"]) for r in runs] == [("stopped", False), (None, True)]

    state = doc["state"]
    if int(pyspark.__version__.split(".")[0]) < 4:
        assert "Spark 4.0" in state["unavailable"]
        return
    assert state["unavailable"] is None, state["unavailable"]
    (store,) = state["stores"]
    assert (store["operator"], store["name"], store["store"]) == (0, "stateStoreSave", "default")
    assert sum(store["rows"].values()) == 1
    assert [(s["key"], s["value"]) for s in store["sample"]] == [(
        {"window": {"start": "2026-01-01T00:05:00.000Z", "end": "2026-01-01T00:06:00.000Z"}},
        {"count": 4},
    )]  # fmt: skip
    assert set(state["bytes-on-disk"]["0"]) == {"0", "1"}


def listing(*folders: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for f in folders for p in f.rglob("*") if p.is_file())


def previewed_a_lower_threshold(ws: Workspace, job: dict[str, Any]) -> None:
    """`expensive` (running v1, `price > 9000`) previewed with `price > 5000`, price as
    STRING and order_time added, on the file its v1 read: the rows only the new query writes
    are exactly those the lower threshold adds, none are lost, the contract refuses the type
    change, and no sink, checkpoint or store changed. Then stopped (its file says so too)."""
    checkpoint = ws.state / "checkpoints" / "expensive" / "1"

    def read_first() -> Any:
        report = read_checkpoint(FileStorage(), str(checkpoint))
        done = report is not None and report.sources and report.sources[0].committed
        return report if done == {"logOffset": 0} else None

    wait_for(read_first, timeout=120, what="expensive's v1 reading the first file")
    untouched = [ws.root / "expensive", checkpoint, ws.state / "manifests"]
    before = listing(*untouched)
    sql = ("SELECT order_id, CAST(price AS STRING) AS price, order_time FROM orders "
           "WHERE price > 5000")  # fmt: skip
    ws.write_job("expensive", **{**job, "sql": sql})
    result = ws.cli("preview", "expensive", "--output", "json", "--rows", "10")
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = json.loads(result.stdout)["previews"]
    assert (found["old-version"], found["new-version"]) == (1, 2)
    assert found["slice"]["first-batch"] == 0 and found["rows-in"] == {"orders": 5}
    (part,) = found["slice"]["parts"]
    assert part["files"] == [f"file://{ws.root}/in/first.json"]
    added = sorted((i, str(p)) for i, p in enumerate(PRICES["first"]) if 5000 < p <= 9000)
    shown = sorted((r["order_id"], r["price"]) for r in found["only-new"]["sample"])
    assert found["only-new"]["rows"] == len(added) == 2 and shown == added
    assert found["only-old"] == {"rows": 0, "sample": []}, "none lost"
    schema = found["schema"]
    assert schema["verdict"] == "breaking" and schema["refused"]
    assert schema["retyped"] == [{"name": "price", "from": "double", "to": "string"}]
    assert [f["name"] for f in schema["added"]] == ["order_time"]
    new_version = [f for f in found["new"]["fields"] if f["name"] == "__query_version"]
    assert new_version and found["new"]["rows-out"] == 4 and found["old"]["rows-out"] == 2
    assert listing(*untouched) == before, "a preview writes nothing"
    ws.write_job("expensive", **{**job, "desired-state": "stopped"})
    assert ws.cli("stop", "expensive", paths=False).returncode == 0
