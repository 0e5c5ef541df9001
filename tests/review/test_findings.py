"""A hostile review of issue 55, item 4 (one --output, one JSON document, one time format, the
renamed options' spellings before, --path's own check, the generated reference). Each test here
shows one defect and is expected to FAIL until it is fixed; none starts Spark."""

from __future__ import annotations

from pathlib import Path

from flink_sql_runner.cli.main import all_commands
from tests.support.cli import run_cli

COMMANDS = all_commands()


# -- F9: stop --all against a store that is not there: created, and "all fine" ------------------


def test_stop_all_of_a_store_that_does_not_exist_neither_creates_it_nor_exits_0(
    tmp_path: Path,
) -> None:
    """`stop --all --manifest-store <a typo>` creates the folder and answers `{"jobs": []}`,
    exit 0: the jobs of the real store go on running while CI reads "every job stopped"."""
    typo = tmp_path / "manifsets"
    result = run_cli(
        "stop", "--all", "--manifest-store", str(typo), "--state-dir", str(tmp_path / "s"),
        "--output", "json",
    )  # fmt: skip
    created = typo.exists()
    assert (result.returncode, created) != (0, True), f"exit 0, {result.stdout.strip()}, created"
