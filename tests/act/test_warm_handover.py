"""A warm handover on fakes: the new run is prepared beside the old one, the old one stops only
once the new one is ready, and the go is given only once the old one is confirmed gone. A new
run that cannot be prepared leaves the old one untouched; one that never reports falls back to
the cold way; a deployer killed at any step leaves nothing that writes twice, and the next
deploy converges."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.act.runs import RunControl, Timeouts
from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import PrepareRun, StartRun
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.intents import Phase
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import StorageError
from tests.support.fakes import FakeClock, FakeStorage, FakeTarget
from tests.support.handover_world import KAFKA_V1, KAFKA_V2, Crash, World, kafka_checkpoint
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, fake_executor, stored_of


def kinds(plan) -> list[str]:
    return [type(step).__name__ for step in plan.decisions[0].steps]


@pytest.mark.parametrize(
    ("job", "action", "version"),
    [(CONFIG, Action.STOP_AND_RESTART, 1), (QUERY, Action.STOP_AND_START_CLEAN, 2)],
)
def test_a_change_prepares_the_new_run_stops_the_old_then_gives_the_go(job, action, version):
    world = World()
    plan = world.plan([job])
    decision = plan.decisions[0]
    assert decision.action is action
    assert kinds(plan) == ["PrepareRun", "StopRun", "StartRun", "Record"]
    prepare, _, go = decision.steps[:3]
    assert isinstance(prepare, PrepareRun) and prepare.beside == 1
    assert isinstance(go, StartRun) and go.prepared
    assert prepare.describe().startswith(f"prepare v{version} ")
    assert "while v1 runs" in prepare.describe()
    assert go.describe() == f"go: the prepared v{version} starts its query"
    assert go.to_dict()["prepared"] is True and prepare.to_dict()["step"] == "prepare"

    _, result = world.deploy([job])
    assert result.ok, result
    assert world.events == ["submit prepared", "stop old-run"]
    assert [word.get("go") for word in world.runner.words] == [True]
    assert world.target.double_starts == []
    assert world.store.manifests["orders"].meta.query_version == version
    assert world.intent() is None
    assert len(world.runs()) == 1 and world.runs() != ["old-run"]
    assert any(line.startswith(f"prepared v{version} in ") for line in result.steps)
    submission = world.target.submissions[0]
    assert submission.prepared and submission.app_name == f"flink-sql-runner-orders-v{version}"
    runtime = json.loads(world.state.files[submission.runtime_manifest])
    control = f"{ROOT}/orders/_control/v{version}.prepared-{submission.run_id[:8]}"
    assert runtime["prepare"]["go-file"] == f"{control}.go.json"
    assert submission.runtime_manifest == f"{control}.manifest.json"
    assert runtime["status-file"] == f"{ROOT}/orders/_control/v{version}.status.json"
    assert "spark.sql.shuffle.partitions" in runtime["prepare"]["pinned-settings"]
    assert runtime["prepare"]["warm-up-seconds"] == 7.5, "a quarter of the 30 s it has"


def test_cold_is_the_default_and_a_job_may_choose_either_way():
    world = World()
    assert kinds(world.plan([CONFIG], handover="cold")) == ["StopRun", "StartRun", "Record"]
    warm_job = type(CONFIG)(**{**CONFIG.__dict__, "spec": {**CONFIG.spec, "handover": "warm"}})
    assert kinds(world.plan([warm_job], handover="cold"))[0] == "PrepareRun"
    cold_job = type(CONFIG)(**{**CONFIG.__dict__, "spec": {**CONFIG.spec, "handover": "cold"}})
    assert kinds(world.plan([cold_job], handover="warm"))[0] == "StopRun"
    assert build_plan([]).decisions == ()


def test_a_new_run_that_cannot_start_never_touches_the_old_one():
    world = World(prepared="failed", error="[UNRESOLVED_COLUMN] `banana` cannot be resolved")
    _, result = world.deploy([CONFIG])
    assert not result.ok and result.outcome == "failed"
    assert result.summary == (
        "pre-flight failed: [UNRESOLVED_COLUMN] `banana` cannot be resolved; v1 untouched, "
        "still running"
    )
    assert world.events == ["submit prepared"]  # the abort word ended it: no kill needed
    assert [word.get("abort") for word in world.runner.words] == [
        "[UNRESOLVED_COLUMN] `banana` cannot be resolved"
    ]
    assert world.runs() == ["old-run"]
    assert world.store.manifests["orders"].job["description"] == BASE.spec["description"]
    assert world.intent() is None


@pytest.mark.parametrize("said", [None, "preparing"])
def test_a_new_run_not_ready_in_time_is_stopped_and_the_change_goes_the_cold_way(said):
    world = World(prepared=said)  # never placed; or placed, its executors never
    _, result = world.deploy([CONFIG])
    assert result.ok, result
    if said is None:  # never placed, it reads nothing: killed at once, not after 5 s
        prepared_id = world.target.submissions[0].run_id
        assert world.events == ["submit prepared", f"stop {prepared_id}", "stop old-run", "submit"]
        assert world.target.stop_timeouts == [0.0, 5.0]
    else:  # it reads the abort word and ends by itself
        assert world.events == ["submit prepared", "stop old-run", "submit"]
        assert [bool(word.get("abort")) for word in world.runner.words] == [True]
    assert any("handing over the cold way" in line for line in result.steps)
    assert world.target.double_starts == []
    assert world.store.manifests["orders"].job["description"] == CONFIG.spec["description"]
    prepared, cold = world.target.submissions
    assert prepared.prepared and not cold.prepared
    assert cold.run_id != prepared.run_id, "the cold start is judged by a run id of its own"


def test_the_prepare_timeout_ends_the_wait_for_a_run_never_placed_before_the_start_timeout():
    world = World(prepared=None)
    clock_at: list[float] = []
    submit = world.target.on_submit

    def at(submission):
        clock_at.append(executor_clock())
        submit(submission)

    world.target.on_submit = at
    executor = fake_executor(world.store, world.target, world.state,
                             Timeouts(start=30, stop=5, poll=1, prepare=3))  # fmt: skip
    executor_clock = executor.runs.clock
    result = executor.apply(world.plan([CONFIG]))["orders"]
    assert result.ok, result
    # 3 s, and the 0.75 s its warm-up may take on top
    assert any("did not report (no room for a second driver?) within 3.8 s" in line
               for line in result.steps), result.steps  # fmt: skip
    assert clock_at[1] - clock_at[0] < 5, "the cold start began 3.75 s after, not 30"
    prepared = json.loads(world.state.files[world.target.submissions[0].runtime_manifest])
    assert prepared["prepare"]["timeout-seconds"] == 30 + 2 * 5 + 60, "its go waits as long"
    assert prepared["prepare"]["warm-up-seconds"] == 0.75, "a quarter of the 3 s it has"


@pytest.mark.parametrize(("given", "sent"), [(None, 20.0), (0, 0), (7.5, 7.5), (400, 400)])
def test_the_warm_up_is_as_given_or_a_quarter_of_the_time_to_be_ready(given, sent):
    assert Timeouts(warm=given).warm_up == sent
    assert Timeouts(prepare=40, warm=given).warm_up == (10 if given is None else given)


def test_the_warm_up_is_waited_for_on_top_of_the_prepare_timeout():
    """A run that prepares in most of its prepare timeout, then warms up for its warm-up's
    time, is ready in time: the warm-up is not taken out of that time (review of issue 57:
    with a 3 s prepare timeout such a run went the cold way)."""
    world = World(prepared=None)  # it reports only when the clock says
    executor = fake_executor(world.store, world.target, world.state,
                             Timeouts(start=30, stop=5, poll=1, prepare=3, warm=2))  # fmt: skip
    clock, sleep = executor.runs.clock, executor.runs.sleep

    def later(seconds: float) -> None:
        sleep(seconds)
        if clock() >= 4.5 and world.target.submissions:  # prepared in 2.5 s, warmed up in 2
            submission = world.target.submissions[0]
            world.runner.prepared = "ready"
            world.runner._report(submission.status_file, submission.run_id, "ready")

    executor.runs.sleep = later
    result = executor.apply(world.plan([CONFIG]))["orders"]
    assert result.ok, result
    assert not any("cold way" in line for line in result.steps), result.steps
    assert [s.prepared for s in world.target.submissions] == [True]


def test_a_deployer_killed_after_a_cold_fallback_s_submit_leaves_a_record_of_the_cold_run():
    """The record the next deploy settles from names the run the cold way started: not the
    prepared run (killed, but a cluster may list it under its id), not its submission."""
    world = World(prepared=None)
    runner_starts = world.target.on_submit

    def crash(submission):
        runner_starts(submission)
        if not submission.prepared:
            raise Crash

    world.target.on_submit = crash
    with pytest.raises(Crash):
        world.deploy([CONFIG])
    prepared, cold = world.target.submissions
    intent = world.intent()
    assert intent is not None and intent.phase is Phase.SUBMITTING
    assert (intent.run_id, intent.prepared, intent.submission_id) == (cold.run_id, False, None)
    world.target.on_submit = runner_starts
    _, result = world.deploy([CONFIG])
    assert result.ok, result
    assert world.runs() == [cold.run_id], "the cold run found and awaited, nothing started again"
    assert world.target.double_starts == []


def test_an_old_run_that_cannot_be_stopped_ends_the_prepared_one_and_starts_nothing():
    world = World()
    world.target.stop_unconfirmed = True
    _, result = world.deploy([CONFIG])
    assert not result.ok and "cannot say it stopped" in result.summary
    assert [word.get("abort") is not None for word in world.runner.words] == [True]
    assert [word.get("go") for word in world.runner.words] == [None]
    assert world.target.double_starts == []


def test_a_new_run_that_is_not_healthy_after_its_go_is_rolled_back():
    world = World(after_go="failed")
    _, result = world.deploy([QUERY])
    assert not result.ok and result.outcome == "rolled-back", result
    assert world.store.manifests["orders"].meta.query_version == 1
    assert world.target.double_starts == []
    assert world.intent() is None


@pytest.mark.parametrize("where", ["stop", "go"])
def test_a_deployer_killed_mid_handover_leaves_no_second_writer_and_the_next_converges(where):
    world = World()

    def crash(*_args):
        raise Crash

    if where == "stop":  # killed as it was about to stop the old run: the new one is ready
        world.target.before_stop = crash
    else:  # killed once the go was due (the old run confirmed gone), before it was given
        runner_hears = world.state.on_write
        world.state.on_write = lambda location, text: (
            crash() if location.endswith(".go.json") and '"go"' in text else None
        )
    with pytest.raises(Crash):
        world.deploy([CONFIG])
    intent = world.intent()
    assert intent is not None and intent.prepared
    prepared_id = world.target.submissions[0].run_id
    if where == "stop":
        assert intent.phase is Phase.STOPPING and intent.waits_for_go
        assert sorted(world.runs()) == sorted(["old-run", prepared_id])
        world.target.before_stop = None
        plan = world.plan([CONFIG])
        assert "prepared but never given its go" in plan.decisions[0].reason
        # The old run may have been told to stop (its record is at `stopping`): that stop is
        # finished, then the job decided as one that does not run.
        assert "was told to stop" in plan.decisions[0].reason
        assert plan.decisions[0].action is Action.RESTART
        assert kinds(plan) == ["EndPrepared", "DropIntent", "StopRun", "StartRun", "Record"]
    else:
        assert intent.phase is Phase.SUBMITTED and not intent.waits_for_go
        assert world.runs() == [prepared_id]
        world.state.on_write = runner_hears  # the prepared run still waits for its go
        plan = world.plan([CONFIG])
        assert plan.decisions[0].steps[0].to_dict()["go"] is True
    _, result = world.deploy([CONFIG])
    assert result.ok, result
    assert world.target.double_starts == []
    assert world.intent() is None
    assert (
        len(world.runs()) == 1
        and world.runs()[0] not in ("old-run", prepared_id)
        or (where == "go" and world.runs() == [prepared_id])
    )
    assert world.store.manifests["orders"].job["description"] == CONFIG.spec["description"]


@pytest.mark.parametrize("change", [CONFIG, QUERY])
def test_a_stop_after_a_deployer_killed_before_the_go_records_what_ran(change):
    """Killed once the old run was confirmed gone, before the go: the prepared run is up and
    wrote nothing. `stop` records the store's manifest, stopped (the change never took effect),
    not the prepared one's: a new version's checkpoint holds nothing to resume from, and the old
    one's is where the job goes on (simulation seed 1010)."""
    world = World()

    def crash(*_args):
        raise Crash

    runner_hears = world.state.on_write
    world.state.on_write = lambda location, text: (
        crash() if location.endswith(".go.json") and '"go"' in text else None
    )
    with pytest.raises(Crash):
        world.deploy([change])
    world.state.on_write = runner_hears
    assert world.intent().phase is Phase.SUBMITTED
    prepared = world.target.submissions[0].run_id
    world.state.files.pop(next(f for f in world.state.files if f.endswith(".go.json")))
    [stopped] = stop_jobs(world.store, world.target, world.state, ["orders"], 5)
    assert stopped.outcome == "stopped", stopped
    recorded = world.store.manifests["orders"]
    assert recorded.meta.query_version == 1
    assert recorded.job["description"] == BASE.spec["description"]
    assert recorded.job["desired-state"] == "stopped"
    assert prepared not in world.runs() and world.intent() is None
    _, result = world.deploy([BASE])  # running again, from v1's checkpoint
    assert result.ok and "from checkpoint" in result.summary, result


