"""Jobs that hand sinks to each other in one deploy: two that swap sinks, three that pass them
round. Each job starts into a sink only once its old writer let go of it, and no job waits for
another in a circle: one waits for the other's stops only, and that one has no rollback into
the sink it gave away."""

from __future__ import annotations

import json

from flink_sql_runner.decide.decisions import Decision, Plan
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.plan import plan_json, plan_text
from tests.support.graphs import pipeline_job
from tests.support.jobs import ROOT, SINK, fake_world, make_job, stored_of


def writing(name: str, path: str) -> Job:
    return make_job(name=name, tables={"out": {**SINK, "options": {"path": path}}})


def plan_of(before: dict[str, Job], now: list[Job]) -> Plan:
    """The plan for `now`, with each job of `before` stored as v1 and running."""
    store, target, state, _ = fake_world()
    for name, job in before.items():
        store.put(stored_of(job, 1))
        target.add_run(Run(name, 1, f"old-{name}", f"pid {len(name)}"))
        state.add_checkpoint(f"{ROOT}/{name}/1", 5)
    return build_plan(gather(now, store, target, state, workers=1))


def waits_in_a_circle(decisions: dict[str, Decision]) -> bool:
    """Whether the executor would find jobs waiting for each other. Each job has two parts,
    its stops and its starts: its starts wait for its own stops, for the whole decisions of
    `after`, and for the stops of `after_stops`; its stops wait for the stops of `stop_after`."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name, d in decisions.items():
        edges[(name, "starts")] = [
            (name, "stops"),
            *((a, "starts") for a in d.after),
            *((a, "stops") for a in d.after_stops),
        ]
        edges[(name, "stops")] = [(a, "stops") for a in d.stop_after]
    state: dict[tuple[str, str], str] = {}

    def circles(node: tuple[str, str]) -> bool:
        if state.get(node) == "open":
            return True
        if node in state:
            return False
        state[node] = "open"
        found = any(circles(n) for n in edges.get(node, []) if n[0] in decisions)
        state[node] = "closed"
        return found

    return any(circles(node) for node in list(edges))


SWAP_BEFORE = {"a": writing("a", "/out/x"), "b": writing("b", "/out/y")}
SWAP_NOW = [writing("a", "/out/y"), writing("b", "/out/x")]


def test_two_jobs_that_swap_sinks_wait_for_each_others_stops_not_in_a_circle() -> None:
    plan = plan_of(SWAP_BEFORE, SWAP_NOW)
    by_name = {d.name: d for d in plan.decisions}
    assert not waits_in_a_circle(by_name)
    a, b = by_name["a"], by_name["b"]
    # a starts into y once b has stopped; b starts into x once a is done (started or rolled
    # back into x); b cannot roll back into y, which a writes by then.
    assert (a.after, a.after_stops) == ((), ("b",))
    assert (b.after, b.after_stops) == (("a",), ())
    assert a.rollback and not b.rollback
    assert "no rollback: if the new run is not healthy, it stays stopped" in b.reason
    assert "a takes over folder /out/y once it has stopped" in b.reason
    assert a.why_after["b"] == "the writer of folder /out/y until now"


def test_the_plan_says_which_job_starts_once_another_has_stopped() -> None:
    plan = plan_of(SWAP_BEFORE, SWAP_NOW)
    text = plan_text(plan)
    # a's new run is prepared beside its old one (nothing written), its go waits for b's stop.
    assert "starts once b has stopped: do: prepare v2 clean in /ckpt/a/2 while v1 runs" in text
    assert "then stop v1 (pid 1), then go: the prepared v2 starts its query" in text
    assert "after a: do: stop v1 (pid 1), then start v2 clean" in text
    jobs = {j["name"]: j for j in json.loads(plan_json(plan))["jobs"]}
    assert jobs["a"]["after-stops"] == ["b"] and "after" not in jobs["a"]
    assert jobs["b"]["after"] == ["a"] and jobs["b"]["rollback"] == []
    assert "Starts once `b` has stopped: steps, in order:" in plan_markdown(plan)


def test_three_jobs_passing_sinks_round_start_one_after_another() -> None:
    before = {n: writing(n, f"/out/{n}") for n in "abc"}
    now = [writing("a", "/out/b"), writing("b", "/out/c"), writing("c", "/out/a")]
    by_name = {d.name: d for d in plan_of(before, now).decisions}
    assert not waits_in_a_circle(by_name)
    assert by_name["a"].after_stops == ("b",) and not by_name["a"].after
    assert by_name["c"].after == ("a",) and by_name["b"].after == ("c",)
    assert [n for n, d in by_name.items() if not d.rollback] == ["b"]


def test_the_lineage_order_holds_in_a_swap() -> None:
    """a reads what b writes: b starts first, so a starts after b's whole decision as the
    lineage wants; b then waits only for a's stops and a has no rollback."""
    before = {
        "a": pipeline_job("a", "/out/b-in", "/out/x"),
        "b": pipeline_job("b", "/in", "/out/y"),
    }
    now = [pipeline_job("a", "/out/x", "/out/y"), pipeline_job("b", "/in", "/out/x")]
    by_name = {d.name: d for d in plan_of(before, now).decisions}
    assert not waits_in_a_circle(by_name)
    assert by_name["a"].after == ("b",) and by_name["a"].why_after["b"].startswith("writes")
    assert by_name["b"].after_stops == ("a",) and not by_name["b"].after
    assert not by_name["a"].rollback and by_name["b"].rollback


