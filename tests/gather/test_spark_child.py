"""How the deployer starts a runner probe (gather/spark_child.py), with a stand-in for
spark-submit that records what it was given and answers as a probe does: the probe runs under
the jobs' spark-submit, its settings (secrets among them) only in a private properties file,
never on the command line; a probe that fails, hangs or cannot be started is a reason, not an
answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flink_sql_runner.gather.preview import ask_preview_probe
from flink_sql_runner.gather.spark_child import probe_env, run_child
from flink_sql_runner.gather.state_reader import ask_state_probe
from flink_sql_runner.targets.runner_files import runner_script
from tests.support.fakes import stand_in

pytestmark = pytest.mark.fast

SECRET = "s3cr3t-v4lue=with spaces"
#: Records its argv, its environment's PYSPARK_PYTHON, and its properties file (text and
#: mode), then answers `{"answered": true}`; `FAIL` in the request: exits 1 as Spark does.
RECORDER = """#!{python}
import json, os, stat, sys
args = sys.argv[1:]
props = args[args.index("--properties-file") + 1]
given = args[args.index("--input") + 1]
request = json.load(open(given))
with open(os.environ["RECORD"], "w") as out:
    json.dump({{"argv": sys.argv, "python": os.environ.get("PYSPARK_PYTHON"),
               "java_options": os.environ.get("SPARK_SUBMIT_OPTS"),
               "props": open(props).read(), "mode": stat.S_IMODE(os.stat(props).st_mode),
               "request": request, "cwd": os.getcwd()}}, out)
if request.get("FAIL"):
    print("26/11/28 10:00:00 INFO SparkContext: Running Spark", file=sys.stderr)
    print('Exception in thread "main" java.io.IOException: no such bucket', file=sys.stderr)
    sys.exit(1)
json.dump({{"answered": True}}, open(args[args.index("--output") + 1], "w"))
"""


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    record = tmp_path / "record.json"
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    return stand_in(tmp_path / "spark-submit", RECORDER), record


def test_a_probe_runs_under_the_jobs_spark_submit_its_settings_in_a_private_file(
    recorder: tuple[Path, Path],
) -> None:
    submit, record = recorder
    settings = {"spark.hadoop.fs.s3a.secret.key": SECRET, "spark.jars": "/jars/kafka.jar"}
    answer, why = run_child(
        "preview_probe", {"old": {}}, 30, settings=settings, spark_submit=str(submit)
    )
    assert (answer, why) == ({"answered": True}, None)
    seen = json.loads(record.read_text())
    argv = seen["argv"]
    folder = Path(seen["cwd"])
    assert argv == [
        str(submit), "--master", "local", "--deploy-mode", "client",
        "--name", "flink-sql-runner-preview-probe",
        "--properties-file", str(folder / "probe.properties"),
        runner_script(), "--probe", "preview_probe",
        "--input", str(folder / "in.json"), "--output", str(folder / "out.json"),
    ]  # fmt: skip
    assert not any(SECRET in arg or "kafka.jar" in arg for arg in argv)
    assert seen["mode"] == 0o600
    assert f"spark.hadoop.fs.s3a.secret.key={SECRET}\n" in seen["props"]
    assert "spark.jars=/jars/kafka.jar\n" in seen["props"]
    assert seen["request"] == {"old": {}}
    assert not folder.exists(), "the private folder is removed with what it held"


def test_the_state_and_preview_askers_move_their_settings_out_of_the_request(
    recorder: tuple[Path, Path],
) -> None:
    submit, record = recorder
    conf = {"spark.hadoop.fs.s3a.secret.key": SECRET}
    ask_state_probe({"checkpoint": "s3a://b/c", "keys": 2, "conf": conf}, str(submit))
    seen = json.loads(record.read_text())
    assert seen["request"] == {"checkpoint": "s3a://b/c", "keys": 2}
    assert SECRET.split("=")[0] in seen["props"] and "--probe" in seen["argv"]
    assert seen["argv"][seen["argv"].index("--probe") + 1] == "state_probe"
    ask_preview_probe({"old": {}, "new": {}, "slice": {}, "session": conf}, str(submit))
    seen = json.loads(record.read_text())
    assert seen["request"] == {"old": {}, "new": {}, "slice": {}}
    assert seen["argv"][seen["argv"].index("--probe") + 1] == "preview_probe"
    assert "spark.hadoop.fs.s3a.secret.key=" in seen["props"]


def test_the_drivers_python_is_the_deployers_unless_the_environment_names_one(
    recorder: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    submit, record = recorder
    run_child("schema_probe", {}, 30, spark_submit=str(submit))
    assert json.loads(record.read_text())["python"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/spark-python/bin/python3")
    run_child("schema_probe", {}, 30, spark_submit=str(submit))
    assert json.loads(record.read_text())["python"] == "/opt/spark-python/bin/python3"


def test_a_probe_that_fails_says_sparks_reason_in_one_line(recorder: tuple[Path, Path]) -> None:
    submit, _ = recorder
    answer, why = run_child("schema_probe", {"FAIL": True}, 30, spark_submit=str(submit))
    assert answer == {}
    assert why == "it exited 1: java.io.IOException: no such bucket"


def test_a_probe_that_hangs_is_killed_and_one_that_cannot_start_says_so(tmp_path: Path) -> None:
    hangs = stand_in(tmp_path / "hangs", "#!{python}\nimport time\ntime.sleep(60)\n")
    assert run_child("schema_probe", {}, 1, spark_submit=str(hangs)) == ({}, "it took over 1 s")
    missing = tmp_path / "no-such-spark-submit"
    answer, why = run_child("schema_probe", {}, 5, spark_submit=str(missing))
    assert answer == {} and why == f"cannot run {missing}: No such file or directory"


def test_no_event_log_and_what_a_killed_deployer_left_is_swept(
    recorder: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54, finding 14 (b, e): the probe's Spark is told to write no event log; a probe
    folder whose deployer is gone (a SIGKILL runs no `finally`) is removed by the next probe,
    a running deployer's left alone."""
    import subprocess
    import sys
    import tempfile

    submit, record = recorder
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    gone = subprocess.Popen([sys.executable, "-c", ""])  # noqa: S603
    gone.wait()
    left = temp / f"fsr-preview_probe-p{gone.pid}-x1"
    left.mkdir()
    (left / "in.json").write_text('{"secret": "s"}')
    alive = temp / "fsr-preview_probe-p1-x2"
    alive.mkdir()
    run_child("preview_probe", {}, 30, spark_submit=str(submit))
    assert "spark.eventLog.enabled=false\n" in json.loads(record.read_text())["props"]
    assert sorted(p.name for p in temp.iterdir()) == [alive.name]


