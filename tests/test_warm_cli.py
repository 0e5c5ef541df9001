"""The tests' CLI runs fork from a warm launcher (tests/support/warm_cli.py): a run that way
reads and ends as a fresh `python -m flink_sql_runner` does, and the entry points a user runs
still answer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import warm_cli
from tests.support.cli import REPO

EXAMPLES = ["--path", "examples/queries", "--table-definition-path", "examples/tables"]


def both(monkeypatch: pytest.MonkeyPatch, *args: str) -> list[tuple[int, str, str]]:
    """`args` run fresh, then warm: exit code, stdout, stderr of each."""
    done = []
    for warm in (False, True):
        monkeypatch.setattr(warm_cli, "WARM", warm)
        ran = warm_cli.run(
            list(args), cwd=REPO, env=dict(os.environ), stdin=subprocess.DEVNULL, timeout=120
        )
        done.append((ran.returncode, ran.stdout, ran.stderr))
    return done


def test_a_warm_run_reads_and_ends_as_a_fresh_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state = ["--state-dir", str(tmp_path)]
    for args in (
        ["validate", *EXAMPLES, *state, "--no-cache"],  # 0, what it read on stdout
        ["deploy", "--no-such-option"],  # 2, the usage's program name
        ["plan", "--path", "nowhere", *state],  # an error meant for users, one line
    ):
        fresh, warm = both(monkeypatch, *args)
        assert warm == fresh, args


def test_the_console_script_and_python_m_answer() -> None:
    script = Path(sys.executable).with_name("flink-sql-runner")
    assert script.exists(), "the project's install makes its console script beside python"
    for argv in ([str(script)], [sys.executable, "-m", "flink_sql_runner"]):
        done = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("flink-sql-runner, version "), done.stdout


def test_a_warm_run_past_its_timeout_is_killed_and_the_next_one_runs(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()  # watch looks at a store that is there
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        warm_cli.run(
            ["watch", "--interval", "60", "--state-dir", str(tmp_path)],
            cwd=tmp_path,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            timeout=3,
        )
    assert time.monotonic() - began < 30
    after = warm_cli.run(
        ["--version"], cwd=tmp_path, env=dict(os.environ), stdin=subprocess.DEVNULL, timeout=60
    )
    assert after.returncode == 0, after.stderr
