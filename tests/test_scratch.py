"""The scratch folder Spark's JVMs write to (tests/support/scratch.py): a benchmark run on its own
makes one for the time it runs, so that a driver it kills leaves nothing in /tmp, and every
benchmark program runs in one."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.support.scratch import VARIABLE, for_a_program

BENCHMARKS = Path(__file__).parent / "benchmarks"
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
    with for_a_program() as folder:
        assert folder == str(tmp_path)
        assert os.environ["SPARK_LOCAL_DIRS"] == folder
    assert tmp_path.is_dir(), "the suite's folder is the suite's to remove"


def test_every_benchmark_program_runs_in_a_scratch_folder() -> None:
    programs = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                programs.append(path.name)
                body = ast.unparse(node)
                assert "with for_a_program():" in body, f"{path.name}: {body}"
    assert len(programs) >= 15 and "jvm_start.py" in programs and "__main__.py" in programs
