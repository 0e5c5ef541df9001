"""`settle`: what an interrupted command's intent comes to, as a pure function of the intent,
the listing, its run's status, its checkpoint's commits and its age on the store's clock."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.intents import Intent, Kind, Outcome, Phase, new_intent, settle
from flink_sql_runner.model.runs import Liveness, Run
from tests.support.jobs import BASE, stored_of

MANIFEST = stored_of(BASE, 2)


def start(phase: Phase, age: float = 0.0, **kw) -> Intent:
    intent = new_intent(MANIFEST, "stop-and-start-clean", "run-2", **kw).at(phase)
    return replace(intent, age=age)


def run(run_id: str | None = "run-2", version: int = 2, liveness=Liveness.ALIVE) -> Run:
    return Run("orders", version, run_id, "pid 9", liveness=liveness)


HEALTHY = {"run-id": "run-2", "state": "active"}


@pytest.mark.parametrize(
    "intent, runs, status, committed, outcome",
    [
        (start(Phase.INTENDED), (), None, None, Outcome.NOT_TAKEN),
        (start(Phase.OLD_STOPPED), (run(),), None, None, Outcome.NOT_TAKEN),
        (start(Phase.SUBMITTING), (run(),), None, None, Outcome.UP),
        (start(Phase.SUBMITTED), (run(None),), None, None, Outcome.UP),
        (start(Phase.SUBMITTED), (run(liveness=Liveness.UNKNOWN),), None, None, Outcome.UNKNOWN),
        (start(Phase.SUBMITTING, age=10), (), None, None, Outcome.UNKNOWN),
        (start(Phase.SUBMITTING, age=300), (), None, None, Outcome.NOT_TAKEN),
        (start(Phase.SUBMITTED, age=10), (), HEALTHY, None, Outcome.TOOK_EFFECT),
        (start(Phase.HEALTHY), (), None, None, Outcome.TOOK_EFFECT),
        (start(Phase.FAILED), (), None, None, Outcome.NOT_TAKEN),
        (start(Phase.FAILED, committed_before=5), (), None, 6, Outcome.TOOK_EFFECT),
        (start(Phase.SUBMITTED, age=400, committed_before=5), (), None, 5, Outcome.NOT_TAKEN),
        (start(Phase.SUBMITTED, age=400, committed_before=-1), (), None, 0, Outcome.TOOK_EFFECT),
        # another run's status file says nothing about this intent's run
        (start(Phase.SUBMITTED, age=400), (), {"run-id": "x", "state": "active"}, None,
         Outcome.NOT_TAKEN),
    ],
)  # fmt: skip
def test_a_start_settles_on_evidence_of_its_own_run(intent, runs, status, committed, outcome):
    assert settle(intent, runs, status, committed).outcome is outcome


def test_a_new_version_that_wrote_settles_in_words_of_what_it_wrote():
    """Issue 52, finding 1: the settle says what happened, not "never healthy"."""
    wrote = settle(start(Phase.SUBMITTED, age=400, committed_before=-1), (), None, 3)
    assert wrote.why == "v2 committed 4 batches (0 to 3), then its run ended"
    one = settle(start(Phase.FAILED, committed_before=5), (), None, 6)
    assert one.why == "v2 committed batch 6, then its run ended"
    # listed under its own id as ended: not "not listed", and not waited for
    ended = settle(start(Phase.SUBMITTED, age=10, committed_before=-1),
                   (run(liveness=Liveness.GONE),), None, None)  # fmt: skip
    assert (ended.outcome, ended.why) == (
        Outcome.NOT_TAKEN, "its run is listed as ended, never healthy, no batch done"
    )  # fmt: skip


def test_the_submit_timeout_is_the_one_the_record_carries():
    intent = start(Phase.SUBMITTING, age=40, submit_timeout=30.0)
    assert settle(intent, (), None).outcome is Outcome.NOT_TAKEN


@pytest.mark.parametrize(
    "runs, outcome",
    [
        ((), Outcome.TOOK_EFFECT),
        ((run("old", 1),), Outcome.NOT_TAKEN),
        ((run("old", 1, Liveness.UNKNOWN),), Outcome.UNKNOWN),
    ],
)
@pytest.mark.parametrize("kind", [Kind.STOP, Kind.PRUNE])
def test_a_stop_took_effect_once_no_run_of_the_job_is_up(kind, runs, outcome):
    intent = new_intent(MANIFEST, "stop", "-", kind).at(Phase.STOPPING)
    assert settle(intent, runs, None).outcome is outcome


def test_settling_is_pure():
    intent = start(Phase.SUBMITTED, age=12)
    assert settle(intent, (), None) == settle(intent, (), None)


def test_records_of_the_previous_schema_are_read_with_their_kind():
    old = json.loads(start(Phase.SUBMITTED).to_json())
    for key in ("kind", "submit-timeout", "committed-before"):
        del old[key]
    old["schema-version"] = 2
    old["phase"] = "rolling-back"
    intent = Intent.from_json(json.dumps(old), "memory://x", age=3.0)
    assert (intent.kind, intent.phase, intent.age) == (Kind.ROLLBACK, Phase.SUBMITTING, 3.0)
    old["phase"], old["action"] = "old-stopped", "stop"
    assert Intent.from_json(json.dumps(old), "memory://x").kind is Kind.STOP


def test_a_failed_start_s_error_is_kept_and_a_version_3_record_still_reads():
    failed = replace(start(Phase.SUBMITTED).at(Phase.FAILED), error="the job failed: boom")
    back = Intent.from_json(failed.to_json(), "intents/orders.json")
    assert back.error == "the job failed: boom" and back.failed_start is not None
    assert back.failed_start.describe() == f"v2 failed to start at {back.written}: " + (
        "the job failed: boom"
    )
    doc = json.loads(failed.to_json())
    doc["schema-version"] = 3
    del doc["error"]
    older = Intent.from_json(json.dumps(doc), "intents/orders.json")
    assert older.error is None and older.failed_start is None, "an interrupted start, not kept"
    doc["schema-version"], doc["error"] = 4, ["not", "a", "line"]
    with pytest.raises(StoreError, match="error .* is not a string"):
        Intent.from_json(json.dumps(doc), "intents/orders.json")
    doc["schema-version"], doc["error"] = 7, None
    with pytest.raises(StoreError, match="schema-version 7"):
        Intent.from_json(json.dumps(doc), "intents/orders.json")


def test_a_prepared_start_is_kept_in_its_record_and_a_version_4_record_reads_as_cold() -> None:
    intent = replace(new_intent(MANIFEST, "stop-and-restart-from-checkpoint", "r"), prepared=True)
    for phase in (Phase.INTENDED, Phase.PREPARING, Phase.STOPPING, Phase.OLD_STOPPED):
        back = Intent.from_json(intent.at(phase).to_json(), "intents/orders.json")
        assert back.prepared and back.waits_for_go, phase
    for phase in (Phase.SUBMITTED, Phase.HEALTHY, Phase.FAILED):
        back = Intent.from_json(intent.at(phase).to_json(), "intents/orders.json")
        assert back.prepared and not back.waits_for_go, phase
    doc = json.loads(intent.at(Phase.PREPARING).to_json())
    doc["schema-version"] = 4
    del doc["prepared"]
    assert not Intent.from_json(json.dumps(doc), "intents/orders.json").prepared


@pytest.mark.parametrize(
    ("phase", "outcome"),
    [
        (Phase.PREPARING, Outcome.NOT_TAKEN),
        (Phase.STOPPING, Outcome.NOT_TAKEN),
        (Phase.OLD_STOPPED, Outcome.NOT_TAKEN),
        (Phase.SUBMITTED, Outcome.UP),
    ],
)
def test_a_prepared_run_counts_as_the_job_s_run_only_once_its_go_was_due(phase, outcome) -> None:
    from flink_sql_runner.model.facts import IntentFacts, JobFacts

    intent = replace(
        new_intent(MANIFEST, "stop-and-restart-from-checkpoint", "new"), prepared=True
    ).at(phase)
    old, prepared = Run("orders", 2, "old", "pid 1"), Run("orders", 2, "new", "pid 2")
    runs = (old, prepared) if phase is not Phase.SUBMITTED else (prepared,)
    settled = settle(intent, runs, None)
    assert settled.outcome is outcome, settled.why
    facts = JobFacts("orders", None, MANIFEST, runs, intent=IntentFacts(settled))
    if outcome is Outcome.NOT_TAKEN:
        assert "prepared but never given its go" in settled.why
        assert facts.alive == (old,)  # the prepared one writes nothing: not the job's run
    else:
        assert facts.alive == (prepared,)
    # found once per facts (cached), and anew for facts made from them with another intent
    without = replace(facts, intent=None)
    assert without.alive == runs
    assert facts.alive == ((old,) if outcome is Outcome.NOT_TAKEN else (prepared,))
