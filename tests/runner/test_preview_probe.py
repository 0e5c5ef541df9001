"""The preview probe's Spark work (runner/preview_probe.py), in-process on the shared
SparkSession: the old and the new query as batch queries on exactly the files of a slice, a
windowed count named stateful, rows past --max-rows, and nothing written anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.preview_probe import main, probe
from tests.support.runner_jobs import manifest

pytestmark = pytest.mark.spark

ORDERS = "order_id BIGINT, price DOUBLE, order_time TIMESTAMP"
#: Three drops of orders; the slice is the first two (a third the version has not read yet).
DROPS = {
    "a": [(1, 9500.0, "00:00:01"), (2, 6000.0, "00:00:30"), (3, 100.0, "00:01:05")],
    "b": [(4, 9100.0, "00:01:10"), (5, 7000.5, "00:02:00")],
    "c": [(6, 8000.0, "00:03:00")],
}


def drop(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in DROPS.items():
        lines = [json.dumps({"order_id": i, "price": p, "order_time": f"2026-01-01T{t}"})
                 for i, p, t in rows]  # fmt: skip
        (folder / f"{name}.json").write_text("\n".join(lines) + "\n")
    return [f"file://{folder}/{n}.json" for n in ("a", "b")]


def job(tmp: Path, sql: str, version: int) -> dict[str, Any]:
    doc = manifest(tmp, version, sql=sql, **{"source-tables": ["orders"]})
    doc["tables"] = {
        "orders": {"format": "json", "options": {"path": str(tmp / "in"),
                   "maxFilesPerTrigger": "1"}, "schema": ORDERS,
                   "watermark": {"column": "order_time", "delay": "10 seconds"}},
        "people_out": doc["tables"]["people_out"],
    }  # fmt: skip
    doc["conf"] = {"spark.sql.shuffle.partitions": "2"}
    return doc


def test_both_queries_run_on_exactly_the_slices_files(spark, tmp_path: Path) -> None:
    files = drop(tmp_path / "in")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    old = job(tmp_path, "SELECT order_id, price FROM orders WHERE price > 9000", 1)
    new = job(tmp_path, "SELECT order_id, price, order_time FROM orders WHERE price > 5000", 2)
    request = {"old": old, "new": new, "slice": {"orders": {"files": files}}, "max-rows": 100}
    answer = probe(spark, request)
    assert answer["inputs"] == {"orders": 5}, "the third drop is not in the slice"
    assert sorted(r[0] for r in answer["old"]["rows"]) == [1, 4]
    assert sorted(r[0] for r in answer["new"]["rows"]) == [1, 2, 4, 5]
    names = [f["name"] for f in answer["new"]["fields"]]
    assert names[:3] == ["order_id", "price", "order_time"]
    assert names[3:] == ["__create_timestamp", "__query_name", "__query_description",
                         "__query_id", "__query_version", "__query_create_timestamp"]  # fmt: skip
    row = sorted(answer["new"]["rows"])[0]
    assert row[2] == "2026-01-01T00:00:01" and row[7] == 2 and row[6] == "id-2"
    assert answer["old"]["stateful"] == [] and answer["new"]["stateful"] == []
    json.dumps(answer)  # every value is JSON
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before, (
        "nothing written: no sink, no checkpoint"
    )


def test_a_windowed_count_runs_as_a_batch_query_and_is_named_stateful(spark, tmp_path) -> None:
    files = drop(tmp_path / "in")
    sql = ("SELECT window.start AS minute, count(*) AS orders FROM orders "
           "GROUP BY window(order_time, '1 minute')")  # fmt: skip
    cheap = sql.replace("FROM orders", "FROM orders WHERE price < 9000")
    request = {"old": job(tmp_path, sql, 1), "new": job(tmp_path, cheap, 2),
               "slice": {"orders": {"files": files}}, "max-rows": 100}  # fmt: skip
    answer = probe(spark, request)
    assert answer["old"]["stateful"] == ["Aggregate"]
    old = sorted((r[0], r[1]) for r in answer["old"]["rows"])
    assert old == [
        ("2026-01-01T00:00:00", 2),
        ("2026-01-01T00:01:00", 2),
        ("2026-01-01T00:02:00", 1),
    ], "the last window, open in the stream, counted"
    new = sorted((r[0], r[1]) for r in answer["new"]["rows"])
    assert new == [("2026-01-01T00:00:00", 1), ("2026-01-01T00:01:00", 1),
                   ("2026-01-01T00:02:00", 1)]  # fmt: skip


def test_past_max_rows_and_an_error_are_answers(spark, tmp_path: Path) -> None:
    files = drop(tmp_path / "in")
    old = job(tmp_path, "SELECT * FROM orders", 1)
    request = {"old": old, "new": old, "slice": {"orders": {"files": files}}, "max-rows": 4}
    assert probe(spark, request)["too-many"] == {"where": "the slice's input", "rows": 5,
                                                 "limit": 4}  # fmt: skip
    wrong = job(tmp_path, "SELECT nope FROM orders", 2)
    answer = probe(spark, {**request, "new": wrong, "max-rows": 10})
    assert "nope" in answer["new"]["error"] and len(answer["old"]["rows"]) == 5
    sample = tmp_path / "given.json"
    sample.write_text('{"order_id": 9, "price": 5500.0}\n')
    given = probe(spark, {**request, "slice": {"orders": {"sample": str(sample)}}})
    assert given["inputs"] == {"orders": 1} and given["old"]["rows"][0][:2] == [9, 5500.0]


def test_a_request_it_cannot_read_is_refused_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "in.json"
    bad.write_text('{"old": {}}')
    assert main(["--input", str(bad), "--output", str(tmp_path / "out.json")]) == 2


def test_each_side_runs_with_its_own_spark_sql_settings(spark, tmp_path: Path) -> None:
    """Issue 54, finding 9: the job's ANSI setting and time zone apply (a JSON time is read in
    the session's zone, as the job reads it)."""
    files = drop(tmp_path / "in")
    sql = ("SELECT order_id, CAST(CONCAT(CAST(order_id AS STRING), 'x') AS INT) AS bad, "
           "unix_timestamp(order_time) AS epoch FROM orders")  # fmt: skip
    old = job(tmp_path, sql, 1)
    new = job(tmp_path, sql, 2)
    new["conf"] = {"spark.sql.ansi.enabled": "false",
                   "spark.sql.session.timeZone": "America/New_York"}  # fmt: skip
    old["conf"] = {"spark.sql.ansi.enabled": "true"}
    answer = probe(spark, {"old": old, "new": new, "slice": {"orders": {"files": files}},
                           "max-rows": 100})  # fmt: skip
    assert "CAST_INVALID_INPUT" in answer["old"]["error"]
    first = sorted(answer["new"]["rows"])[0]
    assert first[:3] == [1, None, 1767225601 + 5 * 3600], "NULL, and 00:00:01 in New York"


