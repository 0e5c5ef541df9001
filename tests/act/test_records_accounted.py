"""Issue 52, every record accounted for, as a deploy carries a plan out on fakes: a new version
that committed a batch is never rolled back over (its records would be read twice), every step
after the old run stopped completes, is retried, or rolls back, and where a job is left down
the result says so in words."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.errors import StoreError
from flink_sql_runner.read.kafka_start import parse_kafka_start
from flink_sql_runner.stores.lock import Holder, StoreLock
from flink_sql_runner.stores.storage import StorageError
from flink_sql_runner.watch.status import status_rows
from tests.support.fakes import FakeClock
from tests.support.handover_world import KAFKA, KAFKA_V1, KAFKA_V2, Crash, World, kafka_checkpoint
from tests.support.jobs import BASE, ROOT, make_job

pytestmark = pytest.mark.fast

#: Where v2 read to when it committed its batches 0 to 3.
V2_ENDS = {"0": 20, "1": 25}
KAFKA_V3 = make_job(sql="SELECT id, ts FROM src WHERE id > 200", tables={"src": KAFKA})


def writes_then_fails(world: World, batches: int = 4) -> None:
    """v2's run commits `batches` batches into its checkpoint, then fails: its status says so
    (a run that fails on a later record). v1's runs are healthy."""

    def status(submission) -> str:
        return "failed" if submission.version == 2 else "active"

    def started(submission) -> None:
        if submission.version == 2:
            kafka_checkpoint(world.state, committed=batches - 1, version=2, ends=V2_ENDS)

    world.runner.status = status
    world.runner.on_start = started


def versions_started(world: World) -> list[int]:
    return [s.version for s in world.target.submissions]


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_new_version_that_committed_and_then_failed_is_recorded_not_rolled_back_over(handover):
    """Finding 1, no kill: v2 committed batches 0 to 3 (orders up to [0:20, 1:25]) and was not
    healthy. Before: "rolled back: v1 running again from its checkpoint", and v1 read again
    from [0:5, 1:7] everything v2 had written."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    writes_then_fails(world)
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert not result.ok and result.outcome == "failed", result
    assert not result.summary.startswith("rolled back")
    assert "v2 committed 4 batches (0 to 3), then failed" in result.summary, result.summary
    assert "not rolled back" in result.summary and "the job is down" in result.summary
    assert versions_started(world) == [2], "v1 was not started again"
    assert world.runs() == []
    assert world.store.manifests["orders"].meta.query_version == 2
    assert world.intent() is None


def test_a_restart_of_the_recorded_version_goes_on_from_its_own_checkpoint():
    """After finding 1's fix: the next deploy restarts v2 from v2's checkpoint; a further
    query change carries from where v2 finished, not from v1's end."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    writes_then_fails(world)
    world.deploy([KAFKA_V2], handover="cold")
    plan = world.plan([KAFKA_V2])
    assert plan.decisions[0].action is Action.RESTART, plan.decisions[0].reason
    plan = world.plan([KAFKA_V3])
    decision = plan.decisions[0]
    assert decision.action is Action.START_CLEAN and decision.version == 3, decision.reason
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    assert start.starting is not None and start.starting.version == 2


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_deployer_killed_after_the_start_leaves_a_version_that_wrote_recorded(handover):
    """Finding 1, killed: the deployer dies once v2 was submitted (cold) or given its go
    (warm); v2 commits batches 0 to 3 and fails. Before: the next deploy settled it as "not
    listed 400 s after it was submitted, never healthy" and started again from v1's offsets."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.on_start = lambda s: (_ for _ in ()).throw(Crash()) if s.version == 2 else None
    with pytest.raises(Crash):
        world.deploy([KAFKA_V2], handover=handover)
    intent = world.intent()
    assert intent is not None and intent.phase.submitted and intent.committed_before == -1
    # v2 commits four batches, then fails and is gone; much later, the next deploy
    kafka_checkpoint(world.state, committed=3, version=2, ends=V2_ENDS)
    status = f"{ROOT}/orders/_control/v2.status.json"
    run_id = intent.run_id
    world.state.files[status] = json.dumps({"run-id": run_id, "state": "failed", "error": "x"})
    world.target.runs.pop("orders", None)
    world.store.data.clock.now += 400
    plan = world.plan([KAFKA_V3])
    decision = plan.decisions[0]
    assert "v2 committed 4 batches (0 to 3), then its run ended" in decision.reason, decision
    assert decision.action is Action.START_CLEAN and decision.version == 3, decision.reason
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    assert start.starting is not None and start.starting.version == 2
    assert [type(s).__name__ for s in decision.steps[:2]] == ["Record", "DropIntent"]
    world.runner.on_start = None
    world.runner.status = "active"
    _, result = world.deploy([KAFKA_V3])
    assert result.ok, result
    assert "src starts at v2's batch 3: orders[0:20,1:25]" in result.steps
    assert world.store.manifests["orders"].meta.query_version == 3


def test_a_run_awaited_after_a_kill_that_commits_then_fails_is_not_rolled_back_over():
    """The interrupted deploy's v2 is up when the next deploy comes: it waits for it; v2
    commits, then fails. Its rollback (v1 from its checkpoint) is not carried out."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.on_start = lambda s: (_ for _ in ()).throw(Crash()) if s.version == 2 else None
    world.runner.status = lambda s: "starting" if s.version == 2 else "active"
    with pytest.raises(Crash):
        world.deploy([KAFKA_V2], handover="cold")
    intent = world.intent()
    status = f"{ROOT}/orders/_control/v2.status.json"

    def fails_after_writing(_run) -> None:
        kafka_checkpoint(world.state, committed=1, version=2, ends=V2_ENDS)
        world.state.files[status] = json.dumps(
            {"run-id": intent.run_id, "state": "failed", "error": "poison"}
        )

    world.target.before_stop = fails_after_writing  # the wait ends, the run is stopped
    world.runner.on_start = None
    world.runner.status = "active"
    plan, result = world.deploy([KAFKA_V2])
    assert plan.decisions[0].steps[0].to_dict()["step"] == "await"
    assert not result.ok and result.outcome == "failed", result
    assert "v2 committed 2 batches (0 to 1), then failed" in result.summary
    assert versions_started(world) == [2]
    assert world.store.manifests["orders"].meta.query_version == 2
    assert world.intent() is None


