"""Where a new version's Kafka sources start, on the real broker through the real CLI (issue 39):
one job, one topic, every record counted per version and per table.

1. v1 reads the topic (two partitions) through one table; a query change (rows from offset 3
   on) is `preview`ed through the CLI on the offset ranges v1's committed batches read, run
   on the Spark the job runs on (the connector's release, not the deployer's pyspark): exactly
   the records of those ranges below offset 3 are the rows only the old query wrote; v1 is
   stopped;
2. the topic grows to four partitions and records arrive in each while nothing runs; a query
   change reads the topic through two tables (a `UNION ALL`): v2 starts, each table carried
   from v1's committed offsets where v1 read, from the earliest offset in the two new partitions:
   each table reads every record v1 did not, once;
3. records arrive while v2 runs; a query change of v2 is refused before anything stops (v2's
   offsets name the topic twice: which table read what cannot be told, nor previewed), v2 keeps
   running;
4. the same change with `--kafka-start earliest`, and the go of the prepared v3 cannot be
   written (a storage error once v2 has stopped): the deploy fails, saying the job is down; the
   next deploy, without the option, gives v3 its go with the start its intent record holds, and
   v3 reads the whole topic again, through each table once, as the plan said.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka_jobs import kafka_source, sink_rows, use_connector
from tests.support.workspace import planned_by, wait_for

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: three starts on 2 cores
]

JOB, TOPIC = "starts", "st-in"
COLUMNS = "CAST(key AS STRING) AS k, topic AS t, `partition` AS p, `offset` AS o"
ONE_TABLE = f"SELECT {COLUMNS}, 'src' AS via FROM src"
TWO_TABLES = f"SELECT {COLUMNS}, 'a' AS via FROM a UNION ALL SELECT {COLUMNS}, 'b' AS via FROM b"


def test_new_partitions_two_tables_on_one_topic_and_a_declared_start(
    kafka_workspace, kafka_broker, kafka_spark, spark
):
    ws, broker = kafka_workspace, kafka_broker
    broker.create_topic(TOPIC, partitions=2)
    use_connector(ws, kafka_spark, trigger="3 seconds")
    out = ws.root / "out" / JOB
    sink = {"name": "out", "format": "parquet", "options": {"path": str(out)}}
    bootstrap = broker.bootstrap
    produced: list[tuple[int, int]] = []  # (partition, offset) of every record, in order

    def produce(partitions: range, each: int) -> None:
        ends = broker.end_offsets(TOPIC)
        for partition in partitions:
            start = ends.get(partition, 0)
            broker.produce(TOPIC, ((f"p{partition}-{start + n}", "v") for n in range(each)),
                           partition=partition)  # fmt: skip
            produced.extend((partition, start + n) for n in range(each))

    def read(version: int, via: str) -> Counter[tuple[int, int]]:
        return Counter(
            (row["p"], row["o"])
            for row in sink_rows(spark, out)
            if row["__query_version"] == version and row["via"] == via
        )

    def all_of(version: int, vias: tuple[str, ...], records: set[tuple[int, int]]) -> None:
        def done() -> bool:
            return all(set(read(version, via)) >= records for via in vias)

        wait_for(done, timeout=180, what=f"v{version} to read {len(records)} records")

    def deploy(*args: str, expect: int = 0) -> str:
        result = ws.deploy(*args)
        assert result.returncode == expect, result.stdout + result.stderr
        return result.stdout

    def write(sql: str, tables: tuple[str, ...]) -> None:
        """The job reading the topic through `tables`: v1's from the earliest offset, any later
        version's where the deploy says (a table's own startingOffsets would win over both)."""
        sources = [kafka_source(bootstrap, TOPIC, name) for name in tables]
        if sql != ONE_TABLE:
            for source in sources:
                del source["options"]["startingOffsets"]
        ws.write_tables([*sources, sink])
        ws.write_job(JOB, **{"target-table": "out", "sql": sql})

    # 1. v1 through one table; a query change previewed on what v1 read; stopped
    write(ONE_TABLE, ("src",))
    produce(range(2), 10)
    deploy()
    all_of(1, ("src",), set(produced))
    write(ONE_TABLE + " WHERE `offset` >= 3", ("src",))
    previewed_on_what_v1_read(ws, read(1, "src"))
    stopped = ws.cli("stop", JOB, "--stop-timeout", "30", paths=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    v1 = read(1, "src")
    assert set(v1.values()) == {1} and set(v1) <= set(produced)

    # 2. two partitions more, records in each while nothing runs; two tables on the topic
    broker.add_partitions(TOPIC, 4)
    produce(range(4), 5)
    write(TWO_TABLES, ("a", "b"))
    output = deploy()
    print(output)
    planned = planned_by(output, JOB)  # the plan the deploy printed, then carried out
    assert planned["action"] == "start-clean" and planned["query-version"] == 2, planned
    assert planned["reason"].endswith("a, b at v1's committed offsets"), planned["reason"]
    for table in ("a", "b"):
        assert f"{table} starts at v1's batch" in output, output
    all_of(2, ("a", "b"), set(produced) - set(v1))
    for via in ("a", "b"):
        v2 = read(2, via)
        assert set(v2.values()) == {1}, f"{via}: a record read twice by v2"
        assert set(v2) | set(v1) == set(produced) and not set(v2) & set(v1), via
    assert {p for p, _ in read(2, "a")} == {0, 1, 2, 3}  # the new partitions from the earliest
    logs = ws.cli("logs", JOB, paths=False)
    added = "partitions not named in the carried offsets start at their earliest"
    assert f"{added}: ['{TOPIC}[2]', '{TOPIC}[3]']" in logs.stdout + logs.stderr, logs.stdout

    # 3. records while v2 runs; a query change cannot carry two tables on one topic: refused
    produce(range(4), 3)
    all_of(2, ("a", "b"), set(produced) - set(v1))
    running = ws.record(JOB)["pid"]
    write(TWO_TABLES + " WHERE `offset` >= 0", ("a", "b"))
    refused = deploy(expect=1)
    assert planned_by(refused, JOB)["action"] == "error", refused
    assert "a: v2 read its topics through 2 tables (a, b)" in refused, refused
    assert "kafka-start" in refused, refused
    assert ws.record(JOB)["pid"] == running and ws.stored(JOB)["meta"]["query-version"] == 2

    # 4. the same change, declared to start at the earliest, and the go cannot be written (a
    #    directory where the go file goes: "Is a directory", as a failing disk would answer):
    #    v2 is stopped, v3 prepared and told nothing; the deploy fails and says that whether
    #    v3 had its go cannot be told (the go file cannot be read back either)
    control = ws.state / "checkpoints" / JOB / "_control"
    planted: list[Path] = []
    halt = threading.Event()
    blocker = threading.Thread(target=block_the_go, args=(control, 3, halt, planted), daemon=True)
    blocker.start()
    try:
        failed = deploy("--kafka-start", "earliest", expect=1)
    finally:
        halt.set()
        blocker.join(5)
    print(failed)
    assert planted, "the prepared run's status never appeared"
    assert "prepared v3 in " in failed and "cannot write" in failed, failed
    assert "v2 was stopped; whether the prepared v3 had its go cannot be told" in failed, failed
    assert ws.record(JOB) is None or ws.record(JOB)["pid"] != running

    # the next deploy, without --kafka-start, gives the waiting run its go with the starts its
    # intent record holds (the earliest), never `latest`
    planted[0].rmdir()
    output = deploy()
    print(output)
    assert "its go (a starts from earliest (deploy --kafka-start); b starts" in output, output
    assert ws.stored(JOB)["meta"]["query-version"] == 3
    produce(range(4), 2)
    all_of(3, ("a", "b"), set(produced))
    for via in ("a", "b"):
        assert set(read(3, via).values()) == {1}, f"{via}: a record read twice by v3"
        assert set(read(2, via).values()) == {1}


def block_the_go(control: Path, version: int, halt: threading.Event, planted: list[Path]) -> None:
    """Once a run of `version` is prepared (its status file written), make its go file a
    directory: every write of it fails until it is removed."""
    while not halt.is_set():
        for status in control.glob(f"v{version}.prepared-*.status.json"):
            go = status.with_name(status.name.removesuffix(".status.json") + ".go.json")
            go.mkdir()
            planted.append(go)
            return
        time.sleep(0.05)


def previewed_on_what_v1_read(ws: Any, v1_read: Counter[tuple[int, int]]) -> None:
    """`preview` of the change (rows from offset 3 on) on v1's committed batches: their offset
    ranges, read from the broker by both queries; the rows only the old one writes are exactly
    the records of those ranges below offset 3, none only the new one."""
    result = ws.cli("preview", JOB, "--batches", "100", "--rows", "100", "--output", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = json.loads(result.stdout)["previews"]
    assert (found["old-version"], found["new-version"]) == (1, 2), found
    assert found.get("unavailable") is None, found["unavailable"]
    (part,) = found["slice"]["parts"]
    assert (part["view"], part["kind"]) == ("src", "kafka"), part
    records = in_ranges(part)
    assert found["rows-in"] == {"src": len(records)} and records <= set(v1_read)
    below = sorted(record for record in records if record[1] < 3)
    assert below, "the slice holds records below offset 3"
    shown = sorted((row["p"], row["o"]) for row in found["only-old"]["sample"])
    assert found["only-old"]["rows"] == len(below) and shown == below
    assert found["only-new"] == {"rows": 0, "sample": []}
    assert (found["old"]["rows-out"], found["new"]["rows-out"]) == (
        len(records),
        len(records) - len(below),
    )


def in_ranges(part: dict[str, Any]) -> set[tuple[int, int]]:
    """The (partition, offset) of every record in a Kafka part's ranges of TOPIC."""
    starts, ends = part["start"].get(TOPIC, {}), part["end"].get(TOPIC, {})
    return {(int(p), offset) for p, end in ends.items()
            for offset in range(int(starts.get(p, end)), int(end))}  # fmt: skip
