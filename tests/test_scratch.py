"""The scratch folder Spark's JVMs write to (tests/support/scratch.py): a benchmark run on its own
makes one for the time it runs, so that a driver it kills leaves nothing in /tmp, and every
benchmark program runs in one."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.scratch import VARIABLE, for_a_program

ROOT = Path(__file__).parent.parent
BENCHMARKS = ROOT / "tests" / "benchmarks"
SET = (VARIABLE, "SPARK_LOCAL_DIRS", "SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")


def test_a_program_s_folder_is_made_pointed_at_and_removed_with_the_environment_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    monkeypatch.delenv("SPARK_DAEMON_JAVA_OPTS", raising=False)
    before = {name: os.environ.get(name) for name in SET}
    with for_a_program() as folder:
        assert os.path.isdir(folder) and folder != "/tmp"
        assert os.environ[VARIABLE] == os.environ["SPARK_LOCAL_DIRS"] == folder
        option = f"-Djava.io.tmpdir={folder}"
        assert os.environ["SPARK_SUBMIT_OPTS"] == f"{option} -Dmine=1"
        assert os.environ["SPARK_DAEMON_JAVA_OPTS"] == option
        (Path(folder) / "spark-left-by-a-killed-driver").mkdir()
    assert not os.path.exists(folder)
    assert {name: os.environ.get(name) for name in SET} == before


def test_a_program_the_suite_runs_takes_the_suite_s_folder_and_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, str(tmp_path))
    for name in SET[1:]:
        monkeypatch.delenv(name, raising=False)
    with for_a_program() as folder:
        assert folder == str(tmp_path)
        assert os.environ["SPARK_LOCAL_DIRS"] == folder
    assert tmp_path.is_dir(), "the suite's folder is the suite's to remove"
    assert {name: os.environ.get(name) for name in SET} == {VARIABLE: str(tmp_path)} | {
        name: None for name in SET[1:]
    }, "what the program's folder set is put back"


def test_a_program_ended_by_sigterm_removes_its_folder(tmp_path: Path) -> None:
    program = (
        "import os, signal, sys\n"
        "from tests.support.scratch import for_a_program\n"
        "with for_a_program() as folder:\n"
        "    print(folder, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    signal.pause()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    ran = subprocess.run(  # noqa: S603 - a list, never a shell
        [sys.executable, "-c", program], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    folder = ran.stdout.strip()
    assert ran.returncode == 128 + signal.SIGTERM, ran.stderr
    assert folder.startswith(tempfile.gettempdir()) and not os.path.exists(folder)


def test_every_benchmark_program_runs_in_a_scratch_folder() -> None:
    """A program's `if __name__ == "__main__":` holds one statement: the `with` of its folder."""
    programs = []
    for path in [*sorted(BENCHMARKS.glob("*.py")), ROOT / "tests" / "chaos" / "__main__.py"]:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                programs.append(path.name)
                (statement,) = node.body
                assert isinstance(statement, ast.With), f"{path}: {ast.unparse(node)}"
                (item,) = statement.items
                assert ast.unparse(item.context_expr) == "for_a_program()", path
                assert not node.orelse, path
    assert len(programs) >= 16 and "jvm_start.py" in programs and "__main__.py" in programs
