"""The seeded fault soak (tests/chaos/) for one fixed seed, two rounds on S3 on moto's server.
Real spark-submit, two jobs, `watch` in the background, SIGKILLed deployers and stops; the
process-table monitor and the end checks must find nothing. The folder store's round, which
drew a SIGKILLed deployer and a SIGKILLed driver that `watch` restarts, is left to the scenarios
that do each on that store (tests/e2e/test_local_safety.py, test_local_watch.py) and to longer
soaks: `python -m tests.chaos --seed S --rounds N [--store folder]`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.soak import run_soak

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.s3]

#: Seed 295 draws on S3 (two rounds) a deployer SIGKILLed mid-deploy and deployed again, then a
#: `stop` SIGKILLed mid-way and stopped again (the job then stays stopped through the quiet phase,
#: with `watch` looking). Failing changes and their rollbacks are left to
#: tests/e2e/test_local_recovery_rules.py and the longer soaks.
SEED = 295
ROUNDS = 2


def test_a_seeded_fault_soak_on_s3_finds_no_violation(tmp_path: Path, spark, s3_endpoint: str):
    summary = run_soak(SEED, ROUNDS, "s3", tmp_path, spark, s3_endpoint, quiet=5)
    print(summary.text())
    assert sum(summary.tally.actions.values()) == ROUNDS
    assert summary.samples > 0, "the monitor looked at the process table"
    assert summary.tally.faults, "faults were injected"
    assert all(summary.rows.values()), "every job wrote rows"
    assert summary.violations == [], summary.text()
