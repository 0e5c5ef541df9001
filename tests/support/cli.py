"""Running the real command line (`python -m flink_sql_runner`) from tests: each run a process of
its own, forked from a warm launcher (tests/support/warm_cli.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import warm_cli

REPO = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """One CLI run; `env` is added to this process's environment; `stdin`: this process's
    unless given (DEVNULL: no terminal to ask on; a pty's end: one)."""
    return warm_cli.run(
        list(args), cwd=cwd, env={**os.environ, **(env or {})}, stdin=stdin, timeout=120
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
