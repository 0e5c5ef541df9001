"""The plan's cost follows the number of jobs: no step compares every job with every other
(the one writer per sink, the lineage, the pipeline's order). Counted, not timed: the sink
looks and `SinkId.overlaps` calls, and the lines Python runs to build one plan."""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from types import FrameType
from typing import Any

import pytest

from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.read import sinks as sinks_module
from flink_sql_runner.read.sinks import SinkId, SinkIndex
from tests.support.graphs import pipeline_job, stored
from tests.support.jobs import fake_world


def chain_facts(jobs: int, length: int, recorded: bool = True) -> list[JobFacts]:
    """`jobs` jobs in chains of `length` (each reads the folder the one before writes). With
    `recorded`, each is stored as v1, not running, and its query changed in git since: each
    starts clean as v2, into a sink the store says it owns. Else each is new."""
    chain = [
        pipeline_job(f"j{i:05d}", f"/data/j{i - 1:05d}" if i % length else "/in", f"/data/j{i:05d}")
        for i in range(jobs)
    ]
    store, target, state, _ = fake_world()
    for job in chain if recorded else ():
        store.put(stored(job))
    changed = [
        replace(job, spec={**job.spec, "sql": job.spec["sql"].replace("> 0", "> 1")})
        for job in chain
    ]
    return gather(changed, store, target, state, workers=1)


def test_five_thousand_jobs_starting_into_their_own_sinks_cost_a_few_looks_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    facts = chain_facts(5000, length=5)
    overlaps, init = SinkId.overlaps, SinkIndex.__init__
    calls, indexes = [0], []

    def counted_overlaps(sink: SinkId, other: SinkId) -> bool:
        calls[0] += 1
        return overlaps(sink, other)

    def counted_init(index: SinkIndex[Any], *args: Any, **kwargs: Any) -> None:
        indexes.append(index)
        init(index, *args, **kwargs)

    monkeypatch.setattr(SinkId, "overlaps", counted_overlaps)
    monkeypatch.setattr(sinks_module.SinkIndex, "__init__", counted_init)
    plan = build_plan(facts)
    assert {d.action.value for d in plan.decisions} == {"start-clean"}
    assert [d.after for d in plan.decisions[:3]] == [(), ("j00000",), ("j00001",)]
    assert [i.job for i in plan.decisions[0].downstream] == ["j00001", "j00002", "j00003", "j00004"]
    looks = calls[0] + sum(index.probes for index in indexes)
    assert 0 < looks < 10 * len(facts)  # comparing every pair: 25 million


def lines_run(facts: list[JobFacts]) -> int:
    """How many lines of Python `build_plan` runs (loops inside one line count once a turn)."""
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        count += 1
        return trace

    sys.settrace(trace)
    try:
        build_plan(facts)
    finally:
        sys.settrace(None)
    return count


def test_a_plan_of_twice_the_jobs_runs_twice_the_lines() -> None:
    """Jobs that start into sinks the store records, and one long chain of new jobs: comparing
    all pairs of sinks, or walking the lineage once a link, would run about twice the lines a
    job at twice the jobs (at 1,000 and 500 jobs, the sink check alone did: 21,000 and 11,600)."""

    def per_job(jobs: int) -> float:
        recorded, chain = chain_facts(jobs, length=5), chain_facts(jobs, jobs, recorded=False)
        return (lines_run(recorded) + lines_run(chain)) / (2 * jobs)

    assert per_job(1000) < 1.1 * per_job(500)


@pytest.mark.parametrize("seed", range(6))
def test_the_lineage_indexes_answer_as_scanning_every_link_and_job(seed: int) -> None:
    """On random graphs of folders (cycles, self loops, jobs reading a parent folder): the
    links into and out of a job, its cycle, whether two jobs feed each other, the order of
    `downstream` and `upstream`, as scanning every link and job finds them."""
    rng = random.Random(seed)
    names = [f"j{i:02d}" for i in range(40)]
    jobs = [
        pipeline_job(
            name,
            rng.choice(("/data", *(f"/data/{other}" for other in rng.sample(names, 3)))),
            f"/data/{name}",
        )
        for name in names
    ]
    lineage = build_lineage(jobs)
    assert lineage.cycles and lineage.links
    for name in names:
        assert lineage.links_into(name) == tuple(lk for lk in lineage.links if lk.consumer == name)
        assert lineage.links_from(name) == tuple(lk for lk in lineage.links if lk.producer == name)
        assert lineage.cycle_of(name) == next((c for c in lineage.cycles if name in c), None)
        assert lineage.in_cycle(name) == any(name in c for c in lineage.cycles)
        for other in names:
            scanned = other in lineage.upstream(name) and name in lineage.upstream(other)
            if other != name:
                assert lineage.feed_each_other(name, other) == scanned
        order = lineage.order()
        for reach in (lineage.downstream(name), lineage.upstream(name)):
            assert reach == [n for n in order if n in set(reach)]
