"""A real Spark standalone cluster on 127.0.0.1 for tests: one master (REST gateway on) and one
worker, started with pyspark's own `bin/spark-class` on free ports, each in its own process group.
Drivers and executors the worker launches stay in the worker's group, so stopping the cluster
(SIGTERM, then SIGKILL, to both groups) also ends every job it ran."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    rest: str  # spark://127.0.0.1:<rest port>: the gateway's own URL, also taken by --master
    web_ui: str  # http://127.0.0.1:<ui port>, what --cluster-api takes
    work_dir: Path
    master: str = ""  # spark://127.0.0.1:<master port>: the master as drivers know it
    pids: list[int] = field(default_factory=list)
    started_in: float = 0.0

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=10) as response:
            return json.load(response)

    def active_apps(self) -> list[str]:
        return [app["name"] for app in self.state()["activeapps"]]

    def kill_drivers(self, timeout: float = 60.0) -> None:
        """Kill every driver the cluster still runs, through its REST gateway, and wait until no
        app is left: what a failed scenario left running must not meet the next test's jobs."""
        base = self.rest.replace("spark://", "http://")
        for driver in self.state().get("activedrivers", []):
            url = f"{base}/v1/submissions/kill/{driver['id']}"
            with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=10):
                pass
        deadline = time.monotonic() + timeout
        while self.active_apps() and time.monotonic() < deadline:
            time.sleep(0.5)

    def driver_log(self, submission_id: str) -> str:
        path = self.work_dir / submission_id / "stderr"
        return path.read_text(errors="replace") if path.exists() else ""


def _spark_class(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603 - a list, never a shell
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _stop(processes: list[subprocess.Popen]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        for process in processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass


#: How often a cluster is started again on new ports when another process took one of them
#: between `free_port` and the master's bind (seen in CI: the master's UI moved to the next port,
#: where this module never looked).
PORT_ATTEMPTS = 3


class PortTaken(RuntimeError):
    """The master could not bind a port it was given."""


@contextmanager
def standalone_cluster(root: Path, cores: int = 4, memory: str = "3g") -> Iterator[Cluster]:
    """Start a master and a worker; always stop both process groups afterwards. The master
    binds exactly the ports it is given (`spark.port.maxRetries=0`) or exits; then the cluster
    is started again on other ports."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        processes: list[subprocess.Popen] = []
        try:
            try:
                cluster = _start(root / f"attempt-{attempt}" if attempt > 1 else root, cores,
                                 memory, processes)  # fmt: skip
            except PortTaken:
                if attempt == PORT_ATTEMPTS:
                    raise
                continue
            yield cluster
            return
        finally:
            _stop(processes)


def _start(root: Path, cores: int, memory: str, processes: list[subprocess.Popen]) -> Cluster:
    root.mkdir(parents=True, exist_ok=True)
    master_port, rest_port, ui_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_MASTER_OPTS": (
            f"-Dspark.master.rest.enabled=true -Dspark.master.rest.port={rest_port} "
            "-Dspark.port.maxRetries=0"
        ),
        # The drivers and executors the worker starts run Python: this one, with pyspark.
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    cluster = Cluster(
        f"spark://127.0.0.1:{rest_port}",
        f"http://127.0.0.1:{ui_port}",
        root / "work",
        f"spark://127.0.0.1:{master_port}",
    )
    begun = time.monotonic()
    master = "org.apache.spark.deploy.master.Master"
    processes.append(
        _spark_class(
            [master, "--host", "127.0.0.1", "--port", str(master_port)]
            + ["--webui-port", str(ui_port)],
            env,
            root / "master.log",
        )
    )
    worker = "org.apache.spark.deploy.worker.Worker"
    processes.append(
        _spark_class(
            [worker, "--host", "127.0.0.1"]
            + ["--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory]
            + ["--work-dir", str(cluster.work_dir), f"spark://127.0.0.1:{master_port}"],
            env,
            root / "worker.log",
        )
    )
    cluster.pids = [p.pid for p in processes]
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            if cluster.state().get("aliveworkers") == 1:
                break
        except (OSError, ValueError):
            # Refused before the UI binds; HTML while it binds (the master page answers
            # every path until /json/ is attached: seen under load).
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
            logs = "".join((root / f).read_text() for f in ("master.log", "worker.log"))
            if any(said in logs for said in ("BindException", "Failed to bind", "already in use")):
                raise PortTaken(logs[-3000:])
            raise RuntimeError(f"the standalone cluster did not come up:\n{logs[-3000:]}")
        time.sleep(0.25)
    cluster.started_in = time.monotonic() - begun
    return cluster