def test_a_stop_after_the_go_was_given_records_the_new_manifest():
    """Killed right after the go was written: the run may have written, so `stop` records the
    manifest it was given its go with (stopped), never the older one."""
    world = World()

    def crash(location, text):
        if location.endswith(".go.json") and '"go"' in text:
            raise Crash

    world.state.on_write = (lambda hears: lambda location, text: (
        hears(location, text), crash(location, text)
    ))(world.state.on_write)  # fmt: skip
    with pytest.raises(Crash):
        world.deploy([QUERY])
    [stopped] = stop_jobs(world.store, world.target, world.state, ["orders"], 5)
    assert stopped.outcome == "stopped", stopped
    recorded = world.store.manifests["orders"]
    assert recorded.meta.query_version == 2 and recorded.job["desired-state"] == "stopped"


@pytest.mark.parametrize("handover", ["warm", "cold"])
@pytest.mark.parametrize("change", [CONFIG, QUERY], ids=["config", "query"])
def test_a_storage_error_tidying_the_old_run_s_stop_marker_does_not_fail_the_handover(
    handover, change
):
    """Issue 39, finding 5: the stop marker's delete right after the old run stopped is
    housekeeping (the next start deletes the version's marker again before it starts): one
    503 there must not leave the job down."""
    world = World()
    marker = ControlFiles.of(f"{ROOT}/orders", 1).stop_marker
    world.target.before_stop = lambda run: world.state.delete_fails_once.add(marker)
    _, result = world.deploy([change], handover=handover)
    assert result.ok, result
    assert world.state.delete_fails_once == set()  # the 503 was answered
    assert world.target.double_starts == []
    assert len(world.runs()) == 1 and world.runs() != ["old-run"]
    assert world.store.manifests["orders"].job["sql"] == change.spec["sql"]
    assert world.intent() is None


