"""The local target: each job a detached `spark-submit --master local[*]` on this machine.

A registry, `<state-dir>/runs/<name>/<run id>.json`, outlives the deployer: each run's pid and
process start time, so a reused pid is never taken for the job. A run is recorded before it can
outlive the deployer: spark-submit is started behind a small gate that waits on a pipe from the
deployer and only then becomes spark-submit (`exec`, same pid); the deployer opens the gate
after the record is written. A deployer killed in between closes the pipe, and the gate exits
without starting anything.

Each run logs to a file of its own, `<state-dir>/logs/<name>/<UTC start>-<run id>.log`; a start
keeps the newest `KEEP_LOGS` logs of the job (and those of runs still recorded) and deletes the
older ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import processes as procs
from flink_sql_runner.host import runtime
from flink_sql_runner.host.atomic import write_atomically
from flink_sql_runner.model.checkpoint_report import RunSeen
from flink_sql_runner.model.control import parse_app_name
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.stored import utc_now_iso
from flink_sql_runner.stores.storage import FileStorage
from flink_sql_runner.targets import local_logs
from flink_sql_runner.targets.base import (
    DriverLog,
    LogQuery,
    Started,
    StopNotConfirmed,
    Stopped,
    Submission,
)
from flink_sql_runner.targets.jvm_archive import archive_folder, with_archive
from flink_sql_runner.targets.runner_files import runner_script
from flink_sql_runner.targets.sparksubmit import (  # noqa: F401 - find_spark_submit re-exported
    find_spark_submit,
    properties_file_text,
    spark_release,
    submit_command,
)

LOG_TAIL_LINES = 30
#: The state folder's folders of this target: run records (`runs/<name>/<run id>.json`, and
#: `runs/<name>.json` of earlier versions) and driver logs (`logs/<name>/`).
RUN_RECORDS = "runs"
LOGS = "logs"


def state_places(state_dir: Path, name: str) -> list[tuple[str, Path]]:
    """(what, where) of everything runs of job `name` on this target leave in the state folder,
    whichever target a later command is given (`forget` clears them)."""
    return [
        ("run records", state_dir / RUN_RECORDS / name),
        ("run record", state_dir / RUN_RECORDS / f"{name}.json"),
        ("logs", state_dir / LOGS / name),
    ]


#: The logs of a job's runs kept on a start (the new run's included).
KEEP_LOGS = 5
#: How long a killed job's processes may take to be gone before the stop is not confirmed.
KILL_WAIT_SECONDS = 30.0
#: Runs as `python -c GATE spark-submit ...`: becomes spark-submit once the deployer says "go".
GATE = (
    "import os, sys\n"
    "if sys.stdin.readline().strip() != 'go':\n"
    "    sys.exit(75)\n"
    "null = os.open(os.devnull, os.O_RDONLY)\n"
    "os.dup2(null, 0)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


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


def _logged_version(path: Path) -> int | None:
    """The version a run's log is of, from its first line (`==== <time> <app name> run <id>`)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(4096).decode("utf-8", errors="replace").split()
    except OSError:
        return None
    parsed = parse_app_name(first[2]) if len(first) > 2 and first[0] == "====" else None
    return parsed[1] if parsed else None


