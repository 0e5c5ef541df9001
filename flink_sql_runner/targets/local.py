"""The local target: each job a detached `spark-submit --master local[*]` on this machine.

A registry under `<state-dir>/runs/<name>.json` outlives the deployer: it holds the pid and the
process's start time, so a reused pid is never taken for the job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from flink_sql_runner import procs
from flink_sql_runner.checkpoints import write_text
from flink_sql_runner.errors import FsrError
from flink_sql_runner.plan import RunningJob
from flink_sql_runner.stored import utc_now_iso
from flink_sql_runner.stores.local import write_atomically
from flink_sql_runner.targets.base import Started, Stopped, Submission
from flink_sql_runner.targets.sparksubmit import (  # noqa: F401 - find_spark_submit re-exported
    find_spark_submit,
    properties_text,
    runner_script,
    submit_command,
)

LOG_TAIL_LINES = 30


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class LocalTarget:
    name = "local"

    def __init__(
        self,
        state_dir: Path,
        spark_submit: str | None = None,
        master: str = "local[*]",
        extra_args: tuple[str, ...] = (),
    ):
        self.state_dir = state_dir
        self.runs = state_dir / "runs"
        self.logs = state_dir / "logs"
        self.spark_submit = spark_submit
        self.master = master
        self.extra_args = extra_args

    # -- registry ---------------------------------------------------------------------------
    def _record_path(self, name: str) -> Path:
        return self.runs / f"{name}.json"

    def _records(self) -> list[dict[str, Any]]:
        if not self.runs.is_dir():
            return []
        records = []
        for path in sorted(self.runs.glob("*.json")):
            try:
                records.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return records

    def _running(self, record: dict[str, Any]) -> RunningJob:
        return RunningJob(
            name=record["name"],
            version=record.get("version"),
            run_id=record.get("run-id"),
            detail=f"pid {record['pid']}",
        )

    def _record_of(self, running: RunningJob) -> dict[str, Any] | None:
        try:
            record = json.loads(self._record_path(running.name).read_text())
        except (OSError, ValueError):
            return None
        return record if record.get("run-id") == running.run_id else None

    def list_running(self) -> dict[str, RunningJob]:
        found = {}
        for record in self._records():
            if procs.is_same_process(int(record.get("pid", 0)), str(record.get("started"))):
                found[record["name"]] = self._running(record)
        return found

    # -- actions ----------------------------------------------------------------------------
    def command(self, submission: Submission, properties_file: Path | None) -> list[str]:
        return submit_command(
            find_spark_submit(self.spark_submit),
            self.master,
            submission,
            runner=runner_script(),
            properties_file=properties_file,
            extra_args=self.extra_args,
        )

    def submit(self, submission: Submission) -> Started:
        self.runs.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        properties_file = None
        if submission.secret_conf:
            properties_file = self.runs / f"{submission.name}.properties"
            spark_submit = find_spark_submit(self.spark_submit)
            body = properties_text(spark_submit, submission.secret_conf)
            write_atomically(properties_file, body, mode=0o600)
        log_path = self.logs / f"{submission.name}.log"
        env = dict(os.environ)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", env["PYSPARK_PYTHON"])
        args = self.command(submission, properties_file)
        with log_path.open("ab") as log:
            log.write(
                f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} {submission.app_name} "
                f"run {submission.run_id}\n".encode()
            )
            log.flush()
            try:
                process = subprocess.Popen(  # noqa: S603 - a list, never a shell
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                    close_fds=True,
                )
            except OSError as exc:
                raise FsrError(f"cannot run {args[0]}: {exc.strerror}") from None
        started = procs.start_marker(process.pid) or "gone"
        record = {
            "name": submission.name,
            "version": submission.version,
            "run-id": submission.run_id,
            "pid": process.pid,
            "started": started,
            "started-at": utc_now_iso(),
            "app-name": submission.app_name,
            "log": str(log_path),
            "stop-marker": submission.stop_marker,
            "status-file": submission.status_file,
        }
        write_atomically(self._record_path(submission.name), json.dumps(record, indent=2))
        return Started(self._running(record), log=str(log_path))

    def is_alive(self, running: RunningJob) -> bool:
        record = self._record_of(running)
        return bool(record) and procs.is_same_process(int(record["pid"]), str(record["started"]))

    def failure_detail(self, running: RunningJob) -> str:
        record = self._record_of(running)
        if not record:
            return ""
        tail = log_tail(Path(record["log"]))
        return f"last lines of {record['log']}:\n{tail}" if tail else ""

    def stop(self, running: RunningJob, stop_marker: str, timeout: float) -> Stopped:
        record = self._record_of(running)
        begun = time.monotonic()
        if not record:
            return Stopped(True, 0.0, "was not running")
        pid, started = int(record["pid"]), str(record["started"])
        write_text(stop_marker, f"stop requested at {time.time():.0f}\n")
        if procs.wait_gone(pid, started, timeout):
            seconds = time.monotonic() - begun
            result = Stopped(True, seconds, f"stopped gracefully in {seconds:.1f} s")
        else:
            procs.kill_group(pid, started)
            procs.wait_gone(pid, started, 10)
            seconds = time.monotonic() - begun
            result = Stopped(
                False,
                seconds,
                f"did not stop within {timeout:.0f} s of the stop marker; killed (SIGKILL)",
            )
        self._record_path(running.name).unlink(missing_ok=True)
        return result
