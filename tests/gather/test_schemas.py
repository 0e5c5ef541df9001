"""Gathering a sink's contract facts without Spark where it can: what the probe is asked, what
the cache answers, and what a probe that fails leaves (unknown, never empty)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.schemas import Check, changes_output, gather_contracts
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.stores.storage import FileStorage
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, make_job, stored_of
from tests.support.parquet_tail import struct_of, tail

V1 = [{"name": "id", "type": "bigint", "nullable": True}]


def check_into(
    sink: Path, version: int = 2, created: str = "2026-11-26T07:00:00Z", **overrides
) -> Check:
    job = make_job(tables={"out": {"format": "parquet", "options": {"path": str(sink)}}},
                   **overrides)  # fmt: skip
    new = StoredManifest(job.spec, job.tables, Meta(version, "q", created))
    return Check(new, stored_of(job) if version > 1 else None)


class Probe:
    """Plays the runner's probe: answers every job with V1 and every sink with one version."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    def __call__(self, request: dict):
        self.requests.append(request)
        return {
            "spark": "4.3.0",
            "jobs": {j["key"]: {"fields": V1} for j in request["jobs"]},
            "sinks": {
                s["key"]: {"history": [{"fields": V1, "from": "v1"}]} for s in request["sinks"]
            },  # fmt: skip
            "ddl": {},
        }, None


@pytest.fixture
def probe() -> Probe:
    return Probe()


def test_a_new_job_into_an_empty_sink_starts_no_spark(tmp_path: Path, probe: Probe) -> None:
    found = gather_contracts([check_into(tmp_path / "out", version=1)], FileStorage(), None, probe)
    assert found == [None] and probe.requests == []


def _committed(sink: Path, file: str, data: bytes) -> None:
    """A file Spark's file-sink log committed in batch 0."""
    (sink / "_spark_metadata").mkdir(parents=True)
    (sink / file).parent.mkdir(parents=True, exist_ok=True)
    (sink / file).write_bytes(data)
    entry = {"path": f"file:{sink / file}", "size": len(data), "action": "add"}
    (sink / "_spark_metadata" / "0").write_text("v1\n" + json.dumps(entry) + "\n")


def test_queries_are_analysed_once_and_sinks_read_every_time(tmp_path: Path, probe: Probe) -> None:
    sink = tmp_path / "out"
    _committed(sink, "day=1/part-0.parquet", tail(struct_of(("id", "long", True))))
    cache = tmp_path / "cache"
    (first,) = gather_contracts([check_into(sink)], FileStorage(), cache, probe)
    assert first.output.fields == tuple(V1) and first.holds.history == (tuple(V1),)
    # In a partition's folder: its path gives a column, which Spark's read tells.
    assert [len(probe.requests[0][k]) for k in ("jobs", "sinks")] == [1, 1]
    # The deploy after the plan: its new version is made a moment later, the same query.
    later = check_into(sink, created="2026-11-26T07:00:09Z")
    (again,) = gather_contracts([later], FileStorage(), cache, probe)
    assert again == first
    assert [len(probe.requests[1][k]) for k in ("jobs", "sinks")] == [0, 1]
    other = check_into(sink, sql="SELECT id FROM src")
    gather_contracts([other], FileStorage(), cache, probe)
    assert len(probe.requests[2]["jobs"]) == 1  # another query: analysed


def test_a_parquet_sink_spark_wrote_is_read_from_its_footer_without_spark(
    tmp_path: Path, probe: Probe
) -> None:
    sink = tmp_path / "out"
    _committed(
        sink, "part-0.parquet", tail(struct_of(("id", "long", False), ("n", "string", True)))
    )
    cache = tmp_path / "cache"
    (first,) = gather_contracts([check_into(sink)], FileStorage(), cache, probe)
    assert [len(probe.requests[0][k]) for k in ("jobs", "sinks")] == [1, 0]
    fields = ({"name": "id", "type": "bigint", "nullable": True},
              {"name": "n", "type": "string", "nullable": True})  # fmt: skip
    assert first.holds.history == (fields,) and first.holds.unknown is None
    # The deploy after the plan: its query analysed, its sink read here: no Spark at all.
    later = check_into(sink, created="2026-11-26T07:00:09Z")
    assert gather_contracts([later], FileStorage(), cache, probe) == [first]
    assert len(probe.requests) == 1
    # Bytes that are no footer Spark wrote: Spark reads them, and says what it finds.
    (sink / "part-0.parquet").write_bytes(tail(None))
    gather_contracts([later], FileStorage(), cache, probe)
    assert [len(probe.requests[1][k]) for k in ("jobs", "sinks")] == [0, 1]


