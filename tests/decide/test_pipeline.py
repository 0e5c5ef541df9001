"""Deploys along the lineage, on fakes: producers start first and consumers stop first, a failed
producer holds its consumers back, the plan names what happens downstream, and consumers with
`reprocessing: consistent` follow a producer's new version."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan, checkpoint_unused
from flink_sql_runner.decide.warm import DEFAULT_HANDOVER, HANDOVERS, WARM
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.plan import plan_json, plan_text, results_text
from tests.support.graphs import pipeline_job
from tests.support.jobs import fake_world

# Names against the lineage: a name-ordered deploy would get every order wrong.
PRODUCER, CONSUMER, LAST = "z_producer", "m_consumer", "a_last"


def chain(versioned: bool = False, policy: str | None = None) -> dict[str, Job]:
    """z_producer writes /out/p (or /out/p/{query_version}); m_consumer reads it and writes
    /out/c; a-last reads that."""
    written = "/out/p/{query_version}" if versioned else "/out/p"
    extra = {"reprocessing": policy} if policy else {}
    return {
        PRODUCER: pipeline_job(PRODUCER, "/in", written),
        CONSUMER: pipeline_job(CONSUMER, written, "/out/c", **extra),
        LAST: pipeline_job(LAST, "/out/c", "/out/l"),
    }


def changed(job: Job) -> Job:
    spec = {**job.spec, "sql": job.spec["sql"].replace("id > 0", "id > 100")}
    return Job(spec, job.tables, job.source_tables, job.file)


def pinned(job: Job, version: int) -> dict[str, Any]:
    """The tables as a consistent consumer's stored manifest holds them: its producer's
    version in the path it reads."""
    tables = copy.deepcopy(job.tables)
    for definition in tables.values():
        path = definition["options"]["path"]
        definition["options"]["path"] = path.replace("{query_version}", str(version))
    tables[str(job.spec["target-table"])] = job.tables[str(job.spec["target-table"])]
    return tables


def deploy_before(jobs: dict[str, Job], consistent: bool = False):
    store, target, state, executor = fake_world()
    for name, job in jobs.items():
        tables = pinned(job, 1) if consistent and name == CONSUMER else job.tables
        store.put(StoredManifest(copy.deepcopy(job.spec), copy.deepcopy(tables), Meta.new(1)))
        target.add_run(Run(name, 1, f"run-{name}", f"pid {len(name)}"))
        state.add_checkpoint(f"/ckpt/{name}/1", 5)
    order: list[str] = []
    target.before_stop = lambda run: order.append(f"stop {run.name}")
    target.before_submit = lambda sub: order.append(f"start {sub.name} v{sub.version}")
    return store, target, state, executor, order


def plan_for(store, target, state, jobs, handover=DEFAULT_HANDOVER, lean=False):
    """The plan; `lean`: gathered as `plan` and `deploy` gather (act/deployment.py), reading
    no more of each checkpoint than the decision uses."""
    reads = {"running_commits": False, "checkpoint_unused": checkpoint_unused} if lean else {}
    facts = gather(sorted(jobs, key=lambda j: j.name), store, target, state, workers=1, **reads)
    return build_plan(facts, handover=handover)


@pytest.mark.parametrize("handover", HANDOVERS)
def test_producers_start_first_and_consumers_stop_first_at_any_parallelism(handover) -> None:
    """Warm, the producer's new run is prepared (submitted) once its consumers stopped, then
    its old run stops; the consumers, which start after it, start cold."""
    producer = [f"stop {PRODUCER}", f"start {PRODUCER} v2"]
    if handover == WARM:
        producer.reverse()
    for parallelism in (1, 4):
        jobs = {n: changed(j) for n, j in chain().items()}
        store, target, state, executor, order = deploy_before(chain())
        executor.parallelism = parallelism
        plan = plan_for(store, target, state, jobs.values(), handover)
        by_name = {d.name: d for d in plan.decisions}
        assert by_name[CONSUMER].after == (PRODUCER,)
        assert by_name[LAST].after == (CONSUMER,)
        assert by_name[PRODUCER].stop_after == (CONSUMER,)
        assert by_name[CONSUMER].stop_after == (LAST,)
        results = executor.apply(plan)
        assert all(r.ok for r in results.values()), results
        assert order == [
            f"stop {LAST}",
            f"stop {CONSUMER}",
            *producer,
            f"start {CONSUMER} v2",
            f"start {LAST} v2",
        ], parallelism


@pytest.mark.parametrize("handover", HANDOVERS)
def test_a_producer_whose_start_fails_holds_back_its_consumers_which_run_as_before(
    handover,
) -> None:
    """Cold, the producer's new run fails and v1 is started again (rolled back); warm, it
    fails its pre-flight and v1 never stopped. Its consumers are held back either way."""
    jobs = {n: changed(j) for n, j in chain().items()}
    store, target, state, executor, order = deploy_before(chain())
    healthy = target.on_submit

    def producer_fails(submission) -> None:
        if submission.name == PRODUCER and submission.version == 2:
            state.files[submission.status_file] = json.dumps(
                {"run-id": submission.run_id, "state": "failed", "error": "boom"}
            )
        else:
            healthy(submission)

    target.on_submit = producer_fails
    plan = plan_for(store, target, state, jobs.values(), handover)
    results = executor.apply(plan)
    if handover == WARM:
        assert results[PRODUCER].outcome == "failed"
        assert results[PRODUCER].summary == "pre-flight failed: boom; v1 untouched, still running"
        assert [str(r.run_id) for r in target.runs[PRODUCER]] == [f"run-{PRODUCER}"]
    else:
        assert results[PRODUCER].outcome == "rolled-back"
    for name, waited_for in ((CONSUMER, PRODUCER), (LAST, CONSUMER)):
        result = results[name]
        assert result.outcome == "skipped", result
        assert f"held back, {waited_for} (" in result.summary or waited_for in result.summary
        assert "v1 running again from its checkpoint, the store unchanged" in result.summary
        assert store.manifests[name].meta.query_version == 1
        assert [r.version for r in target.runs[name]] == [1]
    outcome = "failed" if handover == WARM else "rolled back"
    assert f"held back, z_producer (writes z_producer_out, which it reads) {outcome}" in (
        results[CONSUMER].summary
    )
    assert f"start {CONSUMER} v2" not in order and f"start {LAST} v2" not in order
    assert target.double_starts == []
    text = results_text(plan, results)
    assert f"SKIP {CONSUMER}: skipped: held back" in text
    said = f"Deploy finished with 1 failed: {PRODUCER}; 2 skipped: {LAST}, {CONSUMER}."
    assert text.endswith(said)


def test_the_plan_says_who_reads_the_rows_again_when_a_producer_starts_clean() -> None:
    store, target, state, _, _ = deploy_before(chain())
    jobs = [changed(chain()[PRODUCER]), chain()[CONSUMER], chain()[LAST]]
    plan = plan_for(store, target, state, jobs)
    producer = next(d for d in plan.decisions if d.name == PRODUCER)
    assert [(i.job, i.effect) for i in producer.downstream] == [
        (CONSUMER, "reads-again"),
        (LAST, "reads-again"),
    ]
    assert producer.downstream[0].detail.startswith(
        f"reads v1's rows again: {PRODUCER} v2 writes z_producer_out from the start"
    )
    assert producer.downstream[1].detail.startswith(f"reads v1's rows again, through {CONSUMER}: ")
    text = plan_text(plan)
    assert f"downstream: {CONSUMER} reads-again: reads v1's rows again" in text
    doc = json.loads(plan_json(plan))
    (entry,) = [j for j in doc["jobs"] if j["name"] == PRODUCER]
    assert [d["job"] for d in entry["downstream"]] == [CONSUMER, LAST]
    # The consumers themselves are left alone: nothing about them changed.
    assert {d.name: d.action for d in plan.decisions}[CONSUMER] is Action.NOOP


def test_a_consistent_consumer_follows_its_producer_to_a_new_version() -> None:
    before = chain(versioned=True, policy="consistent")
    store, target, state, executor, order = deploy_before(before, consistent=True)
    jobs = [changed(before[PRODUCER]), before[CONSUMER], before[LAST]]
    plan = plan_for(store, target, state, jobs)
    by_name = {d.name: d for d in plan.decisions}
    consumer = by_name[CONSUMER]
    assert consumer.action is Action.STOP_AND_START_CLEAN and consumer.version == 2
    assert "reprocessing: consistent, reads m_consumer_in as z_producer's v2" in consumer.reason
    (path_change,) = consumer.changes
    assert path_change.field == "tables.m_consumer_in.options.path"
    assert (path_change.old, path_change.new) == ("/out/p/1", "/out/p/2")
    assert consumer.after == (PRODUCER,)
    assert [(i.job, i.effect) for i in by_name[PRODUCER].downstream] == [
        (CONSUMER, "follows"),
        (LAST, "reads-again"),
    ]
    results = executor.apply(plan)
    assert all(r.ok for r in results.values()), results
    assert order.index(f"start {PRODUCER} v2") < order.index(f"start {CONSUMER} v2")
    stored = store.manifests[CONSUMER]
    assert stored.meta.query_version == 2
    assert stored.tables["m_consumer_in"]["options"]["path"] == "/out/p/2"
    # Deployed again unchanged: the consumer stays on the producer's version.
    again = plan_for(store, target, state, [changed(before[PRODUCER]), *jobs[1:]])
    assert {d.name: d.action for d in again.decisions} == dict.fromkeys(
        (PRODUCER, CONSUMER, LAST), Action.NOOP
    )


def test_a_consistent_consumer_is_decided_the_same_on_what_a_plan_reads() -> None:
    """Its manifest did not change, but its producer's new version changes the tables it is
    decided on again with: its checkpoint is read (the new version's number comes from it)."""
    before = chain(versioned=True, policy="consistent")
    store, target, state, _, _ = deploy_before(before, consistent=True)
    state.add_checkpoint(f"/ckpt/{CONSUMER}/4", 5)  # a version begun before: the next is 5
    jobs = [changed(before[PRODUCER]), before[CONSUMER], before[LAST]]
    full = plan_for(store, target, state, jobs)
    lean = plan_for(store, target, state, jobs, lean=True)
    assert [d.to_dict() for d in lean.decisions] == [d.to_dict() for d in full.decisions]
    by_name = {d.name: d for d in lean.decisions}
    assert by_name[CONSUMER].action is Action.STOP_AND_START_CLEAN
    assert by_name[CONSUMER].version == 5
    assert by_name[LAST].action is Action.NOOP


def test_without_the_policy_a_versioned_table_leaves_its_reader_behind_and_says_so() -> None:
    before = chain(versioned=True)
    store, target, state, _, _ = deploy_before(before)
    plan = plan_for(store, target, state, [changed(before[PRODUCER]), *list(before.values())[1:]])
    (impact,) = next(d for d in plan.decisions if d.name == PRODUCER).downstream
    assert (impact.job, impact.effect) == (CONSUMER, "stays")
    assert "set reprocessing: consistent on it to follow" in impact.detail


@pytest.mark.parametrize("handover", HANDOVERS)
def test_jobs_in_a_cycle_are_deployed_without_waiting_for_each_other(handover) -> None:
    ping = pipeline_job("ping", "/out/pong", "/out/ping")
    pong = pipeline_job("pong", "/out/ping", "/out/pong")
    store, target, state, executor, order = deploy_before({"ping": ping, "pong": pong})
    plan = plan_for(store, target, state, [changed(ping), changed(pong)], handover)
    for decision in plan.decisions:
        assert decision.after == () and decision.stop_after == ()
        assert "in a cycle of jobs (ping -> pong -> ping): ordered by name" in decision.reason
    results = executor.apply(plan)
    assert all(r.ok for r in results.values())
    each = ["start {} v2", "stop {}"] if handover == WARM else ["stop {}", "start {} v2"]
    assert order == [step.format(name) for name in ("ping", "pong") for step in each]


def test_interrupted_mid_chain_the_stopped_consumers_run_again_and_the_producer_is_not_begun():
    """Ctrl-C while the consumer stops: the producer (stopped only after its consumers) is not
    begun; the consumers already stopped are in flight, so each goes to the end of its steps:
    held back (its producer did not start), it runs again from its checkpoint."""
    jobs = {n: changed(j) for n, j in chain().items()}
    store, target, state, executor, order = deploy_before(chain())
    told = []

    def stopping(run) -> None:
        order.append(f"stop {run.name}")
        if run.name == CONSUMER:
            told.append(executor.interrupt())

    target.before_stop = stopping
    results = executor.apply(plan_for(store, target, state, jobs.values()))
    (in_flight, not_begun), *_ = told
    assert not_begun == [PRODUCER] and set(in_flight) == {CONSUMER, LAST}
    assert results[PRODUCER].outcome == "not-begun"
    assert [results[n].outcome for n in (CONSUMER, LAST)] == ["skipped", "skipped"]
    assert order == [
        f"stop {LAST}",
        f"stop {CONSUMER}",
        f"start {CONSUMER} v1",
        f"start {LAST} v1",
    ], "the producer is left running as it was; the consumers run v1 again"
    assert all(store.manifests[n].meta.query_version == 1 for n in jobs)
    assert store.data.side == {}, "no intent record is left"
    text = results_text(plan_for(store, target, state, jobs.values()), results)
    assert text.endswith(
        f"Deploy interrupted: 1 not begun ({PRODUCER}), 2 skipped ({LAST}, {CONSUMER}); "
        "deploy again to carry out the rest."
    )
