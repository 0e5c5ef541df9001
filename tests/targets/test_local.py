"""The local target's process handling, with a stand-in for spark-submit (a small Python program
that behaves like the runner towards the stop marker, or ignores it)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flink_sql_runner.host import processes as procs
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.targets.base import StopNotConfirmed, Submission
from flink_sql_runner.targets.local import LocalTarget, find_spark_submit

FAKE_SUBMIT = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
manifest = args[args.index("--manifest") + 1]
with open(os.environ["FAKE_ARGS_FILE"] + ".part", "w") as handle:  # whole or not at all
    json.dump(args, handle)
os.replace(os.environ["FAKE_ARGS_FILE"] + ".part", os.environ["FAKE_ARGS_FILE"])
print("fake driver up", flush=True)
marker = json.load(open(manifest))["stop-marker"]
while True:
    if os.environ.get("FAKE_HONOURS_MARKER") == "1" and os.path.exists(marker):
        print("fake driver stopping", flush=True)
        sys.exit(0)
    time.sleep(0.05)
"""


@pytest.fixture
def fake_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "fake-spark-submit"
    script.write_text(FAKE_SUBMIT.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_ARGS_FILE", str(tmp_path / "args.json"))
    monkeypatch.setenv("FAKE_HONOURS_MARKER", "1")
    return script


@pytest.fixture
def target(tmp_path: Path, fake_submit: Path):
    made = LocalTarget(tmp_path / "state", spark_submit=str(fake_submit), master="local[2]")
    yield made
    for runs in made.list_runs().runs.values():
        for run in runs:
            found = made._record_of(run)
            if found and found[1]:
                procs.kill_group(int(found[1]["pid"]), str(found[1]["started"]))


def submission(tmp_path: Path, **overrides) -> Submission:
    control = tmp_path / "ckpt" / "job" / "_control"
    control.mkdir(parents=True, exist_ok=True)
    manifest = control / "v1.manifest.json"
    manifest.write_text(json.dumps({"stop-marker": str(control / "v1.stop")}))
    fields = dict(
        name="job",
        version=1,
        run_id="run-1",
        app_name="flink-sql-runner-job-v1",
        runtime_manifest=str(manifest),
        spark_conf={"spark.sql.shuffle.partitions": "2"},
        stop_marker=str(control / "v1.stop"),
        status_file=str(control / "v1.status.json"),
    )
    fields.update(overrides)
    return Submission(**fields)


def wait_for_args(tmp_path: Path) -> list[str]:
    path = tmp_path / "args.json"
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return json.loads(path.read_text())


def test_submit_runs_detached_and_is_listed(tmp_path: Path, target: LocalTarget):
    started = target.submit(submission(tmp_path))
    args = wait_for_args(tmp_path)
    assert args[:4] == ["--master", "local[2]", "--name", "flink-sql-runner-job-v1"]
    assert ["--conf", "spark.sql.shuffle.partitions=2"] == args[4:6]
    (run,) = target.list_runs().of("job")
    assert run.version == 1 and run.run_id == "run-1"
    assert target.liveness(started.run) is Liveness.ALIVE
    pid = int(started.run.detail.split()[-1])
    assert os.getpgid(pid) == pid, "the job leads its own process session"
    assert "fake driver up" in Path(started.log).read_text()


def test_stop_is_graceful_through_the_stop_marker(tmp_path: Path, target: LocalTarget):
    sub = submission(tmp_path)
    started = target.submit(sub)
    wait_for_args(tmp_path)
    stopped = target.stop(started.run, sub.stop_marker, timeout=20)
    assert stopped.graceful and "stopped gracefully" in stopped.how
    assert target.list_runs().runs == {}
    assert "fake driver stopping" in Path(started.log).read_text()


def test_a_job_ignoring_the_marker_is_killed_after_the_timeout(
    tmp_path: Path, target: LocalTarget, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_HONOURS_MARKER", "0")
    sub = submission(tmp_path)
    started = target.submit(sub)
    wait_for_args(tmp_path)
    pid = int(started.run.detail.split()[-1])
    stopped = target.stop(started.run, sub.stop_marker, timeout=1)
    assert not stopped.graceful
    assert "killed (SIGKILL)" in stopped.how
    assert target.liveness(started.run) is Liveness.GONE
    assert not procs.group_alive(pid), "the stop returns once every process of the job is gone"


def test_a_reused_pid_is_not_taken_for_the_job(tmp_path: Path, target: LocalTarget):
    target.runs.mkdir(parents=True)
    # A live process (this test's own) under a start time that is not its own.
    record = {"name": "job", "version": 1, "run-id": "r", "pid": os.getpid(), "started": "x:1"}
    (target.runs / "job.json").write_text(json.dumps(record))
    assert target.list_runs().runs == {}
    assert target.liveness(Run("job", 1, "r", f"pid {os.getpid()}")) is Liveness.GONE


def test_an_unreadable_run_record_is_a_run_that_may_be_alive(tmp_path: Path, target: LocalTarget):
    (target.runs / "job").mkdir(parents=True)
    (target.runs / "job" / "r.json").write_text('{"name": "job", "pid": ')
    (run,) = target.list_runs().of("job")
    assert run.liveness is Liveness.UNKNOWN and "run record" in run.detail
    assert target.liveness(Run("job", 1, "r")) is Liveness.UNKNOWN
    with pytest.raises(StopNotConfirmed, match="unreadable"):
        target.stop(Run("job", 1, "r"), str(tmp_path / "v1.stop"), timeout=1)


def test_secret_properties_go_to_a_private_file_not_the_command_line(
    tmp_path: Path, target: LocalTarget
):
    sub = submission(tmp_path, secret_conf={"spark.hadoop.fs.s3a.secret.key": "hunter2"})
    target.submit(sub)
    args = wait_for_args(tmp_path)
    assert not any("hunter2" in arg for arg in args)
    properties = Path(args[args.index("--properties-file") + 1])
    assert properties.read_text() == "spark.hadoop.fs.s3a.secret.key=hunter2\n"
    assert stat.S_IMODE(properties.stat().st_mode) == 0o600
    assert stat.S_IMODE(properties.parent.stat().st_mode) == 0o700
    target.launched(Run("job", 1, sub.run_id))
    assert not properties.exists(), "gone once the run reported in"


KILLED_BETWEEN_POPEN_AND_RECORD = """
import os, signal, sys
from pathlib import Path
from flink_sql_runner.targets import local
from flink_sql_runner.targets.base import Submission

def die(path, text, mode=0o644):
    if Path(path).suffix == ".json":  # the run record: the deployer dies right before it
        os.kill(os.getpid(), signal.SIGKILL)

local.write_atomically = die
target = local.LocalTarget(Path(sys.argv[1]), master="local[1]")  # the real spark-submit
target.submit(Submission(name="job", version=1, run_id="run-1", app_name=sys.argv[2],
                         runtime_manifest=sys.argv[3], stop_marker=sys.argv[4]))
"""


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def spark_submits_naming(text: str) -> list[int]:
    """Processes (spark-submit's shell or its JVM) whose arguments name `text`; the gate itself,
    a Python process still waiting for its go, does not count."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if text.encode() in cmdline and b"execvp" not in cmdline:
            found.append(int(entry.name))
    return found


def test_a_deployer_killed_between_spark_submit_and_its_record_leaves_nothing_running(
    tmp_path: Path, fake_submit: Path, target: LocalTarget
):
    sub = submission(tmp_path)
    app = f"flink-sql-runner-gate-test-{os.getpid()}-v1"
    died = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_POPEN_AND_RECORD, str(target.state_dir), app,
         sub.runtime_manifest, sub.stop_marker],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert died.returncode == -9, died.stderr
    deadline = time.monotonic() + 3  # a spark-submit let through would be up within this
    while time.monotonic() < deadline:
        assert spark_submits_naming(app) == [], "the gate never lets spark-submit start"
        time.sleep(0.1)
    gate_left = [pid for pid in Path("/proc").iterdir() if pid.name.isdigit()
                 and app.encode() in _cmdline(pid)]  # fmt: skip
    assert gate_left == [], "and the gate itself has gone"
    assert target.list_runs().runs == {}
    started = target.submit(sub)  # the next deploy starts exactly one
    wait_for_args(tmp_path)
    assert [r.run_id for r in target.list_runs().of("job")] == [started.run.run_id]


def test_which_spark_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert find_spark_submit("/opt/my/spark-submit") == "/opt/my/spark-submit"
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert find_spark_submit() == "/opt/spark/bin/spark-submit"
    monkeypatch.delenv("SPARK_HOME")
    bundled = find_spark_submit()
    assert bundled.endswith("pyspark/bin/spark-submit") and Path(bundled).exists()


def test_each_run_logs_to_a_file_of_its_own_and_old_ones_go(tmp_path: Path, fake_submit: Path):
    target = LocalTarget(tmp_path / "state", spark_submit=str(fake_submit), keep_logs=3)
    started = []
    try:
        # run-0 keeps running: its log stays, however many runs start after it.
        for i in range(6):
            sub = submission(tmp_path / f"r{i}", run_id=f"run-{i}")
            started.append(target.submit(sub))
            log = Path(started[-1].log)
            deadline = time.monotonic() + 20
            while "fake driver up" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert log.read_text().startswith("==== ") and f"run run-{i}\n" in log.read_text()
            if i:
                assert target.stop(started[-1].run, sub.stop_marker, timeout=20).graceful
        logs = sorted((tmp_path / "state" / "logs" / "job").glob("*.log"))
        assert logs == sorted(Path(s.log) for s in [started[0], *started[-3:]])
        assert [p.name.rsplit("-run-", 1)[1] for p in logs] == ["0.log", "3.log", "4.log", "5.log"]
    finally:
        for s in started:
            found = target._record_of(s.run)
            if found and found[1]:
                procs.kill_group(int(found[1]["pid"]), str(found[1]["started"]))


def test_a_listing_reads_each_pid_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records naming one process read its start once per listing; a record whose marker is
    not that process's is still not listed."""
    target = LocalTarget(tmp_path / "state", master="local[2]")
    me, started = os.getpid(), procs.start_marker(os.getpid())
    for n, marker in enumerate([started, started, started, "linux:0"]):
        folder = target.runs / f"job{n}"
        folder.mkdir(parents=True)
        record = {"name": f"job{n}", "version": 1, "run-id": f"r{n}", "pid": me, "started": marker}
        (folder / f"r{n}.json").write_text(json.dumps(record))
    read, real = [], procs.start_marker
    monkeypatch.setattr(procs, "start_marker", lambda pid: read.append(pid) or real(pid))
    assert sorted(target.list_runs().runs) == ["job0", "job1", "job2"]
    assert read == [me]


def test_the_record_files_are_found_as_path_globbing_finds_them(tmp_path: Path) -> None:
    """Folders per job (`runs/<name>/<run>.json`, hidden records among them) and the earlier
    layout (`runs/<name>.json`), in name order; hidden entries of `runs/` and other files are
    not records."""
    target = LocalTarget(tmp_path / "state", master="local[2]")
    runs = target.runs
    for path in [
        "b/2.json",
        "b/10.json",
        "b/.h.json",
        "b/notes.txt",
        "a.b/x.json",
        ".hidden/y.json",
    ]:
        (runs / path).parent.mkdir(parents=True, exist_ok=True)
        (runs / path).write_text("{}")
    for path in ["c.json", "a.json", ".d.json", "e.JSON", "f.yaml"]:
        (runs / path).write_text("{}")
    (runs / "empty").mkdir()
    by_path = []  # what `Path.iterdir` and `Path.glob` find, as it was listed before
    for entry in sorted(runs.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            by_path += [(entry.name, str(f)) for f in sorted(entry.glob("*.json"))]
        elif entry.suffix == ".json":
            by_path.append((entry.stem, str(entry)))
    assert target._record_files() == by_path
    assert [name for name, _ in by_path] == ["a.b", "a", "b", "b", "b", "c"]  # a.b < a.json
