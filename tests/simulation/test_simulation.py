"""The simulation in CI: many seeds, each checked after every step (tests/simulation/README.md).
A failing seed is printed with the command that replays it."""

from __future__ import annotations

import os

import pytest

from tests.simulation.simulate import run_seed

#: Seeds per run: about a minute on a 2-core machine (SIM_SEEDS and SIM_FROM override).
SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
FIRST = int(os.environ.get("SIM_FROM", "0"))


@pytest.mark.simulation
def test_no_seed_breaks_an_invariant() -> None:
    failing = []
    for seed in range(FIRST, FIRST + SEEDS):
        outcome = run_seed(seed)
        if outcome.violations or outcome.note:
            lines = outcome.first_lines() or [outcome.note]
            failing.append(f"seed {seed}: " + " | ".join(lines))
    assert not failing, (
        f"{len(failing)} of {SEEDS} seeds broke an invariant; replay one with "
        "`python -m tests.simulation --seed S`:\n" + "\n".join(failing)
    )


@pytest.mark.simulation
def test_a_seed_replays_exactly() -> None:
    first, again = run_seed(7), run_seed(7)
    assert first.history == again.history
    assert [v.line() for v in first.violations] == [v.line() for v in again.violations]