def test_a_new_version_that_committed_nothing_is_still_rolled_back():
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.status = lambda s: "failed" if s.version == 2 else "active"
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert result.outcome == "rolled-back", result
    assert versions_started(world) == [2, 1]
    assert world.store.manifests["orders"].meta.query_version == 1
    assert world.intent() is None


# -- finding 6: "now - 2 hours" on the store's clock -----------------------------------------
def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_now_minus_an_interval_is_made_a_time_on_the_store_s_clock():
    """Before: made a time with the deployer's clock, where every other time of the intent
    record uses the store's: a CI runner whose clock is off shifted the start silently. The
    store's clock here is 1,000,000 s after the epoch, the deployer's is today."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    store_now = world.store.data.clock()
    expected = int(store_now * 1000) - 3_600_000
    declared = parse_kafka_start("now - 1 hour")
    _, result = world.deploy([KAFKA_V2], handover="cold", kafka_start=declared)
    assert result.ok, result
    written = json.loads(world.state.files[f"{ROOT}/orders/_control/v2.manifest.json"])
    assert written["tables"]["src"]["start"]["options"]["startingTimestamp"] == str(expected)
    said = f"src starts from now - 1 hour ({iso(expected)}) (deploy --kafka-start)"
    assert said in result.steps, result.steps


def test_the_plan_shows_what_now_minus_comes_to_by_the_store_s_clock():
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    deployment = Deployment(
        Settings(kafka_start=parse_kafka_start("now - 1 hour")),
        store=world.store,
        target=world.target,
    )
    deployment.storage = world.state
    plan = deployment.plan([KAFKA_V2])
    [decision] = plan.decisions
    shown = iso(int(world.store.data.clock() * 1000) - 3_600_000)
    assert f"; src from now - 1 hour ({shown}) (deploy --kafka-start)" in decision.reason
    world.store.fail_clock = True  # the store's clock cannot be read: the deploy says so
    _, result = world.deploy([KAFKA_V2], kafka_start=parse_kafka_start("now - 1 hour"))
    assert not result.ok and "cannot read the store's clock" in result.summary, result
    assert "nothing was stopped or started" in result.summary
    assert world.runs() == ["old-run"] and world.target.submissions == []


# -- finding 4: every step after the old run stopped completes, is retried, or rolls back ----
def fails_when(world: World, phase: str, times: int, kind: str = "start") -> list[str]:
    """The store answers 503 to the first `times` writes of the intent record at `phase` (of a
    record of `kind`); the list says which were refused."""
    refused: list[str] = []

    def before(key: str, text: str) -> None:
        doc = json.loads(text) if key.startswith("_intents/") else {}
        if doc.get("phase") == phase and doc.get("kind") == kind and len(refused) < times:
            refused.append(phase)
            raise StoreError("cannot write memory://store/_intents: SlowDown (HTTP 503) (switch)")

    world.store.before_side_write = before
    return refused


@pytest.mark.parametrize("handover, phase", [("cold", "old-stopped"), ("warm", "submitted")])
def test_a_503_recording_the_stop_is_asked_again_and_the_change_completes(handover, phase):
    """Finding 4: one 503 on the intent record right after the old run stopped. Before: no
    rollback, the record deleted, the job down, and the error did not say so."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    refused = fails_when(world, phase, 1)
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert refused == [phase]
    assert result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2
    assert len(world.runs()) == 1 and world.runs() != ["old-run"]
    assert world.intent() is None and world.target.double_starts == []


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_store_that_takes_no_record_after_the_stop_leaves_the_job_down_and_says_so(handover):
    """The store fails for good once the old run stopped: nothing starts without its record
    (not even the rollback), the prepared run is told to end, and the result says the job is
    down in words."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    stopping = world.target.before_stop

    def store_fails(run) -> None:
        stopping(run)
        world.store.fail_writes = True

    world.target.before_stop = store_fails
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert not result.ok, result
    assert "the job is down: v1 was stopped and no run of it is up" in result.summary, result
    assert [s for s in world.target.submissions if not s.prepared] == []
    assert world.runs() == [] and world.target.double_starts == []
    if handover == "warm":
        assert [bool(word.get("abort")) for word in world.runner.words] == [True]
    world.store.fail_writes = False
    deployment = Deployment(Settings(), store=world.store, target=world.target)
    deployment.storage = world.state
    [row] = status_rows(deployment, [])
    assert row["health"] == "down" and row["stored-version"] == 1, row


def test_a_start_whose_record_the_store_refuses_is_rolled_back_once_it_answers():
    """The new start's record is refused four times (the write and its three retries), once the
    old run stopped: nothing new was submitted, so v1 is started again from its checkpoint,
    under a record of its own."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    refused = fails_when(world, "submitting", 4)
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert refused == ["submitting"] * 4
    assert result.outcome == "rolled-back", result
    assert result.summary.startswith("rolled back: v1 running again from its checkpoint")
    assert versions_started(world) == [1]
    assert world.store.manifests["orders"].meta.query_version == 1
    assert world.intent() is None


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_lease_lost_right_after_the_stop_says_the_job_is_down(handover):
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    clock = FakeClock()
    lease = StoreLock(world.store.lock, "deploy", ttl=60.0, clock=clock, sleep=clock.sleep)
    assert lease.try_acquire() is None
    stopping = world.target.before_stop

    def taken_over(run) -> None:
        stopping(run)
        world.store.lock.steal(Holder.me("deploy", 60))
        assert not lease.renew_once()

    world.target.before_stop = taken_over
    timeouts = Timeouts(start=30, stop=5, poll=1)
    executor = Executor(
        world.store, world.target, world.state, timeouts, clock, clock.sleep, lease=lease
    )
    result = executor.apply(world.plan([KAFKA_V2], handover))["orders"]
    assert not result.ok and "another deploy took it over" in result.summary
    assert "the job is down: v1 was stopped" in result.summary, result.summary
    assert "the deploy holding the store now, or the next, " in result.summary
    assert [s for s in world.target.submissions if not s.prepared] == []


