"""The Spark matrix's tooling (tests/matrix.py) as `.ci/run` uses it from its first stage: the
Kafka tests' line made first, and what it starts stopped with it, however it is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import matrix
from tests.support.cache import cache_root
from tests.support.workspace import wait_for

ROOT = Path(__file__).resolve().parents[1]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers: ours are reaped by their parents, others' by init
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"


def written(path: Path) -> int:
    """The pid a child writes into `path`, once it has."""
    text = wait_for(
        lambda: path.is_file() and path.read_text().strip(), 30, 0.05, f"a pid in {path}"
    )
    return int(text)


def test_ci_makes_the_kafka_tests_line_first_from_its_first_stage() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    stage_1 = script.index('stage "1. README\'s first command"')
    stage_2 = script.index('stage "2. README\'s test command"')
    assert "python3 -m tests.matrix --install-only --for-suite" in script[stage_1:stage_2]
    assert matrix.install_order(["3.5", "4.0", matrix.KAFKA_LINE, "4.1"])[0] == matrix.KAFKA_LINE


def test_for_suite_makes_the_kafka_line_alone_and_needs_install_only(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(matrix, "install_only", lambda *args: calls.append(args) or 0)
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # not this process's handler
    assert matrix.main(["--install-only", "--for-suite"]) == 0
    assert [(lines, for_suite) for lines, _, for_suite in calls] == [([matrix.KAFKA_LINE], True)]
    with pytest.raises(SystemExit) as ended:
        matrix.main(["--for-suite"])
    assert ended.value.code == 2 and calls == calls[:1]


def test_a_relative_cache_folder_is_made_absolute(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FSR_TEST_CACHE", "cache")
    assert cache_root() == tmp_path / "cache"


def test_a_timed_out_child_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    argv = ["bash", "-c", f"sleep 300 & echo $! > {pid_file}; wait"]
    code, output = matrix.run_group(argv, tmp_path, timeout=1)
    grandchild = written(pid_file)
    try:
        assert (code, output) == (-1, "did not end in 1 s")
        # SIGKILLed with its session: it runs nothing more, but on a loaded machine the kernel
        # may take a moment to end it (seen in a rehearsal of .ci/run beside benchmarks)
        wait_for(lambda: gone(grandchild), 10, 0.05, f"the killed grandchild {grandchild} gone")
    finally:
        if not gone(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_a_stopped_matrix_stops_what_its_child_started_in_a_session_of_its_own(
    tmp_path: Path,
) -> None:
    """SIGTERM to the matrix (the trap of `.ci/run`) reaches FOR_SUITE's Python as SIGTERM, and
    its `finally` stops an archive's training run: with a fake spark-submit that only sleeps,
    nothing is left and no half-made archive stays in the cache."""
    folder = tmp_path / "jvm"
    trained = tmp_path / "training.pid"
    spark_submit = tmp_path / "spark" / "bin" / "spark-submit"
    spark_submit.parent.mkdir(parents=True)
    spark_submit.write_text(f"#!/bin/bash\necho $$ > {trained}\nexec sleep 300\n")
    spark_submit.chmod(0o755)
    for_suite = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.matrix import stop_on_sigterm
        from flink_sql_runner.targets.jvm_archive import make_archive
        stop_on_sigterm()
        make_archive(Path({str(folder)!r}), {str(spark_submit)!r}, timeout=600)
        """
    )
    the_matrix = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from tests.matrix import run_group, stop_on_sigterm
        stop_on_sigterm()
        run_group([sys.executable, "-c", {for_suite!r}], Path(sys.prefix), timeout=600)
        """
    )
    env = {**os.environ, "JAVA_HOME": os.environ.get("JAVA_HOME") or "/usr"}
    outer = subprocess.Popen([sys.executable, "-c", the_matrix], cwd=ROOT, env=env)  # noqa: S603
    try:
        training = written(trained)
        outer.send_signal(signal.SIGTERM)
        assert outer.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while not gone(training) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(training), "the training run outlived the matrix"
        assert list(folder.glob(".making-*")) == [], "a half-made archive stayed"
    finally:
        if outer.poll() is None:
            outer.kill()
            outer.wait()
        if trained.is_file() and not gone(int(trained.read_text())):
            os.killpg(int(trained.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("served", [False, True], ids=["no connector", "connector served"])
def test_the_lifecycle_runs_on_every_living_line_the_suite_does_not_run(
    monkeypatch: pytest.MonkeyPatch, served: bool
) -> None:
    """The suite's Kafka scenarios run on KAFKA_LINE only while Maven Central serves no Kafka
    connector for the suite's own pyspark; once it serves one, the lifecycle runs there again."""
    import pyspark

    from tests.support import kafka_spark, maven

    def connector_jars(version: str) -> list[Path]:
        assert version == pyspark.__version__
        if not served:
            raise maven.MavenUnavailable("not served")
        return [Path("connector.jar")]

    monkeypatch.setattr(kafka_spark, "connector_jars", connector_jars)
    own = ".".join(pyspark.__version__.split(".")[:2])
    suite = matrix.suite_lines()
    assert suite == ((own,) if served else (own, matrix.KAFKA_LINE))
    with_lifecycle = [
        line for line in matrix.LINES if matrix.LIFECYCLE in matrix.tests_of(line, suite=suite)
    ]
    # 4.0's life ended; 4.2 is KAFKA_LINE
    expected = ["3.5", "4.1", "4.2"] if served else ["3.5", "4.1"]
    assert with_lifecycle == [line for line in expected if line != own]
    assert all(matrix.LIFECYCLE in matrix.tests_of(line, every=True) for line in matrix.LINES)


def test_a_stopped_matrix_begins_no_further_line(tmp_path: Path) -> None:
    """SIGTERM while two lines run: the lines queued behind them never begin (their tests would
    start drivers after the trap of `.ci/run` has stopped waiting)."""
    begun = tmp_path / "begun"
    script = textwrap.dedent(
        f"""
        import time
        from tests import matrix

        def run_line(line, workers, every=False, suite=()):
            with open({str(begun)!r}, "a") as out:
                out.write(line + "\\n")
            time.sleep(3)
            return matrix.Result(line)

        matrix.run_line = run_line
        matrix.suite_lines = lambda: ()
        matrix.stop_on_sigterm()
        matrix.run_lines(["3.5", "4.0", "4.1", "4.2"], 2)
        """
    )
    outer = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)  # noqa: S603
    try:
        wait_for(
            lambda: begun.is_file() and len(begun.read_text().split()) == 2, 30, 0.05, "two lines"
        )
        outer.send_signal(signal.SIGTERM)
        assert outer.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if outer.poll() is None:
            outer.kill()
            outer.wait()
    assert sorted(begun.read_text().split()) == ["3.5", "4.0"]