def test_a_code_job_runs_on_the_slice(spark, tmp_path: Path) -> None:
    """Finding 10: a job of `code` (its frame read from the views) is previewed too."""
    files = drop(tmp_path / "in")
    code = ('execution_output = spark.table("orders").where(F.col("price") > 9000)'
            '.select("order_id")')  # fmt: skip
    new = job(tmp_path, "", 2)
    new["sql"], new["code"] = None, code
    old = job(tmp_path, "SELECT order_id FROM orders WHERE price > 5000", 1)
    answer = probe(spark, {"old": old, "new": new, "slice": {"orders": {"files": files}},
                           "max-rows": 100})  # fmt: skip
    assert "error" not in answer["new"], answer["new"]
    assert sorted(r[0] for r in answer["new"]["rows"]) == [1, 4]


def test_partition_columns_come_from_the_tables_path(spark, tmp_path: Path) -> None:
    """Finding 11: files under `dt=...` folders read with the table's path as their base."""
    folder = tmp_path / "in" / "dt=2026-01-01"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"order_id": 1, "price": 1.0}\n{"order_id": 2, "price": 2.0}\n')
    # A name with glob characters is that file, as the stream reads it, not a pattern.
    (folder / "b[1].json").write_text('{"order_id": 3, "price": 1.0}\n')
    (folder / "b1.json").write_text('{"order_id": 4, "price": 1.0}\n')
    doc = job(tmp_path, "SELECT order_id, dt FROM orders", 1)
    doc["tables"]["orders"]["schema"] = "order_id BIGINT, price DOUBLE, dt DATE"
    doc["tables"]["orders"].pop("watermark")
    files = [f"file://{folder}/a.json", f"file://{folder}/b[1].json"]
    request = {"old": doc, "new": doc, "max-rows": 100, "slice": {"orders": {"files": files}}}
    answer = probe(spark, request)
    assert sorted(r[:2] for r in answer["new"]["rows"]) == [
        [1, "2026-01-01"], [2, "2026-01-01"], [3, "2026-01-01"]]  # fmt: skip


