"""The one-writer-per-sink check by an index (`sinks.SinkIndex`): it finds exactly what comparing
every sink with every other (`SinkId.overlaps`) finds, in the same order, and its cost grows
with the number of sinks, not with its square."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from flink_sql_runner.errors import Problem
from flink_sql_runner.read import sinks as sinks_module
from flink_sql_runner.read.sinks import (
    SinkId,
    SinkIndex,
    shared_sink_problems,
    sink_of,
    target_sink,
)

SEGMENTS = ("data", "a", "ab", "a-b", "a.b", "b", "out", "Data", "x")
BROKERS = ("Kafka-1:9092", "kafka-1:9092", "KAFKA-2:9092", "kafka-2:9092", "${BROKERS}")


def random_definition(rng: random.Random) -> dict[str, Any]:
    """A sink table: folders nested in each other or beside ones sharing a string prefix
    (/data/a, /data/ab), under several schemes; topics on brokers written in other cases and
    orders; catalog tables named with and without their database."""
    kind = rng.random()
    if kind < 0.65:
        depth = rng.randint(0, 4)
        path = "/".join(rng.choice(SEGMENTS) for _ in range(depth))
        if rng.random() < 0.2:
            path += "/{job_name}"
        scheme = rng.choice(("/", "/", "/", "s3://", "s3a://", "S3N://", "file:/", "file:///"))
        trailing = rng.choice(("", "", "/", "/."))
        return {"format": "parquet", "options": {"path": scheme + path + trailing}}
    if kind < 0.85:
        servers = ", ".join(rng.sample(BROKERS, rng.randint(1, 3)))
        topic = rng.choice(("orders", "Orders", "orders-{job_name}", "payments"))
        options = {"topic": topic, "kafka.bootstrap.servers": servers}
        return {"format": "kafka", "options": options}
    return {"table": rng.choice(("orders", "default.orders", "spark_catalog.default.ORDERS", "o"))}


def random_sinks(seed: int, count: int) -> list[SinkId]:
    rng = random.Random(seed)
    found = [sink_of(f"job-{rng.randint(0, 3)}", random_definition(rng)) for _ in range(count)]
    # And identities no definition gives, whose text the rule must still take as it is.
    found += [SinkId("folder", w) for w in ("", "/", "//", "/a//b", "/a/", "s3://", "s3://b/a")]
    return [sink for sink in found if sink is not None]


@pytest.mark.parametrize("seed", range(8))
def test_the_index_finds_exactly_the_sinks_overlaps_finds_in_the_same_order(seed: int) -> None:
    sinks = random_sinks(seed, 400)
    index = SinkIndex((sink, n) for n, sink in enumerate(sinks))
    pairs = 0
    for sink in sinks:
        brute = [(theirs, n) for n, theirs in enumerate(sinks) if sink.overlaps(theirs)]
        assert index.overlapping(sink) == brute, sink
        pairs += len(brute) - 1
    assert pairs > len(sinks)  # the random sinks overlap often, not only themselves


def test_folders_overlap_at_segments_and_sinks_of_other_kinds_only_when_equal() -> None:
    names = ["/data/a", "/data/ab", "/data/a/b", "/data", "s3://data/a", "/data/a.b"]
    index = SinkIndex((SinkId("folder", w), w) for w in names)
    assert [w for _, w in index.overlapping(SinkId("folder", "/data/a"))] == [
        "/data/a",
        "/data/a/b",
        "/data",
    ]
    assert [w for _, w in index.overlapping(SinkId("folder", "/data/a/b/c"))] == [
        "/data/a",
        "/data/a/b",
        "/data",
    ]
    assert index.overlapping(SinkId("folder", "/dat")) == []
    topic = SinkId("kafka topic", "orders on a:9092")
    index.add(topic, "topic")
    assert index.overlapping(SinkId("kafka topic", "orders on a:9092")) == [(topic, "topic")]
    assert index.overlapping(SinkId("kafka topic", "orders on a:9092/x")) == []
    assert index.overlapping(SinkId("catalog table", "/data/a")) == []


def jobs_of(definitions: list[dict[str, Any]]) -> list[Any]:
    """Loaded jobs as `shared_sink_problems` reads them: name, spec, tables, file."""
    return [
        SimpleNamespace(
            name=f"job-{n % 7}" if n % 11 == 0 else f"job-{n}",  # some share a name
            spec={"target-table": "out"},
            tables={"out": definition},
            file=f"queries/job-{n}.yaml",
        )
        for n, definition in enumerate(definitions)
    ]


def problems_by_comparing_all(jobs: list[Any]) -> list[Problem]:
    """The check as it was: every job's sink compared with every other's."""
    sinks = [(job, target_sink(job.name, job.spec, job.tables)) for job in jobs]
    problems = []
    for job, sink in sinks:
        if sink is None:
            continue
        others = [
            (other, theirs)
            for other, theirs in sinks
            if other is not job and theirs is not None and sink.overlaps(theirs)
        ]
        if others:
            named = ", ".join(
                f"job {o.name!r} ({o.file}" + ("" if t == sink else f", {t}") + ")"
                for o, t in others
            )
            problems.append(
                Problem(
                    job.file,
                    "target-table",
                    f"job {job.name!r} writes {sink}, as {named} also does: two jobs cannot "
                    "write one sink",
                )
            )
    return problems


@pytest.mark.parametrize("seed", range(4))
def test_shared_sinks_are_the_problems_comparing_every_pair_gives(seed: int) -> None:
    rng = random.Random(seed)
    jobs = jobs_of([random_definition(rng) for _ in range(300)])
    found = shared_sink_problems(jobs)
    assert found == problems_by_comparing_all(jobs)
    assert len(found) > 100


class Counted:
    """`SinkId.overlaps` calls and the probes of every index made meanwhile."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.overlaps = 0
        self.indexes: list[SinkIndex[Any]] = []
        overlaps, init = SinkId.overlaps, SinkIndex.__init__

        def counted_overlaps(sink: SinkId, other: SinkId) -> bool:
            self.overlaps += 1
            return overlaps(sink, other)

        def counted_init(index: SinkIndex[Any], *args: Any, **kwargs: Any) -> None:
            self.indexes.append(index)
            init(index, *args, **kwargs)

        monkeypatch.setattr(SinkId, "overlaps", counted_overlaps)
        monkeypatch.setattr(sinks_module.SinkIndex, "__init__", counted_init)

    @property
    def comparisons(self) -> int:
        return self.overlaps + sum(index.probes for index in self.indexes)


