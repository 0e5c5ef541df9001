"""A deploy as people live it, with the real command line in a subprocess: it says who holds the
store's lock while it waits, and Ctrl-C (a real SIGINT) finishes what is in flight, prints what
completed and leaves no intent record behind; a second Ctrl-C begins nothing more: the calls in
flight return first, and only then is the lock released.

spark-submit is a stand-in (a small Python program behaving like the runner: it reports its run
healthy in the status file, and stops at the stop marker) whose runs report healthy only once the
test opens a gate: so the test knows what is in flight when it sends the signal, without timing.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flink_sql_runner.stores.local_lock import FileLockBackend
from flink_sql_runner.stores.lock import StoreLock
from tests.support.workspace import Workspace, wait_for

FAKE_SUBMIT = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
doc = json.load(open(args[args.index("--manifest") + 1]))
up = os.path.join(os.environ["FAKE_UP_DIR"], doc["name"])
open(up, "w").close()
while not os.path.exists(os.environ["FAKE_GATE"]):
    time.sleep(0.05)
status = {{"state": "active", "run-id": doc["run-id"], "batches": 1}}
with open(doc["status-file"] + ".tmp", "w") as handle:
    json.dump(status, handle)
os.replace(doc["status-file"] + ".tmp", doc["status-file"])
while not os.path.exists(doc["stop-marker"]):
    time.sleep(0.05)
"""


class Deployer:
    """One `deploy` in a subprocess; its stderr read line by line as it comes."""

    def __init__(self, ws: Workspace, env: dict[str, str], *args: str):
        self.process = subprocess.Popen(
            ws.argv("deploy", *args),
            cwd=ws.root,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, starts: str, timeout: float = 60) -> str:
        """The first stderr line (from here on) that starts with `starts`."""
        while True:
            line = self.lines.get(timeout=timeout)
            self.err.append(line)
            if line.startswith(starts):
                return line

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        while not self.lines.empty():
            self.err.append(self.lines.get())
        return code, out, "\n".join(self.err)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture
