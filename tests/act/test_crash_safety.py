"""A deployer killed at any moment: the next deploy converges. The job runs once, at the right
version, from the right state; no intent record is left behind.

A kill is simulated by a `Crash` (a BaseException, which nothing in the deployer catches) raised
from a fake at one step; the next deploy is a new Executor on the same store, cluster and storage.
"""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.errors import StoreError
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.intents import IntentLog, Kind
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import ANY
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, FakeRunner, stored_of


class Crash(BaseException):
    """The deployer process dies here."""


def crash(*_args, **_kwargs):
    raise Crash


class World:
    """Store, cluster and checkpoint storage that outlive any one deployer."""

    def __init__(self, handover: str = "warm") -> None:
        self.store, self.target, self.state = FakeStore(), FakeTarget(), FakeStorage()
        self.handover = handover
        # Like the runner: once its query starts, the first trigger completes and the
        # checkpoint becomes valid; a prepared run writes nothing before its go.
        self.runner = FakeRunner(self.state, self.target, on_start=self._first_batch)
        self._come_up = self.target.on_submit

    def _first_batch(self, submission) -> None:
        self.state.add_checkpoint(f"{ROOT}/{submission.name}/{submission.version}", 0)

    def deploy(self, jobs):
        clock = FakeClock()
        executor = Executor(
            self.store,
            self.target,
            self.state,
            timeouts=Timeouts(start=30, stop=5, poll=1),
            clock=clock,
            sleep=clock.sleep,
        )
        facts = gather(jobs, self.store, self.target, self.state, workers=1)
        plan = build_plan(facts, handover=self.handover)
        return plan, executor.apply(plan)

    def running_version(self, name: str) -> int | None:
        job = self.target.running.get(name)
        return job.version if job else None


def deployed(world: World, job, version: int) -> World:
    """`job` recorded at `version` and running, with a checkpoint."""
    world.store.put(stored_of(job, version))
    world.target.add_run(Run(job.name, version, "old-run", "fake 0"))
    world.state.add_checkpoint(f"{ROOT}/{job.name}/{version}", 7)
    return world


# (id, before, desired, expected version, expected description)
CHANGES = [
    ("new-job", None, BASE, 1),
    ("config-change", BASE, CONFIG, 1),
    ("query-change", BASE, QUERY, 2),
]
# Where the deployer dies.
KILL_POINTS = ["before-stop", "before-submit", "while-waiting-for-health", "before-record"]


def arm(world: World, point: str) -> None:
    if point == "before-stop":
        world.target.before_stop = crash
    elif point == "before-submit":
        world.target.before_submit = crash
    elif point == "while-waiting-for-health":
        world.target.on_submit = lambda submission: (world._come_up(submission), crash())
    elif point == "before-record":
        world.store.before_write = crash


def disarm(world: World) -> None:
    world.target.before_stop = world.target.before_submit = None
    world.target.on_submit = world._come_up
    world.store.before_write = None