@pytest.mark.parametrize("handover", ["warm", "cold"])
@pytest.mark.parametrize("change", [CONFIG, QUERY], ids=["config", "query"])
def test_a_job_left_down_after_its_old_run_stopped_says_so_in_words(handover, change):
    """Issue 39, finding 5: the checkpoint storage fails for good once the old run stopped:
    the start fails before anything is submitted, the rollback too, and the result says that
    the job is down."""
    world = World()

    def storage_fails(_run) -> None:
        world.state.fail = True

    world.target.before_stop = storage_fails
    _, result = world.deploy([change], handover=handover)
    assert not result.ok
    assert "the job is down" in result.summary, result
    assert world.target.double_starts == []
    assert world.runs() == [] or handover == "warm"  # a prepared run that heard no abort


def test_a_prepared_run_is_ended_before_the_rollback_when_the_old_end_cannot_be_read():
    """Issue 39, finding 4: once the old run stopped, where its Kafka sources ended cannot be
    read (its sink's record is not JSON): the prepared run never gets its go, and is told to
    end before the rollback starts v1 again, not left up beside it."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    planned = json.dumps({"orders": {"0": 9, "1": 9}})
    world.state.files[f"{ROOT}/orders/1/offsets/5"] = f"v1\n{{}}\n{planned}"  # not committed
    world.state.files[f"{ROOT}/orders/1/flink-sql-runner-sink.json"] = "{not json"
    world.target.before_submit = lambda s: world.events.append(
        "submit prepared" if s.prepared else "submit"
    )
    world.runner.on_start = lambda s: world.events.append(f"writes {s.version}")
    heard = world.state.on_write

    def hears(location, text):
        if location.endswith(".go.json"):
            world.events.append("abort" if '"abort"' in text else "go")
        heard(location, text)

    world.state.on_write = hears
    _, result = world.deploy([KAFKA_V2])
    assert result.outcome == "rolled-back", result
    assert "cannot read where v1 stopped" in result.summary
    assert world.events == ["submit prepared", "stop old-run", "abort", "submit", "writes 1"]
    assert len(world.runs()) == 1  # v1, started again; the prepared v2 ended
    assert world.target.double_starts == []
    assert world.intent() is None


def test_a_go_given_again_after_a_storage_error_carries_the_same_starts():
    """Issue 39, finding 1: a 503 as the go is written (and at each of its three retries), once
    the old run stopped, fails the deploy; the next deploy gives the prepared run its go with
    where its Kafka sources start, as the first deploy's intent record holds it (before:
    without, so at `latest`)."""
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    heard = world.state.on_write
    failed: list[str] = []

    def first_go_fails(location, text):  # the first deploy's go, asked four times, unread
        if location.endswith(".go.json") and '"go"' in text and len(failed) < 4:
            failed.append(location)
            del world.state.files[location]
            world.state.read_fails.add(location)
            raise StorageError(f"cannot write {location}: SlowDown (HTTP 503) (switch)")
        heard(location, text)

    world.state.on_write = first_go_fails
    _, result = world.deploy([KAFKA_V2])
    assert not result.ok and failed
    assert "whether the prepared v2 had its go cannot be told" in result.summary, result
    assert "the next deploy settles it" in result.summary
    world.state.read_fails.clear()
    plan, result = world.deploy([KAFKA_V2])
    go = plan.decisions[0].steps[0]
    assert go.to_dict()["go"] is True
    assert "its go (src starts at v1's batch 4: orders[0:5,1:7])" in go.describe()
    assert result.ok, result
    [word] = world.runner.words
    assert word["go"] is True
    assert word["starting"]["src"]["options"] == {"startingOffsets": '{"orders": {"0": 5, "1": 7}}'}
    assert world.store.manifests["orders"].meta.query_version == 2
    assert world.intent() is None and world.target.double_starts == []


def _control(begin_at: float | None, trigger: object):
    """A RunControl on fakes, the v1 checkpoint at batch 7; batch 8 begun (its offsets
    written) once the fake clock reaches `begin_at`; the job's `trigger` (None: none written)."""
    state, clock = FakeStorage(), FakeClock()
    state.add_checkpoint(f"{ROOT}/orders/1", 7)
    next_batch = f"{ROOT}/orders/1/offsets/8"

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if begin_at is not None and clock.now >= begin_at and next_batch not in state.files:
            state.files[next_batch] = "v1\n{}\n{}"

    spec = {k: v for k, v in BASE.spec.items() if k != "trigger"}
    if trigger is not None:
        spec["trigger"] = trigger
    manifest = stored_of(type(BASE)(**{**BASE.__dict__, "spec": spec}), 1)
    return RunControl(FakeTarget(), state, clock=clock, sleep=sleep), manifest, clock, state


