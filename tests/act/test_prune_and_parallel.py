"""--prune for jobs whose manifest left --path; several jobs acted on at once."""

from __future__ import annotations

import json
import threading

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget, write_beacon
from tests.support.jobs import BASE, ROOT, make_job, stored_of


def world():
    store, target, state = FakeStore(), FakeTarget(), FakeStorage()

    def come_up(submission) -> None:
        state.files[submission.status_file] = json.dumps(
            {"run-id": submission.run_id, "state": "active"}
        )

    target.on_submit = come_up
    return store, target, state


def executor(store, target, state, parallelism=1):
    return Executor(
        store, target, state, Timeouts(start=30, stop=5, poll=0.01), parallelism=parallelism
    )


def test_orphans_are_left_alone_without_prune_and_archived_with_it():
    store, target, state = world()
    gone = make_job(name="gone")
    store.put(stored_of(gone, 3))
    target.add_run(Run("gone", 3, "r", "pid 9"))
    store.put(stored_of(BASE, 1))
    target.add_run(Run("orders", 1, "r", "pid 8"))

    plan = build_plan(gather([BASE], store, target, state))
    assert {d.name: d.action for d in plan.decisions} == {
        "gone": Action.ORPHANED,
        "orders": Action.NOOP,
    }
    assert not plan.pending
    executor(store, target, state).apply(plan)
    assert "gone" in store.manifests and "gone" in target.running

    beacon = write_beacon(state, ROOT, "gone", 3, "r")
    plan = build_plan(gather([BASE], store, target, state), prune=True)
    (gone_decision,) = [d for d in plan.decisions if d.name == "gone"]
    assert gone_decision.action is Action.PRUNE and gone_decision.version == 3
    assert "stop it with its checkpoint, archive its manifest" in gone_decision.reason
    results = executor(store, target, state).apply(plan)
    assert results["gone"].ok, results["gone"]
    assert target.stops == ["gone"] and "gone" not in target.running
    assert "gone" not in store.manifests and store.archived["gone"].meta.query_version == 3
    assert beacon not in state.files, "no watcher looks at a pruned job's beacon again"
    assert "orders" in target.running and "orders" in store.manifests


def test_a_stopped_orphan_is_archived_without_a_stop():
    store, target, state = world()
    store.put(stored_of(make_job(name="gone"), 1))
    plan = build_plan(gather([BASE], store, target, state), prune=True)
    results = executor(store, target, state).apply(plan)
    assert results["gone"].ok and target.stops == [] and "gone" in store.archived


def test_jobs_are_acted_on_concurrently_and_reported_in_plan_order():
    store, target, state = world()
    names = [f"job-{i}" for i in range(6)]
    both_in = threading.Barrier(3, timeout=10)
    seen: list[str] = []

    def submit_together(submission) -> None:
        seen.append(submission.name)
        both_in.wait()  # only passes when three submissions are in flight at once

    target.before_submit = submit_together
    jobs = [make_job(name=name) for name in reversed(names)]
    plan = build_plan(gather(jobs, store, target, state))
    results = executor(store, target, state, parallelism=3).apply(plan)
    assert list(results) == names
    assert all(r.ok for r in results.values()), results
    assert sorted(seen) == names and sorted(store.manifests) == names
    assert all(store.manifests[n].meta.query_version == 1 for n in names)
    assert all(f"{ROOT}/{n}/_control/v1.status.json" in state.files for n in names)