@pytest.mark.parametrize("handover", ["cold", "warm"])
@pytest.mark.parametrize("point", KILL_POINTS)
@pytest.mark.parametrize(
    "before, desired, version", [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_killed_deploy_converges_on_the_next(before, desired, version, point, handover):
    world = World(handover)
    original = None
    if before is not None:
        original = deployed(world, before, 1).store.manifests[before.name].meta
    arm(world, point)
    try:
        world.deploy([desired])
    except Crash:
        pass
    disarm(world)

    warm = handover == "warm" and before is not None  # a new job has nothing to overlap
    plan, results = world.deploy([desired])
    if point == "before-submit" and not warm:
        # Submitting and not listed: the run may still show up until the target's submit
        # timeout has passed since that phase was written (on the store's clock). Warm, the
        # submission was a prepared run's, which writes nothing without its go and is told to
        # end: the next deploy goes on at once.
        assert not results[desired.name].ok
        assert "may still appear" in results[desired.name].summary
        assert world.target.submissions == [], "nothing started meanwhile"
        world.store.data.clock.sleep(world.target.submit_timeout)
        plan, results = world.deploy([desired])
    assert results[desired.name].ok, (plan.decisions[0], results[desired.name])

    stored = world.store.manifests[desired.name]
    assert stored.job == desired.spec, "the store records what git says"
    submitted = (*KILL_POINTS[:3],) if warm else ("before-submit",)
    if point in submitted and (version != 1 or before is None):
        version += 1  # a clean start's interrupted submission may still show up: v is spent
    assert stored.meta.query_version == version
    assert world.running_version(desired.name) == version, "it runs, at the right version"
    assert world.target.double_starts == [], "never started while a run was still up"
    assert world.store.side_but_history == {}, "no intent record left behind"
    if original is not None:
        same_query = stored.meta.query_id == original.query_id
        assert same_query == (version == original.query_version), "query id kept iff same version"

    again, _ = world.deploy([desired])
    assert [d.action for d in again.decisions] == [Action.NOOP], again.decisions[0].reason


def test_a_start_that_took_effect_is_recorded_without_a_second_start():
    world = deployed(World(), BASE, 1)
    world.store.before_write = crash
    with pytest.raises(Crash):
        world.deploy([QUERY])
    disarm(world)
    submissions = len(world.target.submissions)
    plan, results = world.deploy([QUERY])
    (decision,) = plan.decisions
    assert decision.action is Action.ADOPT
    assert "interrupted start of v2 (stop-and-start-clean, at healthy): its run is up " in (
        decision.reason
    )
    assert results["orders"].steps[0] == "recorded v2"
    assert len(world.target.submissions) == submissions, "no second start"
    assert world.store.side_but_history == {}
    [key] = world.store.history  # the killed deploy recorded nothing: only this deploy's
    assert key.startswith("_history/orders/v000002-")


def test_a_start_that_never_happened_is_dropped_and_done_again():
    world = deployed(World("cold"), BASE, 1)
    world.target.before_submit = crash
    with pytest.raises(Crash):
        world.deploy([QUERY])
    disarm(world)
    assert world.running_version("orders") is None  # stopped, then the deployer died
    plan, _ = world.deploy([QUERY])
    assert plan.decisions[0].action is Action.ERROR, "it may still show up: nothing is started"
    world.store.data.clock.sleep(world.target.submit_timeout)  # the store's clock moves on
    plan, results = world.deploy([QUERY])
    (decision,) = plan.decisions
    assert (decision.action, decision.version) == (Action.START_CLEAN, 3), "v2 is never reused"
    assert "not listed 300 s after it was submitted, never healthy" in decision.reason
    assert results["orders"].ok


def test_the_plan_only_reads_an_intent_record():
    world = deployed(World(), BASE, 1)
    world.store.before_write = crash
    with pytest.raises(Crash):
        world.deploy([CONFIG])
    disarm(world)
    side = dict(world.store.side)
    build_plan(gather([CONFIG], world.store, world.target, world.state, workers=1))
    assert world.store.side == side and world.store.manifests["orders"].job == BASE.spec


@pytest.mark.parametrize("desired", [QUERY, BASE], ids=["wants-v2", "wants-v1-query"])
def test_a_stop_that_failed_over_a_start_left_up_does_not_block_the_next_deploy(desired):
    """Seed 1007: a deploy dies while v2's run comes up (its start intent at submitted); `stop`
    takes that start's manifest as what to record stopped, writes its stop intent over the
    start's, and fails before it stopped anything. The stop intent carries v2 (stopped), the
    store v1, the run up is v2's: the next deploy completes the start (records v2 once healthy)
    and goes on from there, never with two runs."""
    world = deployed(World("cold"), BASE, 1)
    arm(world, "while-waiting-for-health")
    with pytest.raises(Crash):
        world.deploy([QUERY])
    disarm(world)
    assert (
        world.running_version("orders") == 2
        and world.store.manifests["orders"].meta.query_version == 1
    )
    real, writes = world.store.write_side, []

    def then_503(key, text, *, expected=ANY):
        if writes:
            raise StoreError("cannot write memory://store/: SlowDown (HTTP 503) (switch)")
        writes.append(text)
        return real(key, text, expected=expected)

    world.store.write_side = then_503
    [stop] = stop_jobs(world.store, world.target, world.state, ["orders"], 5)
    world.store.write_side = real
    assert stop.outcome == "failed", stop.message
    [intent] = IntentLog(world.store).read_all().intents.values()
    assert (intent.kind, intent.version) == (Kind.STOP, 2), "the start's record is gone"
    submissions = len(world.target.submissions)

    plan, results = world.deploy([desired])

    (decision,) = plan.decisions
    assert "interrupted start left up" in decision.reason
    assert results["orders"].ok, (decision, results["orders"])
    steps = results["orders"].steps
    assert [type(s).__name__ for s in decision.steps[:3]] == ["AwaitRun", "Record", "DropIntent"]
    assert len(steps) == len(decision.steps), "the plan shows exactly the steps carried out"
    assert steps[0].startswith("v2 (") and steps[0].endswith("became healthy")
    assert steps[1] == "recorded v2"
    assert world.target.double_starts == [], "never two runs"
    assert world.store.side_but_history == {}, "no intent record left behind"
    stored = world.store.manifests["orders"]
    assert stored.job == desired.spec, "the store records what git says, running"
    if desired is QUERY:
        assert decision.action is Action.ADOPT
        assert len(world.target.submissions) == submissions, "v2 is not started again"
        assert (stored.meta.query_version, world.running_version("orders")) == (2, 2)
    else:
        assert decision.action is Action.STOP_AND_START_CLEAN
        assert (stored.meta.query_version, world.running_version("orders")) == (3, 3)
    again, _ = world.deploy([desired])
    assert [d.action for d in again.decisions] == [Action.NOOP], again.decisions[0].reason


# -- a stateful query reverted after an interrupted start (decide/state.py) ----------------------


def _stateful_deploy(world: World, job):
    """As Deployment does it: facts, their state facts (`state_base`), the plan, its steps; the
    probe answers a windowed count for every query."""
    from flink_sql_runner.decide.state import state_base
    from flink_sql_runner.gather.schemas import with_contracts
    from flink_sql_runner.model.lineage import plan_lineage
    from tests.support.stateful import op

    def ask(request):
        def ops(doc):  # the probe's answer: what the query aggregates
            return {
                "operators": [op(value="sum(id)" if "sum(id)" in json.dumps(doc) else "count(*)")]
            }

        return {"state": {s["key"]: ops(s) for s in request.get("state", [])}}, None

    facts = gather([job], world.store, world.target, world.state, workers=1)
    facts = with_contracts(facts, plan_lineage(facts), world.state, None, ask, state_base)
    plan = build_plan(facts, handover=world.handover)
    clock = FakeClock()
    executor = Executor(world.store, world.target, world.state,
                        timeouts=Timeouts(start=30, stop=5, poll=1), clock=clock,
                        sleep=clock.sleep)  # fmt: skip
    return plan, executor.apply(plan)


def test_a_stateful_query_reverted_after_its_change_was_cut_short_is_judged_against_the_run():
    """v2 (a sum, on-state-change: partial) is started and the deploy dies before recording it;
    the job file goes back to v1's count, whose job does not accept partial windows: the next
    deploy adopts v2 and would start v3 over it, so the change is judged against v2's query,
    not the stored v1 it equals (before: no state gathered, v3 started empty, exit 0)."""
    from tests.support.jobs import make_job
    from tests.support.stateful import COUNT, RATE, SUMS

    v1 = make_job(sql=COUNT, tables={"src": dict(RATE)})
    v2 = make_job(sql=SUMS, tables={"src": dict(RATE)}, **{"on-state-change": "partial"})
    world = deployed(World("cold"), v1, 1)
    world.store.before_write = crash
    with pytest.raises(Crash):
        _stateful_deploy(world, v2)
    disarm(world)
    assert world.running_version("orders") == 2
    plan, _ = _stateful_deploy(world, v1)
    (decision,) = plan.decisions
    assert decision.action is Action.REFUSED and decision.state.refused, decision.reason
    assert world.running_version("orders") == 2