def test_a_warm_handover_stops_the_old_run_once_its_next_batch_has_begun(
    monkeypatch: pytest.MonkeyPatch,
):
    """Told to stop in a batch, the old run stops as soon as that batch committed."""
    runs, manifest, clock, _ = _control(0.55, {"processingTime": "1 second"})
    assert runs.in_a_batch(manifest) is True
    assert clock.now == pytest.approx(0.6), "looked at every 0.1 s, and stopped waiting"

    def fast(job):  # the old run's trigger decides the wait
        spec = {**job.spec, "trigger": {"processingTime": "1 second"}}
        return type(job)(**{**job.__dict__, "spec": spec})

    world = World(base=fast(BASE))
    begun = f"{ROOT}/orders/1/offsets/8"
    listed, looks = world.state.file_names, []

    def file_names(folder: str) -> list[str]:  # the old run begins batch 8 while looked at
        if "submit prepared" in world.events and folder.endswith("/orders/1/offsets"):
            looks.append(folder)
            if len(looks) == 3:  # the wait's second look: its first is what it waits past
                world.state.files[begun] = "v1\n{}\n{}"
                world.events.append("batch 8 begun")
        return listed(folder)

    world.state.file_names = file_names
    answers: list[bool] = []
    wait = RunControl.in_a_batch
    monkeypatch.setattr(RunControl, "in_a_batch", lambda s, m: answers.append(wait(s, m)))
    _, result = world.deploy([fast(CONFIG)])
    assert result.ok, result
    assert answers == [True], "the batch seen to begin, not the wait run out"
    assert world.events == ["submit prepared", "batch 8 begun", "stop old-run"]