def test_a_probe_that_fails_leaves_unknowns_and_caches_nothing(tmp_path: Path) -> None:
    def failing(request: dict) -> tuple[dict, str]:
        return {}, "it exited 1: no Java"

    sink = tmp_path / "out"
    sink.mkdir()
    (sink / "part-0.parquet").write_bytes(b"PAR1")
    cache = tmp_path / "cache"
    (facts,) = gather_contracts([check_into(sink)], FileStorage(), cache, failing)
    assert facts.output.fields is None
    assert facts.output.unknown == "Spark's analysis did not answer (it exited 1: no Java)"
    assert facts.holds.unknown == "Spark's analysis did not answer (it exited 1: no Java)"
    assert not cache.exists()


def test_a_new_location_names_where_the_old_version_wrote(tmp_path: Path, probe: Probe) -> None:
    path = str(tmp_path / "out" / "v{query_version}")
    job = make_job(tables={"out": {"format": "parquet", "options": {"path": path}}})
    check = Check(StoredManifest(job.spec, job.tables, Meta.new(2)), stored_of(job))
    (facts,) = gather_contracts([check], FileStorage(), None, probe)
    assert facts.sink == str(tmp_path / "out" / "v2")
    assert facts.moved_from == str(tmp_path / "out" / "v1")
    assert probe.requests == []  # an empty new location: nothing to analyse


