"""The seeded fault soak (tests/chaos/) for one fixed seed and a round or two on each store kind:
a folder store and S3 on moto's server. Real spark-submit, two jobs, `watch` in the background,
SIGKILLed deployers, drivers and stops; the process-table monitor and the end
checks must find nothing. Longer soaks: `python -m tests.chaos --seed S --rounds N`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.soak import run_soak

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.s3]

#: Seed 295 draws: on the folder store (one round) a deployer SIGKILLed mid-deploy, then its job's
#: driver SIGKILLed and `watch` left to act before the next deploy; on S3 (two rounds) a deployer
#: SIGKILLed mid-deploy and deployed again, then a `stop` SIGKILLed mid-way and stopped again (the
#: job then stays stopped through the quiet phase, with `watch` looking). Failing changes and their
#: rollbacks are left to tests/e2e/test_local_recovery_rules.py and the longer soaks.
SEED = 295


@pytest.mark.parametrize(("store", "rounds"), [("folder", 1), ("s3", 2)])
def test_a_seeded_fault_soak_finds_no_violation(
    store: str, rounds: int, tmp_path: Path, spark, s3_endpoint: str
):
    summary = run_soak(SEED, rounds, store, tmp_path, spark, s3_endpoint, quiet=5)
    print(summary.text())
    assert sum(summary.tally.actions.values()) == rounds
    assert summary.samples > 0, "the monitor looked at the process table"
    assert summary.tally.faults, "faults were injected"
    assert all(summary.rows.values()), "every job wrote rows"
    assert summary.violations == [], summary.text()
