"""Two jobs that swap sinks converge in one deploy, at any --parallelism, and at no moment do two
runs write one sink: not when both go well, nor when a stop or a start of either fails."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.warm import DEFAULT_HANDOVER, HANDOVERS
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from flink_sql_runner.read.manifest import Job
from tests.support.jobs import ROOT, SINK, FakeRunner, fake_world, make_job, stored_of


def writing(name: str, path: str) -> Job:
    return make_job(name=name, tables={"out": {**SINK, "options": {"path": path}}})


SWAP = {"a": ("/out/x", "/out/y"), "b": ("/out/y", "/out/x")}


class SwapWorld:
    """Each job of `sinks` runs v1 writing its first folder; the deploy moves it to its second
    (by default a writes /out/x and b /out/y, and they swap). Every run that begins to write
    (at its submit, or warm at its go) checks that no other run still listed writes the sink
    it will write (`collisions` stays empty); the jobs in `failing` start runs that fail
    before their first batch."""

    def __init__(
        self,
        parallelism: int,
        failing: tuple[str, ...] = (),
        sinks: dict[str, tuple[str, str]] = SWAP,
        handover: str = DEFAULT_HANDOVER,
    ):
        self.moves, self.handover = sinks, handover
        self.store, self.target, self.state, self.executor = fake_world(on_submit=None)
        self.executor.parallelism = parallelism
        self.sinks: dict[str, str] = {}  # run id: the folder it writes
        self.collisions: list[str] = []
        self.events: list[str] = []
        for name, (path, _) in sinks.items():
            self.store.put(stored_of(writing(name, path), 1))
            self.target.add_run(Run(name, 1, f"old-{name}", f"pid {len(self.sinks) + 1}"))
            self.state.add_checkpoint(f"{ROOT}/{name}/1", 5)
            self.sinks[f"old-{name}"] = path
        self.failing = failing
        self.runner = FakeRunner(self.state, self.target, self.status_of, on_start=self.writes)
        self.target.before_submit = self.note_sink
        self.target.before_stop = lambda run: self.events.append(f"stop {run.name}")

    def sink_of(self, submission) -> str:
        runtime = json.loads(self.state.files[submission.runtime_manifest])
        return runtime["tables"][runtime["target-table"]]["options"]["path"]

    def note_sink(self, submission) -> None:
        self.sinks[submission.run_id] = self.sink_of(submission)

    def writes(self, submission) -> None:
        sink = self.sinks[submission.run_id]
        self.events.append(f"start {submission.name} v{submission.version} into {sink}")
        for runs in self.target.runs.values():
            for run in runs:
                if str(run.run_id) in (submission.run_id, *self.runner.waiting):
                    continue  # itself, or a prepared run, which writes nothing
                if self.sinks.get(str(run.run_id)) == sink:
                    self.collisions.append(
                        f"{submission.name} v{submission.version} into {sink} while "
                        f"{run.name} v{run.version} writes it"
                    )

    def status_of(self, submission) -> str:
        failed = submission.name in self.failing and submission.version == 2
        return "failed" if failed else "active"

    def deploy(self):
        facts = gather(
            [writing(name, path) for name, (_, path) in self.moves.items()],
            self.store,
            self.target,
            self.state,
            workers=1,
        )
        return self.executor.apply(build_plan(facts, handover=self.handover))

    def writing_now(self) -> dict[str, str]:
        """Each job that runs, with the folder it writes."""
        return {
            name: self.sinks[str(run.run_id)]
            for name, runs in self.target.runs.items()
            for run in runs
        }


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_two_jobs_swap_sinks_in_one_deploy(parallelism: int, handover: str) -> None:
    world = SwapWorld(parallelism, handover=handover)
    results = world.deploy()
    assert all(r.ok for r in results.values()), results
    assert world.writing_now() == {"a": "/out/y", "b": "/out/x"}
    assert {n: m.meta.query_version for n, m in world.store.manifests.items()} == {"a": 2, "b": 2}
    assert world.store.manifests["a"].tables["out"]["options"]["path"] == "/out/y"
    assert world.collisions == [] and world.target.double_starts == []
    # a starts once b stopped; b once a is healthy
    assert sorted(world.events[:2]) == ["stop a", "stop b"]
    assert world.events[2:] == ["start a v2 into /out/y", "start b v2 into /out/x"]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_the_first_to_start_fails_rolls_back_and_holds_the_other_back(
    parallelism: int, handover: str
) -> None:
    world = SwapWorld(parallelism, failing=("a",), handover=handover)
    results = world.deploy()
    assert results["a"].outcome == "rolled-back", results["a"]
    assert results["b"].outcome == "skipped" and "held back, a" in results["b"].summary
    assert "it stays stopped" in results["b"].summary
    assert world.writing_now() == {"a": "/out/x"}
    assert world.collisions == []


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_the_second_to_start_fails_and_stays_stopped_its_old_sink_taken(
    parallelism: int, handover: str
) -> None:
    world = SwapWorld(parallelism, failing=("b",), handover=handover)
    results = world.deploy()
    assert results["a"].ok
    assert results["b"].outcome == "failed", results["b"]
    assert world.writing_now() == {"a": "/out/y"}
    assert world.collisions == []
    assert world.store.manifests["a"].meta.query_version == 2


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_a_stop_that_fails_holds_the_taker_back_and_its_old_run_starts_again(
    parallelism: int, handover: str
) -> None:
    world = SwapWorld(parallelism, handover=handover)

    def b_cannot_confirm(run) -> None:
        world.events.append(f"stop {run.name}")
        if run.name == "b":
            world.target.unknown.add("b")  # the cluster cannot say whether it stopped

    world.target.before_stop = b_cannot_confirm
    results = world.deploy()
    assert not results["b"].ok and results["b"].outcome == "failed"
    assert results["a"].outcome == "skipped"
    assert "held back, b (the writer of folder /out/y until now) did not stop" in (
        results["a"].summary
    )
    assert "v1 running again from its checkpoint" in results["a"].summary
    assert world.writing_now() == {"a": "/out/x", "b": "/out/y"}
    assert world.collisions == []
    assert [e for e in world.events if e.startswith("start")] == ["start a v1 into /out/x"]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_a_failed_stop_of_the_first_holds_the_second_back(parallelism: int, handover: str) -> None:
    world = SwapWorld(parallelism, handover=handover)

    def a_cannot_confirm(run) -> None:
        world.events.append(f"stop {run.name}")
        if run.name == "a":
            world.target.unknown.add("a")

    world.target.before_stop = a_cannot_confirm
    results = world.deploy()
    assert results["a"].outcome == "failed"
    assert results["b"].outcome == "skipped"
    assert world.collisions == []
    assert not any(e.startswith("start b v2") for e in world.events)


@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.parametrize("handover", HANDOVERS)
def test_three_jobs_passing_sinks_round_change_over_in_one_deploy(
    parallelism: int, handover: str
) -> None:
    world = SwapWorld(
        parallelism,
        handover=handover,
        sinks={"a": ("/out/a", "/out/b"), "b": ("/out/b", "/out/c"), "c": ("/out/c", "/out/a")},
    )
    results = world.deploy()
    assert all(r.ok for r in results.values()), results
    assert world.writing_now() == {"a": "/out/b", "b": "/out/c", "c": "/out/a"}
    assert world.collisions == []
    starts = [e for e in world.events if e.startswith("start")]
    assert starts == ["start a v2 into /out/b", "start c v2 into /out/a", "start b v2 into /out/c"]
