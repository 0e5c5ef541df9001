"""The real CLI against the minicluster of tests/support/hadoop_cluster.py: a `Workspace` whose
commands run with `--target yarn --master yarn --cluster-api <the ResourceManager>` and the
cluster's HADOOP_CONF_DIR in their environment only (never in this process's: the shared in-process
SparkSession must keep a local default file system), each in a session of its own.

While a command runs, the ResourceManager is asked every second which of our applications run,
so a step knows how long its new application took to show RUNNING. `clean_up` kills every
application of ours the ResourceManager still runs and any command's process left, by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.hadoop_cluster import Hadoop, working_in
from tests.support.workspace import Workspace, trace, wait_for

#: The tag the yarn target gives every application it submits (targets/yarn.py).
TAG = "flink-sql-runner"
ALIVE = "NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"
COMMAND_TIMEOUT = 900.0


@dataclass
class Ran:
    """One CLI command: its exit code and output, how long it took, and when (seconds after it
    began) each application that was not running before showed RUNNING in the ResourceManager."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    running_after: dict[str, float] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class YarnWorkspace(Workspace):
    def __init__(self, root: Path, cluster: Hadoop):
        options = ("--cluster-api", cluster.resource_manager)
        super().__init__(root, "yarn", "yarn", options)
        self.cluster = cluster
        self.env = {**os.environ, **cluster.env()}
        self.started: list[subprocess.Popen] = []

    def run(self, command: str, *args: str, paths: bool = True) -> Ran:
        """`command` through the real CLI; `watch` from the store alone (no tables, template)."""
        argv = self.argv(command, *args, paths=paths)
        if command == "watch":
            for option, value in (("--table-definition-path", self.tables),
                                  ("--template-file", self.template)):  # fmt: skip
                at = argv.index(option)
                assert argv[at + 1] == str(value)
                del argv[at : at + 2]
        before = {app["id"] for app in self.apps("RUNNING")}
        begun = time.monotonic()
        process = subprocess.Popen(  # noqa: S603 - a list, never a shell
            argv,
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.started.append(process)
        running_after: dict[str, float] = {}
        out: list[str] = []
        err: list[str] = []
        with _draining(process, out, err):
            while process.poll() is None:
                if time.monotonic() - begun > COMMAND_TIMEOUT:
                    self._kill(process)
                    raise AssertionError(f"{command} ran past {COMMAND_TIMEOUT:.0f} s: {argv}")
                for app in self.apps("RUNNING"):
                    if app["id"] not in before and app["id"] not in running_after:
                        running_after[app["id"]] = time.monotonic() - begun
                try:  # a second between two looks, cut short when the command ends
                    process.wait(1.0)
                except subprocess.TimeoutExpired:
                    pass
        seconds = time.monotonic() - begun
        trace(f"cli {command} {' '.join(args)}".strip(), begun)
        self._kill(process)  # anything it left in its session
        return Ran(process.returncode, "".join(out), "".join(err), seconds, running_after)

    def apps(self, states: str = ALIVE) -> list[dict]:
        """Our applications in `states` (comma-separated YARN states), oldest first."""
        found = self.cluster.apps(states=states, applicationTags=TAG)
        return sorted(found, key=lambda app: (app["startedTime"], app["id"]))

    def app(self, app_id: str) -> dict:
        """One application as the ResourceManager reports it, in any state."""
        (found,) = [app for app in self.cluster.apps() if app["id"] == app_id]
        return found

    def processes_of(self, app_id: str) -> list[int]:
        """The processes working in the application's containers (the NodeManager's containers
        are local processes here, each in a folder of the application's): its driver, JVM and
        Python, and its executors."""
        found = working_in(self.cluster.work_dir)
        return [pid for pid, cwd in found.items() if f"/{app_id}/" in f"{cwd}/"]

    def wait_ended(self, app_id: str, timeout: float = 120) -> dict:
        ended = ("FINISHED", "FAILED", "KILLED")
        return wait_for(
            lambda: (app := self.app(app_id))["state"] in ended and app,
            timeout=timeout,
            what=f"{app_id} to end",
        )

    def clean_up(self) -> None:
        """Every application of ours killed through the ResourceManager (and waited for), every
        command's session ended."""
        for process in self.started:
            self._kill(process)
        for app in self.apps():
            try:
                self.cluster.kill_app(app["id"])
            except OSError:
                pass
        wait_for(lambda: not self.apps(), timeout=120, what="no application of ours left")

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        """The command's session (it leads it), by its pid."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if process.poll() is None:
            process.wait(30)


@contextmanager
def _draining(process: subprocess.Popen, out: list[str], err: list[str]) -> Iterator[None]:
    """Read the command's stdout and stderr while it runs (a full pipe would block it)."""
    import threading

    readers = [
        threading.Thread(target=lambda s=stream, b=buffer: b.extend(s), daemon=True)
        for stream, buffer in ((process.stdout, out), (process.stderr, err))
    ]
    for reader in readers:
        reader.start()
    try:
        yield
    finally:
        for reader in readers:
            reader.join(30)