def test_a_sink_stored_relative_has_not_moved_to_its_absolute_path(
    tmp_path: Path, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest deployed before paths were stored absolute, from the folder deploy runs in."""
    monkeypatch.chdir(tmp_path)
    check = check_into(tmp_path / "out", sql="SELECT id FROM src")
    before = {"out": {"format": "parquet", "options": {"path": "out"}}}
    check = Check(check.manifest, StoredManifest(make_job().spec, before, Meta.new(1)))
    (facts,) = gather_contracts([check], FileStorage(), None, probe)
    assert facts is None or facts.moved_from is None


def test_which_starts_are_checked() -> None:
    store_only = gather([BASE], FakeStore(), FakeTarget(), FakeStorage(), workers=1)[0]
    assert changes_output(store_only)  # a new job: its sink may hold an earlier job's files
    store = FakeStore()
    store.put(stored_of(BASE))
    facts = gather(
        [BASE, make_job(name="b", sql="SELECT id FROM src")],
        store,
        FakeTarget(),
        FakeStorage(),
        workers=1,
    )
    by_name = {x.name: x for x in facts}
    assert not changes_output(by_name["orders"])
    assert changes_output(by_name["b"])  # a new job
    store.put(stored_of(make_job(name="c")))

    def facts_of(job: Job):
        found = gather([job], store, FakeTarget(), FakeStorage(), workers=1)
        return next(x for x in found if x.name == job.name)

    # A description changes no column's type; metadata columns switched off drop six.
    assert not changes_output(facts_of(make_job(name="c", description="x")))
    assert changes_output(facts_of(make_job(name="c", **{"metadata-columns": {"enabled": False}})))


def test_kafka_headers_included_give_a_column_and_are_analysed() -> None:
    """Issue 40, item 6: `includeHeaders` true adds a `headers` column to a Kafka source (Spark's
    KafkaRecordToRowConverter); the plan took it for an option that gives the same columns,
    and only the run's check before its first write saw the new column."""
    kafka = {"format": "kafka", "options": {"subscribe": "orders",
             "kafka.bootstrap.servers": "k:9092"}}  # fmt: skip
    before = make_job(sql="SELECT * FROM src", tables={"src": kafka})
    store = FakeStore()
    store.put(stored_of(before))

    def checked(options: dict) -> bool:
        job = make_job(sql="SELECT * FROM src", tables={"src": {**kafka, "options": options}})
        (facts,) = gather([job], store, FakeTarget(), FakeStorage(), workers=1)
        return changes_output(facts)

    for value in (True, "true", "TRUE"):
        assert checked({**kafka["options"], "includeHeaders": value})
        assert checked({**kafka["options"], "INCLUDEHEADERS": value}), "keys without case"
    assert not checked({**kafka["options"], "includeHeaders": "false"}), "no column: same columns"
    assert not checked({**kafka["options"], "maxOffsetsPerTrigger": 100})


def test_a_sources_options_alone_are_not_analysed() -> None:
    """A rate limit or a path gives the same columns: a config change starts no Spark."""
    store = FakeStore()
    store.put(stored_of(BASE))
    limited = make_job(tables={"src": {**BASE.tables["src"], "options": {"path": "/in2"}}})
    (facts,) = gather([limited], store, FakeTarget(), FakeStorage(), workers=1)
    assert not changes_output(facts)
    typed = make_job(tables={"src": {**BASE.tables["src"], "schema": "id STRING, ts TIMESTAMP"}})
    (facts,) = gather([typed], store, FakeTarget(), FakeStorage(), workers=1)
    assert changes_output(facts)


def test_a_start_may_take_the_stored_version_or_the_next_after_every_folder() -> None:
    """The versions decide/tree.py may give a start, known before it decides: a restart's (the
    stored one), a new version's (after the stored one and every checkpoint folder)."""
    from flink_sql_runner.gather.schemas import start_versions
    from tests.support.jobs import add_version_folder

    storage = FakeStorage()
    add_version_folder(storage, "orders", 3)  # left by a failed start, say
    (new,) = gather([BASE], FakeStore(), FakeTarget(), storage, workers=1)
    assert start_versions(new) == (4,)
    store = FakeStore()
    store.put(stored_of(BASE, 2))
    storage.add_checkpoint("/ckpt/orders/2", 3)
    (stored,) = gather([BASE], store, FakeTarget(), storage, workers=1)
    assert start_versions(stored) == (2, 4)


def test_a_job_moved_to_another_path_or_topic_is_not_analysed_again(
    tmp_path: Path, probe: Probe
) -> None:
    cache = tmp_path / "cache"
    for sink in ("a", "b"):
        _committed(tmp_path / sink, "day=1/part-0.parquet", tail(struct_of(("id", "long", True))))
    gather_contracts([check_into(tmp_path / "a")], FileStorage(), cache, probe)
    gather_contracts([check_into(tmp_path / "b")], FileStorage(), cache, probe)
    assert [len(r["jobs"]) for r in probe.requests] == [1, 0], "the path shapes no column"
    topic = {"format": "kafka", "options": {"kafka.bootstrap.servers": "b:9092", "topic": "t"}}
    kafka = make_job(tables={"out": topic})
    check = Check(StoredManifest(kafka.spec, kafka.tables, Meta(2, "q", "x")), stored_of(kafka))
    gather_contracts([check], FileStorage(), cache, probe)
    assert len(probe.requests[2]["jobs"]) == 1, "Kafka's sink gives headers: analysed"
    other = {**topic, "options": {**topic["options"], "topic": "u"}}
    moved = make_job(tables={"out": other})
    check = Check(StoredManifest(moved.spec, moved.tables, Meta(3, "q", "x")), stored_of(moved))
    gather_contracts([check], FileStorage(), cache, probe)
    assert len(probe.requests) == 3 or len(probe.requests[3]["jobs"]) == 0


def test_a_job_stored_as_git_has_it_is_not_resolved_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most jobs of a plan are stored as git has them: `unchanged` answers for them, and the
    stored manifest's paths are not resolved again (10,000 such jobs cost a plan about 0.2 s)."""
    store = FakeStore()
    store.put(stored_of(BASE))
    (facts,) = gather([BASE], store, FakeTarget(), FakeStorage(), workers=1)

    def resolved(*_: object) -> None:
        raise AssertionError("resolved again")

    monkeypatch.setattr(Job, "resolved", resolved)
    assert not changes_output(facts)
    changed = make_job(sql="SELECT id, id AS twice FROM src")
    (facts,) = gather([changed], store, FakeTarget(), FakeStorage(), workers=1)
    with pytest.raises(AssertionError, match="resolved again"):
        changes_output(facts)  # a change is still read through the stored manifest's paths