def test_a_sink_taken_from_a_job_that_moves_on_still_waits_for_its_whole_decision() -> None:
    """Without a circle the newcomer waits for the old writer's whole decision, which keeps
    its rollback: a failed move rolls back into the sink and holds the newcomer back."""
    by_name = {
        d.name: d
        for d in plan_of(
            {"a": writing("a", "/out/x")}, [writing("a", "/out/y"), writing("n", "/out/x")]
        ).decisions
    }
    assert by_name["n"].after == ("a",) and not by_name["n"].after_stops
    assert by_name["a"].rollback


def test_a_stopped_job_whose_sink_moved_in_git_lets_another_job_take_its_old_sink():
    """Found by the simulation (seed 433 on the fixed code): `a` was recorded stopped while it
    wrote folder /out/b; git now keeps it stopped, writing /out/a, and gives /out/b to `b`. Before,
    `b` was refused on every deploy ("would write folder /out/b, which job a ... writes")."""
    from flink_sql_runner.decide.decisions import Action
    from flink_sql_runner.decide.plan import build_plan
    from flink_sql_runner.gather.facts import gather
    from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
    from tests.support.jobs import BASE, ROOT, make_job, stored_of

    def tables(path):
        return {"src": BASE.tables["src"], "out": {"format": "parquet", "options": {"path": path}}}

    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    stopped = {"desired-state": "stopped"}
    store.put(stored_of(make_job(name="a", tables=tables("/out/b"), **stopped), 1))
    storage.add_checkpoint(f"{ROOT}/a/1", 3)
    a = make_job(name="a", tables=tables("/out/a"), **stopped)
    b = make_job(name="b", tables=tables("/out/b"))
    plan = build_plan(gather([a, b], store, target, storage, workers=1))
    actions = {d.name: d.action for d in plan.decisions}
    assert actions == {"a": Action.NOOP, "b": Action.START_CLEAN}, plan.decisions


def test_an_interrupted_start_that_took_effect_moves_its_jobs_claim_to_its_new_sink():
    """Found by the simulation (seeds 4, 10, 99 on the fixed code): `b`'s deploy moved it from
    /out/a to /out/b, its new run is up, and the record is missing (the deployer died). The
    next deploy records it; meanwhile `a` may take /out/a. Before, the stored (old) manifest's
    sink counted, and `a` was refused on every deploy."""
    from flink_sql_runner.decide.decisions import Action
    from flink_sql_runner.decide.plan import build_plan
    from flink_sql_runner.gather.facts import gather
    from flink_sql_runner.model.intents import IntentLog, Phase, new_intent
    from flink_sql_runner.model.runs import Run
    from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
    from tests.support.jobs import BASE, ROOT, make_job, stored_of

    def tables(path):
        return {"src": BASE.tables["src"], "out": {"format": "parquet", "options": {"path": path}}}

    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(make_job(name="b", tables=tables("/out/a")), 1))
    b = make_job(name="b", tables=tables("/out/b"))
    IntentLog(store).write(new_intent(stored_of(b, 2), "start-clean", "run-2").at(Phase.HEALTHY))
    target.add_run(Run("b", 2, "run-2", "pid 2"))
    storage.add_checkpoint(f"{ROOT}/b/2", 3)
    a = make_job(name="a", tables=tables("/out/a"))
    plan = build_plan(gather([a, b], store, target, storage, workers=1))
    actions = {d.name: d.action for d in plan.decisions}
    assert actions == {"a": Action.START_CLEAN, "b": Action.ADOPT}, plan.decisions


def test_a_first_version_not_yet_recorded_keeps_its_sink_from_another_job_with_an_error():
    """Found by the simulation (seed 394, tests/simulation/windows.py): `b`'s first version
    started into /out/a and its deployer died before recording it; `a` wants /out/a. The plan
    refuses `a` (b's run writes it); before, saying so read b's stored manifest, which it has
    none of, and the deploy ended with a traceback."""
    from flink_sql_runner.decide.decisions import Action
    from flink_sql_runner.decide.plan import build_plan
    from flink_sql_runner.gather.facts import gather
    from flink_sql_runner.model.intents import IntentLog, Phase, new_intent
    from flink_sql_runner.model.runs import Run
    from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
    from tests.support.jobs import BASE, ROOT, make_job, stored_of

    def tables(path):
        return {"src": BASE.tables["src"], "out": {"format": "parquet", "options": {"path": path}}}

    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    b = make_job(name="b", tables=tables("/out/a"))
    IntentLog(store).write(new_intent(stored_of(b, 1), "start-clean", "run-1").at(Phase.HEALTHY))
    target.add_run(Run("b", 1, "run-1", "pid 1"))
    storage.add_checkpoint(f"{ROOT}/b/1", 3)
    a = make_job(name="a", tables=tables("/out/a"))
    plan = build_plan(gather([a, b], store, target, storage, workers=1))
    decisions = {d.name: d for d in plan.decisions}
    assert decisions["a"].action is Action.ERROR
    assert "which job b (v1, its start not yet recorded, running" in decisions["a"].reason
    assert decisions["b"].action is Action.ADOPT