def test_checking_ten_thousand_sinks_costs_about_ten_thousand_looks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10,000 jobs in 100 teams' folders, of which 50 write inside another's folder, and 30
    pairs share a topic: every shared sink is found, with a few looks per job (the depth of
    its path), where comparing all pairs took 100 million."""
    definitions: list[dict[str, Any]] = []
    for n in range(10_000):
        path = f"s3://lake/team-{n % 100}/job-{n}"
        if n < 50:  # inside the folder of job 5000 + n
            path = f"s3a://lake/team-{n % 100}/job-{5000 + n}/part"
        definitions.append({"format": "parquet", "options": {"path": path}})
    for n in range(30):
        servers = f"Broker-{n}:9092,b:9092" if n % 2 else f"b:9092, broker-{n}:9092"
        topic = {"format": "kafka", "options": {"topic": "t", "kafka.bootstrap.servers": servers}}
        definitions[9000 + 2 * n] = definitions[9001 + 2 * n] = topic
    jobs = jobs_of(definitions)
    counted = Counted(monkeypatch)
    problems = shared_sink_problems(jobs)
    assert len(problems) == 2 * 50 + 2 * 30
    assert "as job 'job-5000' (queries/job-5000.yaml, folder s3://lake/team-0/job-5000)" in (
        problems[0].message
    )
    n = len(jobs)
    assert counted.overlaps == 0
    assert 0 < counted.comparisons < 10 * n  # a path of 3 folders: 5 looks a job


@pytest.mark.parametrize(
    "path, where",
    [
        ("/data/a/../b/./c/", "/data/b/c"),
        ("/data//{job_name}", "/data/orders"),
        ("file:///data/x", "/data/x"),
        ("s3a://bucket/a/../b", "s3://bucket/b"),
        ("rel/../out", "{cwd}/out"),
        ("./out/{job_name}", "{cwd}/out/orders"),
    ],
)
def test_a_sink_folder_is_normalised_absolute_or_relative(
    path: str, where: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative path is taken from where the deployer runs, an absolute one as written,
    both normalised."""
    monkeypatch.chdir(tmp_path)
    assert sinks_module.normalise_path(path, "orders") == where.format(cwd=str(tmp_path))
