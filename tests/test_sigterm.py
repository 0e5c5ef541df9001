"""SIGTERM to a pytest run of this suite ends it as Ctrl-C does: its fixtures are torn down.
A test's drivers run in sessions of their own, which only the teardown stops: `.ci/run` stops
the Spark matrix's tests so (SIGTERM to their process group) when another stage failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.workspace import wait_for

ROOT = Path(__file__).resolve().parent.parent


def test_a_run_ended_by_sigterm_tears_its_fixtures_down(tmp_path: Path) -> None:
    started, torn_down = tmp_path / "started", tmp_path / "torn-down"
    test_file = tmp_path / "test_waits.py"
    test_file.write_text(
        textwrap.dedent(
            f"""
            import time

            import pytest


            @pytest.fixture
            def driver():
                yield
                open({str(torn_down)!r}, "w").close()


            def test_waits(driver):
                open({str(started)!r}, "w").close()
                time.sleep(120)
            """
        )
    )
    argv = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
            "-q", str(test_file)]  # fmt: skip
    run = subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        begun = wait_for(
            lambda: started.exists() or run.poll() is not None, 60, 0.05, "the test to begin"
        )
        assert begun and run.poll() is None, f"the run ended before its test:\n{run.stdout.read()}"
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert torn_down.exists(), f"the fixture was not torn down:\n{output}"
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
