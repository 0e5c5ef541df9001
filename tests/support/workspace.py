"""A throwaway project for end-to-end tests: jobs, tables, a template, a state folder, and the
real CLI run as a subprocess. Every Spark process it starts is killed at teardown."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests.support import warm_cli

#: The scenarios' defaults. A micro-batch every 3 s: a running driver then costs about 17% of
#: a core, not the 39-46% of a 1 s trigger (measured side by side, 2026-11-27), and on two cores
#: the CPU is what the suite waits for; a graceful stop also finds a run between two batches.
TEST_TEMPLATE = {
    "desired-state": "running",
    "outputMode": "append",
    "trigger": {"processingTime": "3 seconds"},
    "checkpoint-root": "{state_dir}/checkpoints",
    "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
    "sparkProperties": {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": "512m",
        "spark.sql.session.timeZone": "UTC",
    },
}


class Workspace:
    def __init__(
        self,
        root: Path,
        master: str = "local[2]",
        target: str = "local",
        target_options: tuple[str, ...] = (),
    ):
        """`target` and `target_options` (e.g. ("--cluster-api", URL)) go to every command
        that talks to the target."""
        self.root = root
        self.jobs = root / "jobs"
        self.tables = root / "tables"
        self.state = root / "state"
        self.template = root / "template.yaml"
        self.master = master
        self.target = target
        self.target_options = target_options
        for folder in (self.jobs, self.tables):
            folder.mkdir(parents=True, exist_ok=True)
        self.template.write_text(yaml.safe_dump(TEST_TEMPLATE))
        self.seen_pids: set[tuple[int, str]] = set()

    def write_tables(self, tables: list[dict[str, Any]], file: str = "tables.yaml") -> None:
        (self.tables / file).write_text(yaml.safe_dump({"tables": tables}, sort_keys=False))

    def write_job(self, name: str, **fields: Any) -> Path:
        path = self.jobs / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, **fields}, sort_keys=False))
        return path

    def argv(self, command: str, *args: str, paths: bool = True) -> list[str]:
        """The command line of one CLI call against this workspace."""
        argv = [sys.executable, "-m", "flink_sql_runner", command]
        if paths:
            argv += ["--path", str(self.jobs)]
        if command not in ("stop", "forget", "logs", "inspect"):  # they read no manifests or tables
            argv += ["--table-definition-path", str(self.tables)]
            argv += ["--template-file", str(self.template)]
        argv += ["--state-dir", str(self.state)]
        if command not in ("validate",):
            argv += ["--master", self.master, "--target", self.target]
            argv += self._target_options(command)
        if command in ("deploy", "deploy-job"):
            argv += ["--start-timeout", "120", "--stop-timeout", "30"]
        return argv + list(args)

    def _target_options(self, command: str) -> list[str]:
        """The target's options, less --runner-path for the commands that submit nothing (`plan`
        keeps it: a saved plan records it, and the deploy's must be the same)."""
        options = list(self.target_options)
        if command in ("status", "stop", "forget", "logs", "inspect") and (
            "--runner-path" in options
        ):
            at = options.index("--runner-path")
            del options[at : at + 2]
        return options

    def cli(
        self, command: str, *args: str, paths: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        argv = self.argv(command, *args, paths=paths)
        began = time.monotonic()
        result = warm_cli.run(
            argv[3:], cwd=self.root, env=dict(os.environ), stdin=None, timeout=timeout
        )
        trace(f"cli {command} {' '.join(args)}".strip(), began)
        self._remember_pids()
        return result

    def remember(self, record: dict[str, Any]) -> None:
        """Make sure kill_all stops this run, even if its registry record goes away."""
        self.seen_pids.add((int(record["pid"]), str(record["started"])))

    def write_one_job(self, name: str, out: str, **fields: Any) -> Path:
        """A rate source, a parquet table at `out` and job `name` copying one into the other."""
        self.write_tables(
            [
                {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}},
                {"name": "out", "format": "parquet", "options": {"path": out}},
            ]
        )
        job = {"target-table": "out", "sql": "SELECT value FROM ticks", **fields}
        return self.write_job(name, **job)

    def deploy(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cli("deploy", *args)

    def plan_json(self) -> dict[str, Any]:
        result = self.cli("plan", "--output", "json")
        assert result.returncode in (0, 1), result.stderr
        return {j["name"]: j for j in json.loads(result.stdout)["jobs"]}

    def runs(self, name: str) -> list[dict[str, Any]]:
        """The local target's records of the runs of `name` whose process is alive."""
        from flink_sql_runner.host import processes as procs

        folder = self.state / "runs" / name
        records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        for record in records:
            self.remember(record)
        return [r for r in records if procs.is_same_process(int(r["pid"]), str(r["started"]))]

    def record(self, name: str) -> dict[str, Any] | None:
        """The one live run of `name`, or None."""
        runs = self.runs(name)
        assert len(runs) <= 1, f"{len(runs)} runs of {name} are up: {runs}"
        return runs[0] if runs else None

    def stored(self, name: str) -> dict[str, Any] | None:
        path = self.state / "manifests" / f"{name}.yaml"
        return yaml.safe_load(path.read_text()) if path.exists() else None

    def intent_phase(self, name: str) -> str | None:
        """The phase of the intent record a deployer keeps for `name` while it acts, or None."""
        path = self.state / "manifests" / "_intents" / f"{name}.json"
        try:
            return str(json.loads(path.read_text()).get("phase"))
        except (OSError, ValueError):
            return None

    def _remember_pids(self) -> None:
        runs = self.state / "runs"
        for path in runs.glob("*/*.json") if runs.is_dir() else []:
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            self.seen_pids.add((int(record["pid"]), str(record["started"])))

    def kill_all(self) -> None:
        """Kill every job process group this workspace ever started that is still alive."""
        from flink_sql_runner.host import processes as procs

        self._remember_pids()
        for pid, started in self.seen_pids:
            procs.kill_group(pid, started)
        for pid, started in self.seen_pids:
            procs.wait_gone(pid, started, 10)


def planned_by(output: str, name: str) -> dict[str, Any]:
    """The decision for `name` in the plan a deploy printed (text) before it acted: its
    "action", "query-version" (None for `-`) and "reason", as `plan --output json` says them.
    The plan the deploy carried out: a `plan` run just before it would say the same, and start
    a schema probe's JVM again where the job's output changed (its sink's holdings are never
    cached: gather/schemas.py)."""
    line = re.search(rf"^{re.escape(name)} +(\S+) +(v\d+|-) +(.+)$", output, re.MULTILINE)
    if line is None:
        raise AssertionError(f"no plan line of {name} in the deploy's output:\n{output}")
    version = None if line[2] == "-" else int(line[2][1:])
    return {"action": line[1], "query-version": version, "reason": line[3]}


def trace(step: str, began: float) -> None:
    """With `FSR_TEST_TRACE=<file>`, one line per CLI call and wait of a scenario: the test,
    the step, its seconds (docs/developers/testing.md: where a scenario's time goes)."""
    path = os.environ.get("FSR_TEST_TRACE")
    if path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        line = {"test": test, "step": step, "s": round(time.monotonic() - began, 2)}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def wait_for(predicate, timeout: float = 90, interval: float = 1.0, what: str = "condition"):
    began = time.monotonic()
    deadline = began + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            trace(f"wait {what}", began)
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def kill_driver(pid: int) -> None:
    """SIGKILL the job's JVM and its Python driver (the whole process group)."""
    os.killpg(pid, signal.SIGKILL)
