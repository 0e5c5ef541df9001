"""Running the real command line (`python -m flink_sql_runner`) from tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """One CLI run; `env` is added to this process's environment; `stdin`: this process's
    unless given (DEVNULL: no terminal to ask on; a pty's end: one)."""
    return subprocess.run(
        [sys.executable, "-m", "flink_sql_runner", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
        stdin=stdin,
    )