@pytest.mark.parametrize(
    ("trigger", "waited"),
    [
        ({"processingTime": "1 second"}, 2.0),
        ({"processingTime": "2 seconds"}, 3.0),
        ({"processingTime": "2.5 seconds"}, 0.0),
        (None, 0.0),
        ({"processingTime": "10 minutes"}, 0.0),
        ({"availableNow": True}, 0.0),
        ({"continuous": "1 second"}, 0.0),
        ({"processingTime": "banana"}, 0.0),
    ],  # fmt: skip
)
def test_without_a_new_batch_the_stop_waits_a_short_trigger_and_a_second_and_no_longer_one(
    trigger, waited
):
    """A wait that ran out before the batch began would add its length to the pause: so a
    trigger longer than 2 s is not waited for (review 57, stop in a batch, 1)."""
    runs, manifest, clock, _ = _control(None, trigger)
    assert runs.in_a_batch(manifest) is False
    assert clock.now == pytest.approx(waited, abs=0.11)


def test_the_wait_ends_when_the_lease_is_lost_and_its_deadline_counts_a_slow_listing():
    """Review 57, stop in a batch, 3 and 4."""
    runs, manifest, clock, state = _control(None, {"processingTime": "1 second"})
    asked: list[float] = []

    def still_acting() -> None:
        asked.append(clock.now)
        if clock.now >= 0.3:
            raise StorageError("lease lost")

    runs.still_acting = still_acting
    with pytest.raises(StorageError, match="lease lost"):
        runs.in_a_batch(manifest)
    assert clock.now == pytest.approx(0.3) and len(asked) == 4
    runs.still_acting = lambda: None
    listed = state.file_names
    state.file_names = lambda folder: (clock.sleep(10), listed(folder))[1]  # 10 s a listing
    clock.now = 0.0
    assert runs.in_a_batch(manifest) is False
    assert clock.now == pytest.approx(10.0), "its first listing took past the deadline"


def test_a_checkpoint_that_cannot_be_listed_ends_the_wait_and_a_cold_stop_never_waits(
    monkeypatch: pytest.MonkeyPatch,
):
    runs, manifest, clock, state = _control(0.5, {"processingTime": "1 second"})
    state.fail = True  # every call a 503
    assert runs.in_a_batch(manifest) is False and clock.now == 0
    state.fail = False
    migrated = StoredManifest({k: v for k, v in manifest.job.items() if k != "checkpoint-root"},
                              manifest.tables, manifest.meta)  # fmt: skip
    assert runs.in_a_batch(migrated) is False and clock.now == 0, "no checkpoint of this tool"
    waits: list[str] = []
    monkeypatch.setattr(RunControl, "in_a_batch", lambda _self, m: waits.append(m.name))
    for handover, waited in (("cold", []), ("warm", ["orders"])):
        waits.clear()
        _, result = World().deploy([CONFIG], handover=handover)
        assert result.ok and waits == waited, handover