def test_max_rows_stops_reading_at_the_limit(spark, tmp_path: Path) -> None:
    """Finding 13: past --max-rows nothing more is read: a file whose lines after the limit
    would fail to parse (FAILFAST) is answered as too many, not as its error."""
    folder = tmp_path / "in"
    folder.mkdir()
    good = [json.dumps({"order_id": i, "price": 1.0}) for i in range(20)]
    (folder / "big.json").write_text("\n".join(good + ["not json"] * 60_000) + "\n")
    doc = job(tmp_path, "SELECT * FROM orders", 1)
    doc["tables"]["orders"]["options"]["mode"] = "FAILFAST"
    request = {"old": doc, "new": doc, "max-rows": 10,
               "slice": {"orders": {"files": [f"file://{folder}/big.json"]}}}  # fmt: skip
    answer = probe(spark, request)
    assert answer.get("too-many") == {"where": "the slice's input", "rows": 11, "limit": 10}


def test_a_preview_matches_what_the_job_itself_writes(spark, tmp_path: Path) -> None:
    """Issue 54's "done when": a job with ANSI off on a partitioned file source whose files'
    names Spark encodes runs as the runner runs it (its session with the job's settings); then
    its preview against a code job doing the same, from the checkpoint the run left, on the
    deployer's own slice, shows exactly the rows the job wrote, on both sides; and the code job,
    run itself, writes them too."""
    from flink_sql_runner.decide.preview import judge_preview
    from flink_sql_runner.gather.preview import PreviewAsk, gather_preview
    from flink_sql_runner.model.runtime import probe_manifest
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.stores.storage import FileStorage
    from tests.support.runner_jobs import run_to_end

    for dt, name, rows in (("2026-01-01", "a b é", [(1, "7"), (2, "x")]),
                           ("2026-01-02", "c%d", [(3, "")])):  # fmt: skip
        folder = tmp_path / "in" / f"dt={dt}"
        folder.mkdir(parents=True)
        lines = [json.dumps({"order_id": i, "note": n}) for i, n in rows]
        (folder / f"{name}.json").write_text("\n".join(lines) + "\n")
    tables = {"orders": {"format": "json", "options": {"path": str(tmp_path / "in")},
                         "schema": "order_id BIGINT, note STRING, dt DATE"},
              "out": {"format": "parquet", "options": {"path": str(tmp_path / "out")}}}  # fmt: skip
    spec = {"name": "tagged", "target-table": "out", "checkpoint-root": str(tmp_path / "ck"),
            "sql": "SELECT order_id, CAST(note AS INT) AS n, dt FROM orders",
            "trigger": {"availableNow": True},
            "sparkProperties": {"spark.sql.ansi.enabled": "false"}}  # fmt: skip
    stored = StoredManifest(spec, tables, Meta(1, "q1", "2026-11-29T00:00:00Z"))
    doc = probe_manifest(stored, "run-1")
    session = spark.newSession()  # the run's, with the job's settings as spark-submit gives them
    session.conf.set("spark.sql.ansi.enabled", "false")
    run_to_end(session, doc)
    wrote = sorted(
        [r.order_id, r.n, r.dt.isoformat()]
        for r in spark.read.parquet(str(tmp_path / "out")).collect()
    )
    assert wrote == [[1, 7, "2026-01-01"], [2, None, "2026-01-01"], [3, None, "2026-01-02"]]
    code = ('execution_output = spark.table("orders").select("order_id", '
            'F.col("note").cast("int").alias("n"), "dt")')  # fmt: skip
    desired = StoredManifest({**{k: v for k, v in spec.items() if k != "sql"}, "code": code,
                              "source-tables": ["orders"]}, tables,
                             Meta(2, "q2", "2026-11-29T01:00:00Z"))  # fmt: skip

    def run(request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        return probe(spark, {k: v for k, v in request.items() if k != "session"}), None

    facts = gather_preview(FileStorage(), stored, desired, PreviewAsk(), run)
    for side in ("old", "new"):
        assert sorted(r[:3] for r in facts.answer[side]["rows"]) == wrote, side
    code_run = probe_manifest(desired, "run-2")  # the code job itself, into a sink of its own
    code_run["tables"]["out"]["options"]["path"] = str(tmp_path / "out-code")
    run_to_end(session, code_run)
    assert wrote == sorted(
        [r.order_id, r.n, r.dt.isoformat()]
        for r in spark.read.parquet(str(tmp_path / "out-code")).collect()
    )
    found = judge_preview(facts, 5)
    assert (found.only_new, found.only_old, found.verdict) == (0, 0, "same")


def test_rows_keep_their_file_and_stateful_operators_are_named(spark, tmp_path: Path) -> None:
    """Review of issue 54, P1 and P5: each side ran on the slice held in memory, where a row no
    longer knows its file (`input_file_name()` answered ''), so a change of it was previewed as
    no change; DISTINCT and LIMIT, which a stream keeps state for, were not named stateful."""
    files = drop(tmp_path / "in")
    old = job(tmp_path, "SELECT order_id, input_file_name() AS f FROM orders", 1)
    new = job(tmp_path, "SELECT order_id, regexp_extract(input_file_name(), '[^/]+$', 0) AS f "
                        "FROM orders", 2)  # fmt: skip
    answer = probe(spark, {"old": old, "new": new, "slice": {"orders": {"files": files}},
                           "max-rows": 100})  # fmt: skip
    assert sorted((r[0], r[1]) for r in answer["old"]["rows"])[0] == (1, files[0])
    assert sorted((r[0], r[1]) for r in answer["new"]["rows"])[-1] == (5, "b.json")
    distinct = job(tmp_path, "SELECT DISTINCT price > 9000 AS big FROM orders", 1)
    limited = job(tmp_path, "SELECT order_id FROM orders LIMIT 2", 2)
    answer = probe(spark, {"old": distinct, "new": limited,
                           "slice": {"orders": {"files": files}}, "max-rows": 100})  # fmt: skip
    assert answer["old"]["stateful"] == ["Distinct"]
    assert answer["new"]["stateful"] == ["GlobalLimit"]


def test_a_side_without_a_time_zone_has_its_jvms(spark, tmp_path: Path) -> None:
    """P2: the probe's session is pinned to UTC; a job that sets no time zone runs in its JVM's
    (a local run's: this machine's), and so must its preview."""
    files = drop(tmp_path / "in")
    sql = "SELECT order_id, hour(order_time) AS h, current_timezone() AS tz FROM orders"
    own = job(tmp_path, sql, 1)
    said = job(tmp_path, sql, 2)
    said["conf"]["spark.sql.session.timeZone"] = "America/New_York"
    zones = spark._jvm.java.util.TimeZone
    before = zones.getDefault()
    zones.setDefault(zones.getTimeZone("Asia/Tokyo"))
    try:
        answer = probe(spark, {"old": own, "new": said, "slice": {"orders": {"files": files}},
                               "max-rows": 100})  # fmt: skip
    finally:
        zones.setDefault(before)
    assert {r[2] for r in answer["old"]["rows"]} == {"Asia/Tokyo"}
    assert {r[2] for r in answer["new"]["rows"]} == {"America/New_York"}


def test_names_with_glob_characters_are_read_as_named(spark, tmp_path: Path) -> None:
    """P6 and P10: rows given in `s*.json` were read as a pattern (its neighbours too); a table
    whose path is a pattern could not be previewed (`basePath` of a pattern)."""
    given = tmp_path / "given"
    given.mkdir()
    for name, order in (("s*.json", 1), ("s1.json", 2), ("s2.json", 3)):
        (given / name).write_text(json.dumps({"order_id": order, "price": 1.0}) + "\n")
    doc = job(tmp_path, "SELECT order_id FROM orders", 1)
    answer = probe(spark, {"old": None, "new": doc, "max-rows": 100,
                           "slice": {"orders": {"sample": str(given / "s*.json")}}})  # fmt: skip
    assert answer["inputs"] == {"orders": 1} and answer["new"]["rows"][0][0] == 1
    files = drop(tmp_path / "in" / "dt=1")
    pattern = job(tmp_path, "SELECT order_id FROM orders", 2)
    pattern["tables"]["orders"]["options"]["path"] = str(tmp_path / "in" / "dt=*")
    answer = probe(spark, {"old": None, "new": pattern, "max-rows": 100,
                           "slice": {"orders": {"files": files}}})  # fmt: skip
    assert "error" not in answer and answer["inputs"] == {"orders": 5}, answer