def ws(tmp_path: Path):
    workspace = Workspace(tmp_path / "project")
    try:
        yield workspace
    finally:
        workspace.kill_all()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of every command of the test: the stand-in spark-submit."""
    script = tmp_path / "spark-submit"
    script.write_text(FAKE_SUBMIT.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "up").mkdir()
    monkeypatch.setenv("FAKE_UP_DIR", str(tmp_path / "up"))
    monkeypatch.setenv("FAKE_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("FLINK_SQL_RUNNER_SPARK_SUBMIT", str(script))
    return dict(os.environ)


def three_jobs(ws: Workspace) -> None:
    ws.write_tables(
        [{"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}}]
        + [
            {"name": f"out_{n}", "format": "parquet", "options": {"path": str(ws.root / n)}}
            for n in "abc"
        ]
    )
    for n in "abc":
        ws.write_job(f"job-{n}", **{"target-table": f"out_{n}"}, sql="SELECT value FROM ticks")


def up(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "up").iterdir())


def intents(ws: Workspace) -> list[str]:
    folder = ws.state / "manifests" / "_intents"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def status(ws: Workspace, env: dict[str, str]) -> dict[str, dict]:
    result = subprocess.run(
        ws.argv("status", "--output", "json"),
        cwd=ws.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)["jobs"]}


def test_ctrl_c_finishes_the_jobs_in_flight_and_prints_what_completed(ws, env, tmp_path):
    three_jobs(ws)
    deployer = Deployer(ws, env, "--parallelism", "2")
    try:
        # job-a and job-b are starting (their runs wait at the gate); job-c waits for a slot.
        wait_for(lambda: up(tmp_path) == ["job-a", "job-b"], timeout=120, interval=0.1)
        deployer.process.send_signal(signal.SIGINT)
        # Said at once: the runs in flight cannot finish while the gate is closed.
        deployer.wait_line("interrupted: finishing the jobs in flight, beginning no other")
        said = [deployer.wait_line("  ") for _ in range(3)]
        assert not (tmp_path / "gate").exists()
        (tmp_path / "gate").touch()
        code, out, err = deployer.finish()
    finally:
        deployer.kill()
    assert said[0].startswith("  finishing job-a: start v1 clean in ")
    assert said[0].endswith("(then record v1)")
    assert said[1].startswith("  finishing job-b: start v1 clean in ")
    assert said[2] == "  not beginning: job-c"
    assert code == 130, out + err
    lines = out.splitlines()
    for name in ("job-a", "job-b"):
        assert any(
            line.startswith(f"ok   {name}: running v1 (clean), healthy after ")
            and line.endswith("; manifest recorded")
            for line in lines
        ), out
    assert "--   job-c: not begun: the deploy was interrupted before it" in out
    assert "Deploy interrupted: 1 not begun (job-c); deploy again to carry out the rest." in out
    assert up(tmp_path) == ["job-a", "job-b"], "job-c was never submitted"
    assert intents(ws) == [] and not (ws.state / "manifests" / ".lock").exists()
    rows = status(ws, env)
    assert rows["job-a"]["drift"] == rows["job-b"]["drift"] == "in sync"
    assert "job-c" not in rows or rows["job-c"]["drift"] != "in sync"

    # The next deploy carries out the rest, and only that.
    again = ws.cli("deploy")
    assert again.returncode == 0, again.stdout + again.stderr
    assert up(tmp_path) == ["job-a", "job-b", "job-c"]
    assert "ok   job-c: running v1 (clean)" in again.stdout
    assert "job-a" not in again.stderr


def test_a_second_ctrl_c_stops_acting_and_the_next_deploy_settles_the_rest(ws, env, tmp_path):
    three_jobs(ws)
    deployer = Deployer(ws, env, "--parallelism", "2")
    try:
        wait_for(lambda: up(tmp_path) == ["job-a", "job-b"], timeout=120, interval=0.1)
        deployer.process.send_signal(signal.SIGINT)
        deployer.wait_line("interrupted: finishing")
        deployer.process.send_signal(signal.SIGINT)
        # It leaves while the gate is still closed: the health waits in flight end at their
        # next poll, and nothing more is begun.
        code, out, err = deployer.finish()
    finally:
        deployer.kill()
    assert code == 130, out + err
    assert "interrupted again: beginning nothing more; the calls in flight end first" in err
    assert "interrupted again: stopped acting while in flight (job-a: start v1 clean" in err
    assert "the next deploy settles these from their intent records" in err
    # What it printed: no job finished, two left in flight, one not begun.
    assert "??   job-a: left in flight (start v1 clean in " in out
    assert "its intent record stays; the next deploy settles it" in out
    assert "--   job-c: not begun" in out
    assert (
        "Deploy interrupted: 1 not begun (job-c), 2 left in flight (job-a, job-b); deploy again "
        "to carry out the rest." in out
    )
    assert intents(ws) == ["job-a.json", "job-b.json"], "the runs in flight may be up"
    assert not (ws.state / "manifests" / ".lock").exists(), "the lock was released"

    (tmp_path / "gate").touch()
    again = ws.cli("deploy")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "interrupted start of v1 (start-clean, at submitted): its run is up" in again.stdout
    assert up(tmp_path) == ["job-a", "job-b", "job-c"]
    assert intents(ws) == []
    assert {row["drift"] for row in status(ws, env).values()} == {"in sync"}


def test_a_deploy_waiting_for_the_lock_says_who_holds_it(ws, env, tmp_path):
    three_jobs(ws)
    (tmp_path / "gate").touch()
    lock = StoreLock(FileLockBackend(ws.state / "manifests" / ".lock"), "stop")
    lock.acquire(timeout=0)
    deployer = Deployer(ws, env, "--lock-timeout", "120")
    try:
        line = deployer.wait_line("waiting for the manifest store's lock")
        lock.release()
        code, out, err = deployer.finish()
    finally:
        lock.release()
        deployer.kill()
    assert f"held by stop by pid {os.getpid()} on {socket.gethostname()} since 20" in line
    assert "giving up in 120 s (--lock-timeout)" in line
    assert code == 0, out + err
    assert "Deploy finished: all jobs ok." in out