# -- finding 5: an interrupted handover is finished before a change is planned on top of it --
def go_never_lands(world: World) -> None:
    """Every go word the storage is asked to take is refused (a 503, and at each retry), and
    the go file cannot be read back either: whether the go was given cannot be told."""
    heard = world.state.on_write

    def refuse(location: str, text: str) -> None:
        if location.endswith(".go.json") and '"go"' in text:
            del world.state.files[location]
            world.state.read_fails.add(location)
            raise StorageError(f"cannot write {location}: SlowDown (HTTP 503) (switch)")
        heard(location, text)

    world.state.on_write = refuse


def storage_answers_again(world: World, heard) -> None:
    world.state.on_write = heard
    world.state.read_fails.clear()


def test_a_change_on_top_of_a_handover_whose_go_never_came_starts_where_v1_stopped():
    """Deploy 1 (v1 to v2, warm) cannot give the go, nor read whether it landed: v1 stopped, v2
    prepared, waiting. Deploy 2
    carries a further change (v3). Before: planned from v2's empty checkpoint, refused ("v2
    committed no batch ... say where they start"), nothing stopped or started, v1 left down
    and v2 never given its go. v2 read nothing, so v3 starts where v1 finished."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write
    go_never_lands(world)
    _, result = world.deploy([KAFKA_V2])
    assert not result.ok, result
    assert "whether the prepared v2 had its go cannot be told" in result.summary, result
    prepared = world.target.submissions[0]
    assert world.runs() == [prepared.run_id]
    storage_answers_again(world, heard)
    plan = world.plan([KAFKA_V3])
    decision = plan.decisions[0]
    assert decision.action is Action.START_CLEAN and decision.version == 3, decision.reason
    assert "never had its go" in decision.reason, decision.reason
    assert [type(s).__name__ for s in decision.steps] == [
        "EndPrepared", "DropIntent", "StartRun", "Record"
    ]  # fmt: skip
    start = decision.steps[2]
    assert start.starting is not None and start.starting.version == 1
    _, result = world.deploy([KAFKA_V3])
    assert result.ok, result
    assert "src starts at v1's batch 4: orders[0:5,1:7]" in result.steps
    assert [bool(word.get("abort")) for word in world.runner.words] == [True]
    assert world.store.manifests["orders"].meta.query_version == 3
    assert len(world.runs()) == 1 and prepared.run_id not in world.runs()
    assert world.target.double_starts == [] and world.intent() is None


def test_the_same_change_again_gives_the_waiting_run_its_go():
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write
    go_never_lands(world)
    world.deploy([KAFKA_V2])
    storage_answers_again(world, heard)
    plan, result = world.deploy([KAFKA_V2])
    assert plan.decisions[0].steps[0].to_dict()["go"] is True
    assert result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2


def test_a_go_that_landed_though_its_answer_was_lost_is_not_taken_back():
    """The go word is on the storage (its answer was lost): v2 may have read; the next change
    is planned on top of v2 as before, never from v1's end."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write
    lost: list[str] = []

    def lands_then_fails(location: str, text: str) -> None:
        heard(location, text)
        if location.endswith(".go.json") and '"go"' in text:
            world.state.files[location] = text
            lost.append(location)
            raise StorageError(f"cannot write {location}: the connection broke (switch)")

    world.state.on_write = lands_then_fails
    world.deploy([KAFKA_V2])
    world.state.on_write = heard
    decision = world.plan([KAFKA_V3]).decisions[0]
    assert "never had its go" not in decision.reason
    assert not any(type(s).__name__ == "EndPrepared" for s in decision.steps)


