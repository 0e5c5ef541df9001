"""`jvm-archive` and the local target's use of it, with a stand-in for spark-submit: the archive
is made once, whole or not at all, keyed by the Java and the Spark it was made for, and a local
driver starts from it only when it is there (the real JVM's use of it:
tests/e2e/test_local_jvm_archive.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import processes as procs
from flink_sql_runner.targets.jvm_archive import archive_path, java_option, make_archive
from flink_sql_runner.targets.local import LocalTarget
from tests.support.cli import run_cli
from tests.support.fakes import stand_in
from tests.targets.test_local import submission

#: Stands in for spark-submit's training run: records its arguments and its JVM options, and
#: writes the archive `-XX:ArchiveClassesAtExit` names, as a JVM does at its exit.
TRAINING = """#!{python}
import json, os, sys
opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
with open(os.environ["FAKE_CALLS"], "a") as out:
    out.write(json.dumps({{"args": sys.argv[1:], "opts": opts}}) + "\\n")
if os.environ.get("FAKE_FAIL"):
    print("Exception in thread main: no memory", file=sys.stderr)
    sys.exit(1)
path = opts.split("-XX:ArchiveClassesAtExit=", 1)[1].split()[0]
with open(path, "wb") as archive:
    archive.write(b"classes")
"""
#: Stands in for a local driver: writes the JVM options it was given, then waits.
DRIVER = """#!{python}
import os, sys, time
with open(os.environ["FAKE_CALLS"] + ".part", "w") as out:
    out.write(os.environ.get("SPARK_SUBMIT_OPTS", "<none>"))
os.replace(os.environ["FAKE_CALLS"] + ".part", os.environ["FAKE_CALLS"])
time.sleep(60)
"""


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls"
    monkeypatch.setenv("FAKE_CALLS", str(path))
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    return path


def test_jvm_archive_makes_the_archive_once_and_whole(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "state"
    (state / "jvm").mkdir(parents=True)
    (state / "jvm" / "spark-of-an-older-spark.jsa").write_bytes(b"old")

    made = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))

    assert made.returncode == 0, made.stderr
    path = archive_path(state / "jvm", str(submit))
    assert path is not None and path.read_bytes() == b"classes"
    assert made.stdout.startswith(f"made {path} (7 B) in "), made.stdout
    assert "local drivers of this Spark and Java start from it" in made.stdout
    assert sorted(p.name for p in (state / "jvm").iterdir()) == [path.name], "old one gone"
    (call,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert call["args"][:2] == ["--master", "local[2]"]
    assert call["args"][-2].endswith("jvm_training.py") and Path(call["args"][-2]).is_file()
    assert call["opts"].startswith("-XX:ArchiveClassesAtExit="), "nothing else, not ours"

    again = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"already made: {path} (7 B)"), again.stdout
    assert len(calls.read_text().splitlines()) == 1, "not made twice"


def test_a_training_run_that_fails_leaves_no_archive(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "state"
    failed = run_cli(
        "jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit),
        env={"FAKE_FAIL": "1"},
    )  # fmt: skip
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        "error: the training run exited 1 without an archive: Exception in thread main: no memory"
    )
    assert list((state / "jvm").iterdir()) == [], "no archive, no half-made one"


def test_a_path_with_spaces_is_refused_before_anything_runs(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "my state"
    refused = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))
    assert refused.returncode == 1
    assert "a path with spaces cannot be given to Java as an option" in refused.stderr
    assert not calls.exists() and not state.exists()


def test_a_training_run_past_its_time_is_killed_with_its_children(
    tmp_path: Path, calls: Path
) -> None:
    pids = tmp_path / "pids"
    submit = stand_in(
        tmp_path / "spark-submit",
        "#!{python}\nimport os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n",
    )
    began = time.monotonic()
    with pytest.raises(FsrError, match="the training run did not end in 2 s"):
        make_archive(tmp_path / "jvm", str(submit), timeout=2)
    assert time.monotonic() - began < 30
    child = int(pids.read_text())
    assert procs.wait_gone(child, procs.start_marker(child) or "gone", 10), "its child too"
    assert list((tmp_path / "jvm").iterdir()) == []


def test_another_java_or_spark_finds_no_archive(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    jar = home / "jars" / "spark-core_2.13-4.3.0.jar"
    jar.write_bytes(b"core")
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    monkeypatch.setenv("SPARK_HOME", str(home))
    made = make_archive(tmp_path / "jvm", str(submit))
    assert java_option(tmp_path / "jvm", str(submit)) == f"-XX:SharedArchiveFile={made.path}"

    original = jar.stat().st_mtime_ns
    jar.write_bytes(b"core, patched")
    assert java_option(tmp_path / "jvm", str(submit)) is None, "another Spark"
    jar.write_bytes(b"core")
    os.utime(jar, ns=(original, original))
    assert java_option(tmp_path / "jvm", str(submit)) is not None, "that Spark again"

    (tmp_path / "other-java" / "bin").mkdir(parents=True)
    stand_in(tmp_path / "other-java" / "bin" / "java", "#!{python}\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "other-java"))
    assert java_option(tmp_path / "jvm", str(submit)) is None, "another Java"


def test_a_local_driver_starts_from_the_archive_only_when_there_is_one(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submit = stand_in(tmp_path / "spark-submit", DRIVER)
    target = LocalTarget(tmp_path / "state", spark_submit=str(submit), master="local[2]")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")

    def options_of_a_run(run_id: str) -> str:
        calls.unlink(missing_ok=True)
        target.submit(submission(tmp_path, run_id=run_id))
        try:
            deadline = time.monotonic() + 20
            while not calls.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return calls.read_text()
        finally:
            record = json.loads(target._record_path("job", run_id).read_text())
            procs.kill_group(int(record["pid"]), str(record["started"]))

    assert options_of_a_run("run-1") == "-Xss4m", "no archive: the options as they were"
    path = archive_path(tmp_path / "state" / "jvm", str(submit))
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"classes")
    assert options_of_a_run("run-2") == f"-XX:SharedArchiveFile={path} -Xss4m", (
        "the archive first: options already there win"
    )


def test_a_relative_state_folder_gives_java_absolute_paths(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default state folder is relative (`.flink-sql-runner`), and Java reads the archive's
    path from the JVM's working folder: the training run works in a folder of its own, a probe
    or a driver in theirs (a hostile review found both relative)."""
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    monkeypatch.chdir(tmp_path)
    made = make_archive(Path(".flink-sql-runner") / "jvm", str(submit))
    assert made.made and made.path.is_absolute() and made.path.read_bytes() == b"classes"
    assert made.path.parent == tmp_path / ".flink-sql-runner" / "jvm"
    option = java_option(Path(".flink-sql-runner") / "jvm", str(submit))
    assert option == f"-XX:SharedArchiveFile={made.path}"


def test_a_jar_that_links_to_nothing_or_an_unreadable_folder_means_no_archive_not_a_failure(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    submit = stand_in(home / "bin" / "spark-submit", TRAINING)
    (home / "jars" / "gone.jar").symlink_to(tmp_path / "no-such.jar")
    folder = tmp_path / "state" / "jvm"
    assert java_option(folder, str(submit)) is None  # before: FileNotFoundError
    made = make_archive(folder, str(submit))
    assert java_option(folder, str(submit)) == f"-XX:SharedArchiveFile={made.path}"

    def refused(self: Path) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_file", refused)
    assert java_option(folder, str(submit)) is None
