"""The simulation in CI: many seeds, each checked after every step (tests/simulation/README.md).
A failing seed is printed with the command that replays it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.simulation.simulate import run_many, run_seed

#: Seeds per run, and processes at once: about 12 s on a 2-core machine (measured 2026-11-28:
#: 8.8 seeds a second, four processes keeping both cores busy; 18 s in the suite, beside the
#: other worker).
SEEDS = int(os.environ.get("SIM_SEEDS", "100"))
FIRST = int(os.environ.get("SIM_FROM", "0"))
WORKERS = int(os.environ.get("SIM_WORKERS", "4"))


@pytest.mark.simulation
def test_no_seed_breaks_an_invariant() -> None:
    failing = [line for _, line in run_many(FIRST, SEEDS, WORKERS) if line is not None]
    assert not failing, (
        f"{len(failing)} of {SEEDS} seeds broke an invariant; replay one with "
        "`python -m tests.simulation --seed S`:\n" + "\n".join(failing)
    )


@pytest.mark.simulation
def test_a_seed_replays_exactly() -> None:
    first, again = run_seed(7), run_seed(7)
    assert first.history == again.history
    assert [v.line() for v in first.violations] == [v.line() for v in again.violations]


@pytest.mark.simulation
def test_a_replay_does_not_depend_on_the_machines_processes(monkeypatch) -> None:
    """The lock judges a holder on this machine gone by its pid and start time: in the simulation
    those are the simulated processes', whatever runs on the real machine (CI once failed seed
    1597 because a real process had the one pid every simulated process used to share)."""
    from flink_sql_runner.host import processes

    for one_machine in (False, True):
        alone = run_seed(1597, one_machine=one_machine)
        with monkeypatch.context() as patch:
            patch.setattr(processes, "start_marker", lambda pid: "linux:1")
            patch.setattr(processes, "is_same_process", lambda pid, marker: False)
            crowded = run_seed(1597, one_machine=one_machine)
        assert alone.history == crowded.history
        assert not alone.violations, [v.line() for v in alone.violations]


@pytest.mark.simulation
def test_a_seed_writes_nothing_into_the_working_folders_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.ci/run` runs the seeds in its clone, where the README's first command left
    `./.flink-sql-runner/`: a seed reads and writes only its simulated world, never that folder
    (the deployer's SQL fingerprints went there, a cache kept on disk, once CI ran the seeds
    beside the suite: the suite's guard failed a test for them). Seed 108 computes fingerprints."""
    state = tmp_path / ".flink-sql-runner"
    state.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLINK_SQL_RUNNER_STATE_DIR", raising=False)
    again = run_seed(108)
    assert list(state.iterdir()) == []
    assert again.history == run_seed(108).history


@pytest.mark.simulation
@pytest.mark.parametrize(
    ("seed", "said"),
    [
        (64, "cluster: b v2 run 3d93f24c (by deploy-7) reads its state of batch 65"),
        (117, "windows: b v2 batch 0 (run 6d47ee6f by deploy-10) wrote partial, as its plan "),
        (128, "ledger: b v2 batch 0 (run 74510ae2 by deploy-6) re-reads orders/0 23..204"),
    ],
)
def test_the_stateful_job_continues_writes_partial_as_declared_and_rebuilds(seed, said) -> None:
    """The stateful job (windows.py) through each way a query change treats its state: 64, a
    filter every record passes: v2 continues from v1's checkpoint, copied, its windows true;
    117, its windows resized and partial accepted: v2 writes those open at the change partial;
    128, resized with `kafka-start: earliest`: v2 reads the topic again and rebuilds them (the
    lines name runs, which the seed's draws name: a change of what the product asks the world,
    the history records of issue 56 among them, moves them)."""
    outcome = run_seed(seed)
    assert not outcome.violations, [v.line() for v in outcome.violations]
    assert any(said in line for line in outcome.history)


@pytest.mark.simulation
def test_a_carry_refused_as_spec_says_is_held_back_not_a_failure() -> None:
    """Seed 577 (CI's, at d26acbe): b v2 is started at v1's end and stopped before its first
    batch commits; the quiet world's deploy changes b's query and is refused, as SPEC says a
    carry from a version that committed nothing is (a, which wants b's sink, is held back
    with it). That is the product keeping its promise, not a deploy that fails to converge."""
    outcome = run_seed(577)
    assert not outcome.violations, [v.line() for v in outcome.violations]
    assert any(
        "b: error not running; query changed" in line and "v2 committed no batch" in line
        for line in outcome.history
    )


@pytest.mark.simulation
def test_a_carry_refusal_is_excused_only_where_the_version_committed_nothing() -> None:
    """The excuse has teeth: a refusal is wrong when the job declares a start, when the world
    cannot cause it, or when the stored version did commit a batch."""
    from types import SimpleNamespace

    from tests.simulation.simulate import Director

    said = "src: v2 committed no batch: there is nothing to carry"
    stored = SimpleNamespace(meta=SimpleNamespace(query_version=2), checkpoint="ck/b/2")

    def director(committed: int | None) -> SimpleNamespace:
        checkpoint = SimpleNamespace(committed=committed)
        world = SimpleNamespace(checkpoints={"ck/b/2": checkpoint}, read_checkpoint=None)
        return SimpleNamespace(world=world, stored=lambda: {"b": stored})

    job = SimpleNamespace(name="b", spec={})
    excuse = Director.wrongly_refused_carry
    assert excuse(director(None), job, said) is None
    assert excuse(director(4), job, said) == "v2 committed batch 4 on ck/b/2"
    assert "declares kafka-start" in excuse(
        director(None), SimpleNamespace(name="b", spec={"kafka-start": "latest"}), said
    )
    assert "no such refusal" in excuse(director(None), job, "src: v1 committed no batch")
