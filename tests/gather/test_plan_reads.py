"""What a plan reads, counted: the checkpoint of a job whose run is alive is not inspected for
what its decision does not use (its metadata and commits), nor read at all when its manifest
did not change, and the decision is the same as with everything read; a job folder without
`_control` is not listed for it."""

from __future__ import annotations

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan, checkpoint_unused
from flink_sql_runner.gather.checkpoint_reader import highest_version
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.intents import Intent, IntentLog, Kind, Phase
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, make_job, stored_of


class CountingStorage(FakeStorage):
    """FakeStorage that remembers every read and listing, by location."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []
        self.listed: list[str] = []

    def read_bytes(self, location: str) -> bytes | None:
        self.reads.append(location)
        return super().read_bytes(location)

    def file_names(self, folder: str) -> list[str]:
        self.listed.append(folder)
        return super().file_names(folder)

    def dir_names(self, folder: str) -> list[str]:
        self.listed.append(folder)
        return super().dir_names(folder)


def world(running: bool, pins: dict[str, str] | None = None):
    store, target, storage = FakeStore(), FakeTarget(), CountingStorage()
    stored = stored_of(BASE, 1)
    store.put(stored)
    location = f"{ROOT}/orders/1"
    storage.add_checkpoint(location, 7)
    if pins is not None:
        conf = ", ".join(f'"{k}": "{v}"' for k, v in pins.items())
        storage.files[f"{location}/offsets/7"] = 'v1\n{"conf": {' + conf + "}}\n{}"
    if running:
        target.add_run(Run("orders", 1, "run-1", "pid 42"))
    return store, target, storage, location


def decided(desired, running: bool, full: bool, pins: dict[str, str] | None = None):
    store, target, storage, location = world(running, pins)
    lean = None if full else checkpoint_unused  # as a plan gathers (act/deployment.py)
    facts = gather(
        [desired], store, target, storage, workers=1, running_commits=full, checkpoint_unused=lean
    )
    return build_plan(facts).decisions[0], storage, location


PINNED_CHANGED = make_job(sparkProperties={"spark.sql.shuffle.partitions": "8"})
CASES = [
    ("running-unchanged", BASE, True),
    ("running-config", CONFIG, True),
    ("running-query", QUERY, True),
    ("stopped-unchanged", BASE, False),
    ("stopped-config", CONFIG, False),
    ("stopped-query", QUERY, False),
    ("running-pinned-changed", PINNED_CHANGED, True),
]


@pytest.mark.parametrize("desired, running", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_plan_decides_as_with_everything_read(desired, running) -> None:
    pins = {"spark.sql.shuffle.partitions": "4"}
    lean, _, _ = decided(desired, running, full=False, pins=pins)
    full, _, _ = decided(desired, running, full=True, pins=pins)
    assert (lean.action, lean.version, lean.reason) == (full.action, full.version, full.reason)
    assert [type(s) for s in lean.steps] == [type(s) for s in full.steps]
    assert lean.changes == full.changes


def test_a_running_job_is_decided_without_its_metadata_and_commits() -> None:
    pins = {"spark.sql.shuffle.partitions": "4"}
    decision, storage, location = decided(PINNED_CHANGED, running=True, full=False, pins=pins)
    assert f"{location}/metadata" not in storage.reads
    assert f"{location}/commits" not in storage.listed
    # What it pins is still read: the changed setting is refused as a restart.
    assert f"{location}/offsets/7" in storage.reads
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert "pinned by the checkpoint" in decision.changes[0].why


def test_a_running_job_whose_manifest_did_not_change_has_nothing_of_its_checkpoint_read() -> None:
    pins = {"spark.sql.shuffle.partitions": "4"}
    decision, storage, _ = decided(BASE, running=True, full=False, pins=pins)
    assert decision.action is Action.NOOP
    assert [r for r in storage.reads if r.startswith(ROOT)] == []
    assert [f for f in storage.listed if f.startswith(ROOT)] == []


@pytest.mark.parametrize(
    "desired", [CONFIG, QUERY, PINNED_CHANGED], ids=["config", "query", "pinned"]
)
def test_a_running_job_whose_manifest_changed_has_its_highest_version_and_pins_read(
    desired,
) -> None:
    _, storage, location = decided(desired, running=True, full=False, pins={"a": "b"})
    assert f"{location}/offsets/7" in storage.reads
    assert f"{ROOT}/orders" in storage.listed


def test_a_job_not_running_has_its_checkpoint_inspected() -> None:
    decision, storage, location = decided(BASE, running=False, full=False)
    assert f"{location}/metadata" in storage.reads
    assert f"{location}/commits" in storage.listed
    assert decision.action is Action.RESTART and "last committed batch 7" in decision.reason


def test_a_running_job_with_an_intent_record_has_its_checkpoint_inspected() -> None:
    store, target, storage, location = world(running=True)
    manifest = stored_of(BASE, 1)
    IntentLog(store).write(
        Intent(manifest, "stop", "run-1", "2026-11-26T00:00:00Z", Phase.SUBMITTED, kind=Kind.STOP)
    )
    gather([BASE], store, target, storage, workers=1, running_commits=False)
    assert f"{location}/metadata" in storage.reads
    assert f"{location}/commits" in storage.listed


def test_no_control_folder_is_not_listed() -> None:
    storage = CountingStorage()
    storage.add_checkpoint(f"{ROOT}/orders/3")
    assert highest_version(storage, f"{ROOT}/orders") == 3
    assert storage.listed == [f"{ROOT}/orders"]
    storage.files[f"{ROOT}/orders/_control/v5.status.json"] = "{}"
    assert highest_version(storage, f"{ROOT}/orders") == 5, "a version begun is counted"


CONSISTENT = make_job(reprocessing="consistent")
UNUSED_CASES = [
    ("running-unchanged", BASE, BASE, 1, True),
    ("not-running", BASE, BASE, 0, False),
    ("two-runs-up", BASE, BASE, 2, False),
    ("config-changed", CONFIG, BASE, 1, False),
    ("new-job", BASE, None, 1, False),
    ("consistent-consumer", CONSISTENT, CONSISTENT, 1, False),
]


@pytest.mark.parametrize(
    "desired, stored, runs, unused", [c[1:] for c in UNUSED_CASES], ids=[c[0] for c in UNUSED_CASES]
)
def test_which_checkpoints_a_plan_does_not_read(desired, stored, runs, unused) -> None:
    manifest = stored_of(stored, 1) if stored is not None else None
    alive = tuple(Run("orders", 1, f"run-{i}", f"pid {i}") for i in range(runs))
    assert checkpoint_unused(JobFacts("orders", desired, manifest, alive)) is unused


@pytest.mark.parametrize("desired, diffs", [(BASE, 0), (CONFIG, 1)], ids=["unchanged", "config"])
def test_a_job_stored_as_git_has_it_is_not_diffed(desired, diffs, monkeypatch) -> None:
    """Field for field the same: no paths resolved, nothing compared; left alone."""
    from flink_sql_runner.decide import tree

    calls: list[str] = []
    real = tree.diff
    monkeypatch.setattr(tree, "diff", lambda *a, **k: calls.append("diff") or real(*a, **k))
    decision, _, _ = decided(desired, running=True, full=True)
    assert len(calls) == diffs
    assert decision.action is (Action.NOOP if diffs == 0 else Action.STOP_AND_RESTART)


def test_a_job_gather_found_stored_as_git_has_it_is_compared_once(monkeypatch) -> None:
    """checkpoint_unused compares the running job's manifests; gather keeps what it found
    (`JobFacts.found_same`) and the plan does not compare them again."""
    from flink_sql_runner.model import same as sameness

    store, target, storage, _ = world(running=True)
    compared: list[int] = []
    real = sameness.same
    monkeypatch.setattr(sameness, "same", lambda a, b: compared.append(1) or real(a, b))
    facts = gather(
        [BASE], store, target, storage, workers=1, running_commits=False,
        checkpoint_unused=checkpoint_unused,
    )  # fmt: skip
    assert facts[0].found_same == (facts[0].desired, facts[0].stored)
    gathered = len(compared)
    assert gathered > 0
    assert build_plan(facts).decisions[0].action is Action.NOOP
    assert len(compared) == gathered, "the plan compared them again"


def test_what_gather_found_the_same_holds_only_for_the_two_it_compared() -> None:
    """Facts made with another desired job (a consumer decided again on resolved tables) are
    compared anew: a config change is not taken for the manifest gather found unchanged."""
    from dataclasses import replace

    from flink_sql_runner.model.same import unchanged

    stored = stored_of(BASE, 1)
    alive = (Run("orders", 1, "run-1", "pid 42"),)
    found = JobFacts("orders", BASE, stored, alive, found_same=(BASE, stored))
    assert unchanged(found)
    moved = replace(found, desired=CONFIG)
    assert moved.found_same == (BASE, stored), "replace keeps the field"
    assert not unchanged(moved)
    assert build_plan([moved]).decisions[0].action is Action.STOP_AND_RESTART
    assert build_plan([found]).decisions[0].action is Action.NOOP
