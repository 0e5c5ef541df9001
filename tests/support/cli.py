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


#: Stored manifests of the original tool (Flink), versions 1 to 5 (tests/data/migration/).
ORIGINAL_STORE = REPO / "tests" / "data" / "migration" / "original" / "store"


def migrated_store(state: Path) -> list[str]:
    """`migrate --from <the original tool's store> --to <state>/manifests` through the command
    line: the converted manifests, not deployed by this tool yet (none names a checkpoint
    root); returns their job names."""
    result = run_cli("migrate", "--from", str(ORIGINAL_STORE), "--to", str(state / "manifests"))
    assert result.returncode == 0, result.stderr
    return sorted(p.stem for p in ORIGINAL_STORE.glob("*.yaml"))