class LocalTarget:
    name = "local"
    #: A local run is a child process, listed from the moment it exists.
    submit_timeout = 30.0

    def __init__(
        self,
        state_dir: Path,
        spark_submit: str | None = None,
        master: str = "local[*]",
        extra_args: tuple[str, ...] = (),
        keep_logs: int = KEEP_LOGS,
    ):
        self.state_dir = state_dir
        self.runs = state_dir / RUN_RECORDS
        self.secrets = self.runs / ".secrets"
        self.logs = state_dir / LOGS
        #: `jvm-archive`'s class-data-sharing archive, used when there is one (jvm_archive.py).
        self.jvm = archive_folder(state_dir)
        self.keep_logs = keep_logs
        self.spark_submit = spark_submit
        self.master = master
        self.extra_args = extra_args
        self.storage = FileStorage()

    def spark_version(self) -> str | None:
        """The Spark of the spark-submit that starts the jobs."""
        return spark_release(find_spark_submit(self.spark_submit))

    # -- registry ---------------------------------------------------------------------------
    def _record_path(self, name: str, run_id: str) -> Path:
        return self.runs / name / f"{run_id}.json"

    def _record_files(self) -> list[tuple[str, str]]:
        """(job name, record file) of every recorded run; `runs/<name>.json` is the layout of
        earlier versions."""
        if not self.runs.is_dir():
            return []
        found = []
        # Listed with os.scandir, whose entries know their type, and kept as text: a deployer's
        # state holds a record per running job (thousands), and Path's iterdir, glob, sort and
        # joins cost microseconds each.
        for entry in _sorted_entries(str(self.runs)):
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                try:
                    inside = _sorted_entries(entry.path)
                except PermissionError:  # as Path.glob: a folder it may not list holds none
                    inside = []
                found += [(entry.name, f.path) for f in inside if f.name.endswith(".json")]
            elif entry.name.endswith(".json") and entry.name != ".json":
                found.append((entry.name[: -len(".json")], entry.path))
        return found

    @staticmethod
    def _read(path: str | Path) -> dict[str, Any]:
        record = json.loads(_small_file(path))
        int(record["pid"]), str(record["started"]), str(record["name"])  # all must be there
        return record

    def _run(self, record: dict[str, Any]) -> Run:
        return Run(
            name=record["name"],
            version=record.get("version"),
            run_id=record.get("run-id"),
            detail=f"pid {record['pid']}",
        )

    def _record_of(self, run: Run) -> tuple[Path, dict[str, Any] | None] | None:
        """The record file of `run` and its content (None: unreadable); None: no record."""
        folder = self.runs / run.name
        paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
        legacy = self.runs / f"{run.name}.json"
        for path in [*paths, *([legacy] if legacy.is_file() else [])]:
            try:
                record = self._read(path)
            except (OSError, ValueError, KeyError, TypeError):
                if path.stem == run.run_id:
                    return path, None
                continue
            if record.get("run-id") == run.run_id:
                return path, record
        return None

    def list_runs(self) -> Listing:
        found = []
        markers: dict[int, str | None] = {}  # one read of /proc per pid in this listing
        for name, path in self._record_files():
            try:
                record = self._read(path)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else "not a run record"
                run_id = os.path.basename(path).removesuffix(".json")
                found.append(
                    Run(name, None, run_id, f"run record {path} is unreadable: {why}",
                        liveness=Liveness.UNKNOWN)
                )  # fmt: skip
                continue
            if procs.is_same_process(int(record["pid"]), str(record["started"]), markers):
                found.append(self._run(record))
        return Listing.of_runs(found)

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

    def _secrets_file(self, run_id: str | None) -> Path:
        return self.secrets / f"{run_id}.properties"

    def _log_path(self, submission: Submission) -> Path:
        """A file of the run's own; names sort by start time."""
        now = runtime.wall()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
        return self.logs / submission.name / f"{stamp}-{submission.run_id}.log"

    def _prune_logs(self, name: str) -> None:
        """Keep the newest `keep_logs` logs of job `name`, and every log a run record names."""
        folder = self.logs / name
        recorded = set()
        for _, path in self._record_files():
            try:
                recorded.add(Path(json.loads(_small_file(path))["log"]).name)
            except (OSError, ValueError, KeyError, TypeError):
                continue
        logs = sorted(folder.glob("*.log")) if folder.is_dir() else []
        for old in logs[: max(0, len(logs) - self.keep_logs)]:
            if old.name not in recorded:
                old.unlink(missing_ok=True)

    def submit(self, submission: Submission) -> Started:
        log_path = self._log_path(submission)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        properties_file = None
        if submission.secret_conf:
            self.secrets.mkdir(parents=True, exist_ok=True, mode=0o700)
            properties_file = self._secrets_file(submission.run_id)
            spark_submit = find_spark_submit(self.spark_submit)
            body = properties_file_text(spark_submit, submission.secret_conf)
            write_atomically(properties_file, body, 0o600)
        env = with_archive(procs.child_env(), self.jvm, find_spark_submit(self.spark_submit))
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", env["PYSPARK_PYTHON"])
        args = self.command(submission, properties_file)
        with log_path.open("ab") as log:
            log.write(
                f"==== {time.strftime('%Y-%m-%dT%H:%M:%S')} {submission.app_name} "
                f"run {submission.run_id}\n".encode()
            )
            log.flush()
            try:
                gate = subprocess.Popen(  # noqa: S603 - a list, never a shell
                    [sys.executable, "-c", GATE, *args],
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                    close_fds=True,
                )
            except OSError as exc:
                self._forget_secrets(submission.run_id)
                raise FsrError(f"cannot run {sys.executable}: {exc.strerror}") from None
        record = {
            "name": submission.name,
            "version": submission.version,
            "run-id": submission.run_id,
            "pid": gate.pid,
            "started": procs.start_marker(gate.pid) or "gone",
            "started-at": utc_now_iso(),
            "app-name": submission.app_name,
            "log": str(log_path),
            "stop-marker": submission.stop_marker,
            "status-file": submission.status_file,
        }
        path = self._record_path(submission.name, submission.run_id)
        try:
            write_atomically(path, json.dumps(record, indent=2))
            assert gate.stdin is not None
            gate.stdin.write(b"go\n")
            gate.stdin.close()
        except (FsrError, OSError) as exc:
            if gate.stdin is not None and not gate.stdin.closed:
                gate.stdin.close()  # the gate exits without starting spark-submit
            procs.wait_gone(gate.pid, record["started"], 10)
            path.unlink(missing_ok=True)
            self._forget_secrets(submission.run_id)
            raise FsrError(f"cannot record the run of {submission.name}: {exc}") from None
        self._prune_logs(submission.name)
        return Started(self._run(record), log=str(log_path))

    def liveness(self, run: Run) -> Liveness:
        found = self._record_of(run)
        if found is None:
            return Liveness.GONE  # a run is recorded before it can start
        _, record = found
        if record is None:
            return Liveness.UNKNOWN
        alive = procs.is_same_process(int(record["pid"]), str(record["started"]))
        return Liveness.ALIVE if alive else Liveness.GONE

    def launched(self, run: Run) -> None:
        self._forget_secrets(run.run_id)

    def _forget_secrets(self, run_id: str | None) -> None:
        self._secrets_file(run_id).unlink(missing_ok=True)

    def failure_detail(self, run: Run) -> str:
        """The last lines of the run's log, named by its path (found in the logs folder by its
        run id: a run stopped after it reported its failure has no record any more)."""
        found = self.driver_log(LogQuery(run.name, run_id=run.run_id)) if run.run_id else None
        if found is None:
            return ""
        tail = log_tail(Path(found.path))
        return f"last lines of {found.path}:\n{tail}" if tail else f"its log {found.path} is empty"

    def logged_runs(self, name: str, version: int) -> list[RunSeen]:
        """The runs of `version` its driver logs show (local_logs.py)."""
        return local_logs.logged_runs(self.logs, name, version)

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        """The newest log file in `logs/<name>/` that matches: its name carries the run id,
        its first line the application name (and so the version)."""
        folder = self.logs / query.name
        logs = sorted(folder.glob("*.log"), reverse=True) if folder.is_dir() else []
        for path in logs:
            run_id = path.stem.partition("-")[2] or None
            if query.run_id is not None and run_id != query.run_id:
                continue
            version = _logged_version(path)
            if query.version is not None and version != query.version:
                continue
            where = str(path.absolute())
            return DriverLog(where, where, run_id, version)
        return None

    def stop(self, run: Run, stop_marker: str, timeout: float) -> Stopped:
        found = self._record_of(run)
        begun = runtime.monotonic()
        if found is None:
            return Stopped(True, 0.0, "was not running")
        path, record = found
        if record is None:
            raise StopNotConfirmed(
                f"the run record {path} is unreadable: cannot tell which process to stop; "
                "stop it by hand and delete the record"
            )
        pid, started = int(record["pid"]), str(record["started"])
        if procs.is_same_process(pid, started):
            self.storage.write_text(stop_marker, f"stop requested at {runtime.wall():.0f}\n")
        if procs.wait_group_gone(pid, started, timeout):
            seconds = runtime.monotonic() - begun
            result = Stopped(True, seconds, f"stopped gracefully in {seconds:.1f} s")
        else:
            procs.kill_group(pid, started)
            if not procs.wait_group_gone(pid, started, KILL_WAIT_SECONDS):
                raise StopNotConfirmed(
                    f"pid {pid} did not stop within {timeout:.0f} s of the stop marker and its "
                    f"processes were still there {KILL_WAIT_SECONDS:.0f} s after SIGKILL"
                )
            seconds = runtime.monotonic() - begun
            result = Stopped(
                False,
                seconds,
                f"did not stop within {timeout:.0f} s of the stop marker; killed (SIGKILL)",
            )
        path.unlink(missing_ok=True)
        if path.parent != self.runs and not any(path.parent.iterdir()):
            shutil.rmtree(path.parent, ignore_errors=True)
        self._forget_secrets(run.run_id)
        return result


def _small_file(path: str | Path) -> bytes:
    """A small file's bytes, read without the buffered file object `Path.read_bytes` makes (a
    listing reads thousands of run records: about half the time)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _sorted_entries(folder: str) -> list[os.DirEntry[str]]:
    """A folder's entries by name (as `sorted(Path.iterdir())` orders them)."""
    with os.scandir(folder) as found:
        return sorted(found, key=lambda entry: entry.name)
