"""The soak's world: a throwaway workspace with two rate-source jobs writing parquet, one store
(a folder, or S3 on moto's server on 127.0.0.1), `watch` in the background and the CLI run as
subprocesses. What the harness expects of each job (its description, query and desired state) is
kept here; every process it starts is stopped by its pid in `close()`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.chaos.monitor import DriverMonitor
from tests.support.s3server import CLEARED_ENV, TEST_ENV
from tests.support.workspace import Workspace

JOBS = ("alpha", "beta")
BUCKET = "chaos"
ROWS_PER_BATCH = 3
#: Starts get 240 s to be healthy: on 2 cores shared with other Spark runs a start took 90 s.
START_TIMEOUT = "240"
WATCH_ARGS = ("--interval", "1", "--stop-timeout", "20", "--start-timeout", START_TIMEOUT,
              "--stall-timeout", "60", "--max-failures", "1000", "--backoff-first", "1",
              "--backoff-max", "5", "--output", "json")  # fmt: skip
CLI_TIMEOUT = 900


@dataclass
class Expected:
    """What the harness asked of one job: the job file's description and query, and whether it
    should run (a deploy that returned asks every job back; `stop NAME` that returned stops it)."""

    description: str
    sql: str
    running: bool = True


class World:
    def __init__(self, root: Path, store: str, s3_endpoint: str | None = None):
        self.root = root
        self.store = store
        self.ws = Workspace(root)
        self.env = dict(os.environ)
        self.store_args: tuple[str, ...] = ()
        if store == "s3":
            assert s3_endpoint, "an S3 world needs moto's endpoint"
            for name in CLEARED_ENV:
                self.env.pop(name, None)
            self.env.update(TEST_ENV, AWS_ENDPOINT_URL=s3_endpoint)
            self.env["AWS_CONFIG_FILE"] = str(root / "no-aws-config")
            self.env["AWS_SHARED_CREDENTIALS_FILE"] = str(root / "no-aws-credentials")
            self.store_args = ("--manifest-store", f"s3://{BUCKET}/jobs/")
            self._s3(s3_endpoint).create_bucket(Bucket=BUCKET)
        self.expected = {
            job: Expected(f"{job}, as first written", self.sql(job, 0)) for job in JOBS
        }
        self.tables_ok()
        for job in JOBS:
            self.write_job(job)
        self.monitor = DriverMonitor(self.ws.state / "checkpoints")
        self.watch: subprocess.Popen[bytes] | None = None
        self.watch_log = root / "watch.log"
        self.children: list[subprocess.Popen[Any]] = []

    # -- the jobs ----------------------------------------------------------------------------
    @staticmethod
    def sql(job: str, variant: int) -> str:
        """Query variant `variant` of `job`: the same rows and schema, another query."""
        source = f"ticks_{job}"
        return f"SELECT value FROM {source}" + (f" WHERE value > -{variant}" if variant else "")

    @staticmethod
    def failing_sql(job: str) -> str:
        """Analyses, starts, then fails on its first batch."""
        return f"SELECT value FROM ticks_{job} WHERE assert_true(value < 0) IS NULL"

    def out(self, job: str) -> Path:
        return self.root / "out" / job

    def tables_ok(self, refused: str | None = None) -> None:
        """The catalog; `refused`: that job's source gets a rate Spark refuses at start."""
        tables = []
        for job in JOBS:
            rows = -1 if job == refused else ROWS_PER_BATCH
            tables.append(
                {
                    "name": f"ticks_{job}",
                    "format": "rate-micro-batch",
                    "options": {"rowsPerBatch": rows},
                }  # fmt: skip
            )
            tables.append(
                {"name": f"out_{job}", "format": "parquet", "options": {"path": str(self.out(job))}}
            )
        self.ws.write_tables(tables)

    def write_job(self, job: str, sql: str | None = None) -> None:
        expected = self.expected[job]
        self.ws.write_job(
            job,
            description=expected.description,
            **{"target-table": f"out_{job}"},
            sql=sql or expected.sql,
        )

    # -- the command line ------------------------------------------------------------------------
    def argv(self, command: str, *args: str) -> list[str]:
        argv = self.ws.argv(command, *args, paths=command in ("deploy", "plan"))
        if command in ("watch", "status"):  # both work from the store alone
            for option in ("--table-definition-path", "--template-file"):
                at = argv.index(option)
                del argv[at : at + 2]
        return argv + list(self.store_args)

    def run(self, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(  # noqa: S603 - a list, never a shell
            self.argv(command, *args),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
            check=False,
            cwd=self.root,
            env=self.env,
        )
        self.ws._remember_pids()  # noqa: SLF001 - so that close() kills every run
        return result

    def popen(self, command: str, *args: str) -> subprocess.Popen[bytes]:
        """A CLI call in the background (to be killed): its output goes to a file."""
        log = (self.root / f"{command}-{time.monotonic_ns()}.log").open("wb")
        process = subprocess.Popen(  # noqa: S603 - a list, never a shell
            self.argv(command, *args), cwd=self.root, env=self.env, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        self.children.append(process)
        return process

    def deploy(self) -> subprocess.CompletedProcess[str]:
        return self.run("deploy", "--lock-timeout", "600", "--start-timeout", START_TIMEOUT)

    def stop(self, job: str) -> subprocess.CompletedProcess[str]:
        return self.run("stop", job, "--stop-timeout", "30", "--lock-timeout", "600")

    def status(self) -> dict[str, dict[str, Any]]:
        result = self.run("status", "--output", "json")
        if result.returncode != 0:
            raise AssertionError(f"status failed: {result.stdout}{result.stderr}")
        return {row["name"]: row for row in json.loads(result.stdout)["jobs"]}

    def stored(self, job: str) -> dict[str, Any] | None:
        """The stored manifest of `job`, read from the store itself."""
        if self.store == "s3":
            client = self._s3(self.env["AWS_ENDPOINT_URL"])
            try:
                body = client.get_object(Bucket=BUCKET, Key=f"jobs/{job}.yaml")["Body"].read()
            except client.exceptions.NoSuchKey:
                return None
            return yaml.safe_load(body)
        return self.ws.stored(job)

    def runtime(self, job: str, run: dict[str, Any]) -> dict[str, Any]:
        """The runtime manifest `run` (a live run's record) was started with: its version's, or
        a warm handover's prepared run's own, named as its status file is."""
        control = self.ws.state / "checkpoints" / job / "_control"
        status = Path(str(run.get("status-file") or f"v{run['version']}.status.json")).name
        return json.loads((control / status.replace(".status.json", ".manifest.json")).read_text())

    @staticmethod
    def _s3(endpoint: str) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=TEST_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=TEST_ENV["AWS_SECRET_ACCESS_KEY"],
            region_name=TEST_ENV["AWS_DEFAULT_REGION"],
        )

    # -- watch and the drivers -------------------------------------------------------------------
    def start_watch(self) -> None:
        with self.watch_log.open("ab") as log:
            self.watch = subprocess.Popen(  # noqa: S603 - a list, never a shell
                self.argv("watch", *WATCH_ARGS), cwd=self.root, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def watch_events(self) -> list[dict[str, Any]]:
        """The events `watch` logged so far (a line it is still writing left out)."""
        events = []
        for line in self.watch_log.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events

    def live(self, job: str) -> list[dict[str, Any]]:
        """The local target's records of the runs of `job` whose process is alive."""
        return self.ws.runs(job)

    def close(self) -> None:
        """Stop everything this world started, by pid: watch, CLI calls, drivers."""
        self.monitor.stop()
        if self.watch is not None and self.watch.poll() is None:
            self.watch.send_signal(signal.SIGTERM)
            try:
                self.watch.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.watch.pid, signal.SIGKILL)
                self.watch.wait(30)
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait(30)
        self.ws.kill_all()