def test_a_probe_ends_with_its_deployer() -> None:
    """Review of issue 54, P11: a deployer killed (SIGKILL) left its probe running to its end
    and its answer (rows) on disk. The probe watches the deployer the environment names, by
    its pid and its start, and ends when it is gone."""
    import subprocess
    import threading

    from flink_sql_runner.host.processes import start_marker
    from runner.probe_session import watch_deployer

    deployer = subprocess.Popen(["sleep", "30"])  # noqa: S603, S607 - a stand-in deployer
    try:
        ended = threading.Event()
        said = {"FSR_DEPLOYER": f"{deployer.pid}:{start_marker(deployer.pid)}"}
        watcher = watch_deployer(said, every=0.05, gone=ended.set)
        assert watcher is not None and not ended.wait(0.3), "alive: the probe goes on"
    finally:
        deployer.kill()
        deployer.wait()
    assert ended.wait(5), "gone: the probe ends"
    assert watch_deployer({"FSR_DEPLOYER": "nope"}) is None
    assert "FSR_DEPLOYER" in probe_env() and probe_env()["FSR_DEPLOYER"].startswith(
        f"{os.getpid()}:linux:"
    )


def test_the_probes_jvm_has_the_client_compiler_only_and_never_an_archive(
    recorder: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe's JVM lives seconds: the client compiler only, before the options the
    environment gives (which still win). Never `jvm-archive`'s archive, even where the state
    folder holds one for its Spark and Java: a CI job may keep the state folder in its
    checkout, where a pull request could commit one (a hostile review of this change)."""
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.act.settings import Settings
    from flink_sql_runner.gather.schemas import run_probe
    from flink_sql_runner.targets.jvm_archive import archive_folder, archive_path

    submit, record = recorder

    def options() -> str:
        return json.loads(record.read_text())["java_options"]

    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    run_child("schema_probe", {}, 30, spark_submit=str(submit))
    assert options() == "-XX:TieredStopAtLevel=1"
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1 -XX:TieredStopAtLevel=4")
    given = "-XX:TieredStopAtLevel=1 -Dmine=1 -XX:TieredStopAtLevel=4"
    state = tmp_path / "state"
    planted = archive_path(archive_folder(state), str(submit))
    assert planted is not None
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"an archive a pull request committed")
    asks = [
        lambda: run_probe({}, str(submit)),
        lambda: ask_state_probe({"conf": {}}, str(submit)),
        lambda: ask_preview_probe({"session": {}}, str(submit)),
        lambda: Deployment(Settings(state_dir=state, spark_submit=str(submit))).ask_spark({}),
    ]
    for ask in asks:
        ask()
        assert options() == given


def test_the_probes_jvm_maps_the_archive_of_the_users_own_cache_folder_only(
    recorder: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jvm-archive --for-plan`'s archive, in this user's own cache folder, is the one a probe
    maps (after the client compiler, before the options the environment gives); not while it
    or its folder could be written by another user. The state folder's is still never mapped."""
    from flink_sql_runner.targets.jvm_archive import archive_folder, archive_path

    submit, record = recorder
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setenv("FLINK_SQL_RUNNER_USER_CACHE", str(tmp_path / "user"))
    for folder in (archive_folder(tmp_path / "state"), tmp_path / "user" / "jvm"):
        path = archive_path(folder, str(submit))
        assert path is not None
        folder.mkdir(parents=True, mode=0o700)
        folder.parent.chmod(0o700)  # whatever the umask
        path.write_bytes(b"classes")
        path.chmod(0o600)

    def options() -> str:
        run_child("schema_probe", {}, 30, spark_submit=str(submit))
        return json.loads(record.read_text())["java_options"]

    mapped = f"-XX:SharedArchiveFile={path}"
    assert options() == f"-XX:TieredStopAtLevel=1 {mapped}"
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    assert options() == f"-XX:TieredStopAtLevel=1 {mapped} -Dmine=1"
    path.chmod(0o666)
    assert options() == "-XX:TieredStopAtLevel=1 -Dmine=1", "one others may write: not mapped"
