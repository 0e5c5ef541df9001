"""What the benchmarks share: measured child processes, moto's server, load, statistics."""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.s3server import CLEARED_ENV, TEST_ENV
from tests.support.workspace import TEST_TEMPLATE, Workspace

#: The benchmarks' jobs run a micro-batch every second, as their pages say (the suite's
#: scenarios run one every 3 s, cheaper on 2 cores: tests/support/workspace.py).
BENCH_TRIGGER = {"processingTime": "1 second"}


def bench_workspace(root: Path, *args: Any, **options: Any) -> Workspace:
    """A scenario workspace (Workspace's arguments) whose template gives every job
    `BENCH_TRIGGER`."""
    ws = Workspace(root, *args, **options)
    ws.template.write_text(yaml.safe_dump({**TEST_TEMPLATE, "trigger": BENCH_TRIGGER}))
    return ws


REPO = Path(__file__).resolve().parents[2]
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


@dataclass(frozen=True)
class Measured:
    """One child process: wall time from start to exit, its own peak RSS, its exit code."""

    seconds: float
    peak_rss_mib: float
    returncode: int
    stderr: str = ""
    started_at: float = 0.0  # Unix time just before the process was started
    cpu_seconds: float = 0.0  # user + system, of the process and the children it waited for


def run_measured(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    stdout: Path | None = None,
    timeout: float = 600,
) -> Measured:
    """Run `argv` to its end: wall time, and the peak RSS of that one process.

    Peak RSS and CPU time come from GNU time (`/usr/bin/time`): a child forked from this large
    process would count this process's own pages as its peak (Linux keeps the high-water mark
    across exec). Without GNU time both are reported as 0. Output goes to files, never to a
    pipe that could fill up; `stdout` is kept if given.
    """
    with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch:
        rss_file = Path(scratch, "rss")
        wrapper = [GNU_TIME, "-f", "%M %U %S", "-o", str(rss_file)] if GNU_TIME else []
        err_file = Path(scratch, "stderr")
        with err_file.open("wb") as err, (stdout or Path(os.devnull)).open("wb") as out:
            started_at = time.time()
            begun = time.perf_counter()
            process = subprocess.Popen(  # noqa: S603 - a list, never a shell
                [*wrapper, *argv], cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True
            )
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the wrapper and what it runs
                process.wait()
                raise
            seconds = time.perf_counter() - begun
        usage = rss_file.read_text().split()[-3:] if GNU_TIME and rss_file.exists() else []
        rss_kib, user, system = usage if len(usage) == 3 else ["0", "0", "0"]
        stderr = err_file.read_text("utf-8", "replace")
    return Measured(
        seconds,
        int(rss_kib) / 1024,
        process.returncode,
        stderr,
        started_at,
        float(user) + float(system),
    )


def timing_events(path: Path) -> dict[str, float]:
    """The deployer's timing log (FLINK_SQL_RUNNER_TIMING_LOG): Unix time of each event's
    last occurrence."""
    events = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        doc = json.loads(line)
        events[doc["event"]] = float(doc["at"])
    return events


def load_average() -> float:
    """The 1-minute load average (what `uptime` shows first)."""
    return os.getloadavg()[0]


def wait_for_quiet(max_load: float, max_wait: float, say=print) -> float:  # type: ignore[no-untyped-def]
    """Wait (up to `max_wait` s) until the 1-minute load is at most `max_load`; return it."""
    deadline = time.monotonic() + max_wait
    load = load_average()
    while load > max_load and time.monotonic() < deadline:
        say(f"  load average {load:.2f} > {max_load}: waiting")
        time.sleep(15)
        load = load_average()
    return load


@dataclass(frozen=True)
class Stats:
    """Repeated measurements of one thing."""

    samples: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


class Timeline:
    """One round's events as Unix times (`at`), read through its benchmark's SPANS: (label, from
    event, to event, whose time). A subclass names its SPANS and the event it counts from."""

    SPANS: tuple[tuple[str, str, str, str], ...] = ()
    FROM = ""
    at: dict[str, float]

    def span(self, begin: str, end: str) -> float:
        return self.at[end] - self.at[begin]

    def share(self, whose: str) -> float:
        return sum(self.span(b, e) for _, b, e, w in self.SPANS if w == whose)

    @property
    def to_first_commit(self) -> float:
        return self.span(self.FROM, "commit")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def s3_env(endpoint: str, scratch: Path) -> dict[str, str]:
    """This process's environment with dummy credentials for `endpoint`, blind to ~/.aws."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env.update(TEST_ENV)
    env["AWS_ENDPOINT_URL"] = endpoint
    env["AWS_CONFIG_FILE"] = str(scratch / "no-aws-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(scratch / "no-aws-credentials")
    return env


@dataclass(frozen=True)
class ProcessStat:
    """One live process as /proc/PID/stat gives it."""

    pid: int
    name: str  # the program's name, as the kernel keeps it (`comm`)
    fields: list[str]  # the fields after the name: state (0), ppid (1), pgrp (2), ...

    @property
    def cpu_seconds(self) -> float:
        """User and system time so far."""
        return (int(self.fields[11]) + int(self.fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def reaped_cpu_seconds(self) -> float:
        """User and system time of its children that ended and it waited for (a JVM's `chmod`
        and `readlink`, which Hadoop's local file system runs for each file it writes)."""
        return (int(self.fields[13]) + int(self.fields[14])) / os.sysconf("SC_CLK_TCK")


def process_table() -> Iterator[ProcessStat]:
    """Every live process of the machine (Linux: /proc); those gone while read are skipped."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        yield ProcessStat(int(entry), name, text[text.rfind(")") + 2 :].split())


@dataclass(frozen=True)
class Server:
    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (user + system), from /proc; 0 elsewhere."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compile_deployer() -> None:
    """The deployer's modules compiled to bytecode beside them, as installing it does (pip
    compiles what it installs; an editable install writes bytecode on the first run): a
    machine whose environment sets PYTHONDONTWRITEBYTECODE (this one does) would otherwise
    compile them again in every measured command, about 0.13 s of each start-up."""
    import compileall

    for folder in ("flink_sql_runner", "runner", "templates"):
        compileall.compile_dir(str(REPO / folder), quiet=1)


@contextmanager
def moto_server_process(latency_ms: float = 0, timeout: float = 30) -> Iterator[Server]:
    """moto's S3 server as a separate process on 127.0.0.1 (its own GIL, its own core); with
    `latency_ms`, every response is delayed that long (latency_moto.py).

    Stopped by its pid on the way out, whatever happened.
    """
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    if latency_ms:
        argv = [sys.executable, "-m", "tests.benchmarks.latency_moto", "--port", str(port)]
        argv += ["--latency-ms", str(latency_ms)]
    process = subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not come up on {url}") from None
                time.sleep(0.1)
        yield Server(url, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def s3_client(url: str, scratch: Path) -> Any:
    """An S3 client of moto's server at `url`, blind to ~/.aws, 64 requests at once."""
    import boto3
    from botocore.config import Config

    env = s3_env(url, scratch)
    config = Config(retries={"mode": "standard", "total_max_attempts": 5},
                    max_pool_connections=64)  # fmt: skip
    return boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    ).client("s3", endpoint_url=url, config=config)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line about this machine: cores, memory, Python."""
    import platform

    cores = os.cpu_count()
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = ""
    return f"{cores} cores{memory}, Python {platform.python_version()}, {platform.system()}"