def test_stop_after_a_version_that_wrote_records_that_version_not_the_one_before():
    """Finding 1 through `stop NAME`: the deployer died once v2 was submitted; v2 committed
    four batches and failed. Before: `stop` settled it on the listing alone ("never healthy"),
    recorded v1, and the next deploy resumed v1 over what v2 had written."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.on_start = lambda s: (_ for _ in ()).throw(Crash()) if s.version == 2 else None
    with pytest.raises(Crash):
        world.deploy([KAFKA_V2], handover="cold")
    kafka_checkpoint(world.state, committed=3, version=2, ends=V2_ENDS)
    world.target.runs.pop("orders", None)
    world.store.data.clock.now += 400
    [stopped] = stop_jobs(world.store, world.target, world.state, ["orders"], 5)
    assert stopped.outcome in ("stopped", "not-running"), stopped
    recorded = world.store.manifests["orders"]
    assert recorded.meta.query_version == 2 and recorded.job["desired-state"] == "stopped"
    world.runner.on_start = None
    plan = world.plan([KAFKA_V2])
    assert plan.decisions[0].action is Action.RESTART, plan.decisions[0].reason


# -- found by the simulation's two-step batches (seed 3861) ----------------------------------
def test_a_run_told_to_stop_by_a_stop_not_confirmed_is_stopped_and_started_again():
    """`stop orders` wrote the run's stop marker, but the kill after its timeout was not
    confirmed (the run was draining a long batch). Before: the next deploy dropped the stop's
    record ("v1 is still up") and left the run alone, exit 0; the run then ended by the marker
    left behind, and the job was down. Now the stop is finished and the job started again from
    its checkpoint."""
    world = World()
    world.target.stop_unconfirmed = True
    [stopped] = stop_jobs(world.store, world.target, world.state, ["orders"], 5)
    assert stopped.outcome == "failed", stopped
    assert world.intent() is not None and world.runs() == ["old-run"]
    world.target.stop_unconfirmed = False
    plan = world.plan([BASE])
    decision = plan.decisions[0]
    assert "told to stop" in decision.reason, decision.reason
    assert [type(s).__name__ for s in decision.steps] == [
        "DropIntent", "StopRun", "StartRun", "Record"
    ]  # fmt: skip
    _, result = world.deploy([BASE])
    assert result.ok, result
    assert len(world.runs()) == 1 and world.runs() != ["old-run"]
    assert world.intent() is None and world.target.double_starts == []


# -- the hostile review of issue 52 (each failed before its fix) ----------------------------
def pending_batch(world: World, version: int, batch: int) -> None:
    """The version's run planned `batch` (reading to [0:9, 1:9]) and stopped before it
    committed it."""
    line = json.dumps({"orders": {"0": 9, "1": 9}})
    world.state.files[f"{ROOT}/orders/{version}/offsets/{batch}"] = f"v1\n{{}}\n{line}"


def test_an_older_runner_s_sink_record_shifts_batch_ids_as_the_runner_reads_it():
    """Review 1: a checkpoint of an older runner keeps `{"sink-batch-offset": 5}` (its batches
    0..4 are the sink's 5..9). Before: read as no shift, the sink's id 5 (v1's batch 0) was
    taken for v1's pending batch 5, and v2 started after a batch nobody wrote."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    pending_batch(world, 1, 5)
    world.state.files[f"{ROOT}/orders/1/flink-sql-runner-sink.json"] = json.dumps(
        {"sink-batch-offset": 5, "sink-path": "/out"}
    )
    for sink_id in range(10):
        world.state.files[f"/out/_spark_metadata/{sink_id}"] = "v1"
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert result.ok, result
    assert "src starts at v1's batch 4: orders[0:5,1:7]" in result.steps, result.steps


@pytest.mark.parametrize("record", ["[]", '{"segments": 5}', '{"segments": [[0]]}', '"x"'])
def test_a_sink_record_of_another_shape_is_refused_in_words_and_rolled_back(record):
    """Review 4: JSON, but not the runner's record. Before: a Python error after v1 stopped
    ("unexpected error: AttributeError ..."), v1 left down without a word."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    pending_batch(world, 1, 5)
    world.state.files[f"{ROOT}/orders/1/flink-sql-runner-sink.json"] = record
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert result.outcome == "rolled-back", result
    assert "not a record of the sink's batches" in result.summary
    assert versions_started(world) == [1]


@pytest.mark.parametrize("record", ["[]", '{"segments": 5}'])
def test_a_sink_record_of_another_shape_is_that_job_s_problem_not_the_plan_s(record):
    """Review 4: the record of an interrupted start's version. Before: the whole plan (every
    job) failed with a Python error."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.on_start = lambda s: (_ for _ in ()).throw(Crash()) if s.version == 2 else None
    with pytest.raises(Crash):
        world.deploy([KAFKA_V2], handover="cold")
    world.target.runs.pop("orders", None)
    world.state.files[f"{ROOT}/orders/2/metadata"] = json.dumps({"id": "x"})
    pending_batch(world, 2, 0)
    world.state.files[f"{ROOT}/orders/2/flink-sql-runner-sink.json"] = record
    decision = world.plan([KAFKA_V2]).decisions[0]
    assert decision.action is Action.ERROR
    assert "not a record of the sink's batches" in decision.reason, decision.reason


def refused_four_times(world: World, phase: str, kind: str) -> list[str]:
    """The store refuses the record at `phase` of a record of `kind` four times: the write and
    each of its three retries."""
    return fails_when(world, phase, 4, kind)


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_failed_start_whose_failure_cannot_be_recorded_still_rolls_back(handover):
    """Review 5: v2 fails having written nothing; the store refuses its record at `failed`.
    Before: the store's error escaped, v1 left down, not a word of it."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.status = lambda s: "failed" if s.version == 2 else "active"
    refused = refused_four_times(world, "failed", "start")
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert len(refused) == 4
    assert result.outcome == "rolled-back", result
    assert len(world.runs()) == 1 and world.store.manifests["orders"].meta.query_version == 1


@pytest.mark.parametrize("handover", ["cold", "warm"])
@pytest.mark.parametrize("phase", ["intended", "submitting"])
def test_a_rollback_whose_record_is_refused_says_the_job_is_down(handover, phase):
    """Review 5: v2 fails having written nothing; the rollback's own record is refused, so
    nothing starts. Before: the store's error alone."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.status = lambda s: "failed" if s.version == 2 else "active"
    refused_four_times(world, phase, "rollback")
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert not result.ok and world.runs() == []
    assert "and the rollback failed too" in result.summary, result
    assert "the job is down: v1 was stopped and no run of it is up" in result.summary


def test_a_cold_start_after_a_prepared_run_gone_whose_record_is_refused_rolls_back():
    """Review 6: the prepared v2 ends before its go (its timeout), the deploy goes the cold
    way, and the store refuses that start's record: nothing new was submitted. Before: the
    record in memory named a phase the store never held, and the job was left down without a
    word."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    stopping = world.target.before_stop

    def prepared_ends_too(run) -> None:
        stopping(run)
        world.target.runs["orders"] = [r for r in world.target.runs.get("orders", [])
                                       if r.run_id == "old-run"]  # fmt: skip

    world.target.before_stop = prepared_ends_too
    refused_four_times(world, "submitting", "start")
    _, result = world.deploy([KAFKA_V2], handover="warm")
    assert result.outcome == "rolled-back", result
    assert [s.version for s in world.target.submissions if not s.prepared] == [1]
    assert world.store.manifests["orders"].meta.query_version == 1 and world.intent() is None


def test_status_says_down_while_a_prepared_run_waits_for_a_go_it_never_had():
    """Review 7: v1 stopped; the go's outcome could not be told, so the prepared v2 waits.
    Once its go file is read again, `status` says the job is down: the waiting run writes
    nothing. Before: `starting`, running."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write
    go_never_lands(world)
    world.deploy([KAFKA_V2])
    storage_answers_again(world, heard)
    deployment = Deployment(Settings(), store=world.store, target=world.target)
    deployment.storage = world.state
    [row] = status_rows(deployment, [])
    assert (row["health"], row["running"]) == ("down", False), row


def test_one_503_on_what_the_go_deletes_first_is_asked_again():
    """Review 8: the go deletes the version's old status file first; one 503 there. Before:
    not asked again, the job left down."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.state.delete_fails_once.add(f"{ROOT}/orders/_control/v2.status.json")
    _, result = world.deploy([KAFKA_V2], handover="warm")
    assert not world.state.delete_fails_once  # the 503 was answered
    assert result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2


@pytest.mark.parametrize("forged", [-5, True, 1.5])
def test_a_forged_committed_before_makes_the_record_unreadable(forged):
    """Review 10: a record whose committed-before is no batch (below -1, a boolean, a
    fraction). Before: taken as a number, nothing finished (-1) counted as batches written
    after it, and v2 recorded over v1."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.on_start = lambda s: (_ for _ in ()).throw(Crash()) if s.version == 2 else None
    with pytest.raises(Crash):
        world.deploy([KAFKA_V2], handover="cold")
    key = "_intents/orders.json"
    doc = json.loads(world.store.side[key])
    doc["committed-before"] = forged
    world.store.side[key] = json.dumps(doc)
    decision = world.plan([KAFKA_V2]).decisions[0]
    assert decision.action is Action.ERROR
    assert "is unreadable" in decision.reason and "committed-before" in decision.reason


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_one_503_recording_the_manifest_after_a_healthy_start_is_asked_again(handover):
    """Review 12: before, one 503 on the manifest's write failed the deploy while v2 ran."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    failed: list[int] = []

    def slow_down(manifest) -> None:
        if manifest.meta.query_version == 2 and not failed:
            failed.append(2)
            raise StoreError("cannot write memory://store/orders.yaml: SlowDown (HTTP 503)")

    world.store.before_write = slow_down
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert failed == [2] and result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2


def test_a_go_that_landed_with_every_answer_lost_is_read_back_and_the_change_completes():
    """Review 13: the go lands but every answer to it is lost. Before: "the prepared v2 has
    not had its go ... the job is down", while v2 ran. Now the go file is read back."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write

    def lands_then_fails(location: str, text: str) -> None:
        heard(location, text)
        if location.endswith(".go.json") and '"go"' in text:
            raise StorageError(f"cannot write {location}: the connection broke (switch)")

    world.state.on_write = lands_then_fails
    _, result = world.deploy([KAFKA_V2])
    assert result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_healthy_start_whose_healthy_phase_is_refused_is_recorded(handover):
    """Review 13: v2 is healthy; its record's `healthy` phase is refused four times. Before:
    "the job is down: ... the prepared v2 has not had its go" while v2 ran."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    refused_four_times(world, "healthy", "start")
    _, result = world.deploy([KAFKA_V2], handover=handover)
    assert result.ok, result
    assert world.store.manifests["orders"].meta.query_version == 2 and world.intent() is None


def test_a_now_minus_that_comes_to_before_1970_on_the_store_s_clock_is_refused_in_words():
    """Review 9: the store's clock here is 1,000,000 s after the epoch: `now - 30 days` comes to
    a time before 1970. Before: started with a negative startingTimestamp, which Kafka refuses,
    once v1 had stopped."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    declared = parse_kafka_start("now - 30 days")
    _, result = world.deploy([KAFKA_V2], handover="cold", kafka_start=declared)
    assert not result.ok and "comes to before 1970 by the store's clock" in result.summary
    assert world.runs() == ["old-run"] and world.target.submissions == []


def test_a_deploy_s_stop_not_confirmed_keeps_its_record_and_the_next_deploy_finishes_it():
    """Found by the simulation (seed 1680): a deploy's stop of v1 (for a change) wrote the stop
    marker, and the kill was not confirmed; the deploy deleted its intent record ("nothing new
    can exist"). The next deploy, planned with the job unchanged, left the run alone, exit 0,
    and the run then ended by the marker left behind. Now the record stays, and the next
    deploy stops the run it told to stop, then starts what the job wants."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.target.stop_unconfirmed = True
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert not result.ok and "cannot say it stopped" in result.summary, result
    intent = world.intent()
    assert intent is not None and intent.phase.value == "stopping"
    world.target.stop_unconfirmed = False
    decision = world.plan([KAFKA_V1]).decisions[0]
    assert "told to stop" in decision.reason, decision.reason
    assert [type(s).__name__ for s in decision.steps] == [
        "DropIntent", "StopRun", "StartRun", "Record"
    ]  # fmt: skip
    _, result = world.deploy([KAFKA_V1])
    assert result.ok, result
    assert len(world.runs()) == 1 and world.runs() != ["old-run"] and world.intent() is None
