"""What one round of the soak does, chosen by the seeded RNG: changes deployed, failing changes
that must roll back, `stop NAME` and a deploy asking the job back, and faults (SIGKILL of a
driver, of a deployer mid-deploy, of a `stop` mid-way). Each action says what it expected and
what it saw; anything else is a violation."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.world import JOBS, World

#: How long `watch` may take to restart a SIGKILLed driver (a start on 2 busy cores: 10-60 s).
RESTART_SECONDS = 180
#: The kinds of action and their weights.
ACTIONS = {
    "config-change": 2,
    "query-change": 2,
    "failing-config": 1,
    "failing-query": 1,
    "stop": 1,
    "ask-back": 1,
    "kill-driver": 2,
    "kill-deployer": 2,
    "kill-stop": 1,
}
#: How long `watch` acts alone between a killed deployer and the next deploy, at most: until
#: it has restarted the job, then WATCH_LOOKS_AFTER more seconds (looks, at `--interval 1`).
WATCH_SECONDS = 30
WATCH_LOOKS_AFTER = 3


@dataclass
class Tally:
    actions: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    deploys: int = 0
    stops: int = 0
    violations: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


class Rounds:
    def __init__(self, world: World, rng: random.Random, tally: Tally):
        self.world, self.rng, self.tally = world, rng, tally
        self.variant = 0
        self.recorded: dict[str, tuple[Any, ...] | None] = {}

    def say(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} [{self.world.store}] {text}"
        self.tally.log.append(line)
        print(line, flush=True)

    def violation(self, text: str) -> None:
        self.tally.violations.append(f"[{self.world.store}] {text}")
        self.say(f"VIOLATION {text}")

    # -- choosing --------------------------------------------------------------------------------
    def running(self) -> list[str]:
        return [job for job in JOBS if self.world.expected[job].running]

    def pick(self) -> str:
        """A kind of action that can happen now (a stop needs a running job, and so on)."""
        kinds = dict(ACTIONS)
        if not self.running():
            for kind in ("failing-config", "failing-query", "stop", "kill-driver", "kill-stop"):
                kinds.pop(kind)
        if len(self.running()) == len(JOBS):
            kinds.pop("ask-back")
        names = sorted(kinds)
        return self.rng.choices(names, weights=[kinds[n] for n in names])[0]

    def round(self, number: int) -> None:
        self.only_watch_acted(f"before round {number}")
        kind = self.pick()
        job = self.rng.choice(self.running() or list(JOBS))
        self.say(f"round {number}: {kind} {job}")
        self.tally.actions[kind] += 1
        getattr(self, kind.replace("-", "_"))(job)
        self.recorded = self.records()

    # -- what the store records ------------------------------------------------------------------
    def records(self) -> dict[str, tuple[Any, ...] | None]:
        """{job: (version, query id, desired state, description, query)} as the store has it."""
        found: dict[str, tuple[Any, ...] | None] = {}
        for job in JOBS:
            doc = self.world.stored(job)
            found[job] = doc and (
                doc["meta"]["query-version"], doc["meta"]["query-id"],
                doc.get("desired-state", "running"), doc.get("description"), doc.get("sql"),
            )  # fmt: skip
        return found

    def only_watch_acted(self, when: str) -> None:
        """Since the last CLI call returned (or was killed) only `watch` acted: the store may
        have changed only to finish what that call deployed (the job file's description and
        query), never to another version of its own."""
        now = self.records()
        for job, old in self.recorded.items():
            new = now[job]
            if new == old:
                continue
            wanted = (self.world.expected[job].description, self.world.expected[job].sql)
            if not (old and new and new[3:] == wanted and old[3:] != wanted):
                self.violation(
                    f"the store's record of {job} changed {when} while only watch acted: "
                    f"{old} -> {new}"
                )
        self.recorded = now

    # -- expectations --------------------------------------------------------------------------
    def change(self, job: str, kind: str) -> None:
        """Write a config change (description) or a query change of `job` into its file."""
        expected = self.world.expected[job]
        self.variant += 1
        if kind == "config":
            expected.description = f"{job}, change {self.variant}"
        else:
            expected.sql = self.world.sql(job, self.variant)
        self.world.write_job(job)

    def deployed(self, want: int, what: str, also: str = "") -> None:
        """Deploy; it must exit `want` (and say `also`); then every job is asked to run."""
        for job in JOBS:
            self.world.monitor.may_run(job)
        self.tally.deploys += 1
        began = time.monotonic()
        result = self.world.deploy()
        took = time.monotonic() - began
        self.say(f"  deploy ({what}) exit {result.returncode} in {took:.0f} s")
        if result.returncode != want or also not in result.stdout:
            self.violation(
                f"deploy ({what}) exited {result.returncode}, expected {want}"
                + (f" saying {also!r}" if also else "")
                + f":\n{result.stdout}{result.stderr}"
            )
        for job in JOBS:
            self.world.expected[job].running = True

    def stopped(self, job: str) -> None:
        self.tally.stops += 1
        result = self.world.stop(job)
        self.say(f"  stop {job} exit {result.returncode}: {result.stdout.strip()}")
        if result.returncode != 0:
            self.violation(
                f"stop {job} exited {result.returncode}:\n{result.stdout}{result.stderr}"
            )
            return
        self.world.expected[job].running = False
        self.world.monitor.stopped(job)
        if self.world.live(job):
            self.violation(f"stop {job} returned ok with a run of {job} alive")

    # -- the actions -----------------------------------------------------------------------------
    def config_change(self, job: str) -> None:
        self.change(job, "config")
        self.deployed(0, f"config change of {job}")

    def query_change(self, job: str) -> None:
        self.change(job, "query")
        self.deployed(0, f"query change of {job}")

    def failing_config(self, job: str) -> None:
        """A rate Spark refuses at start: the new run fails, the old one comes back."""
        self.world.tables_ok(refused=job)
        self.tally.faults["failing change (must roll back)"] += 1
        try:
            self.deployed(1, f"refused config of {job}", also="rolled back")
        finally:
            self.world.tables_ok()

    def failing_query(self, job: str) -> None:
        """A query failing on its first batch: the new version fails, the old one comes back."""
        self.world.write_job(job, sql=self.world.failing_sql(job))
        self.tally.faults["failing change (must roll back)"] += 1
        try:
            self.deployed(1, f"failing query of {job}", also="rolled back")
        finally:
            self.world.write_job(job)

    def stop(self, job: str) -> None:
        self.stopped(job)

    def ask_back(self, job: str) -> None:
        self.deployed(0, "asking stopped jobs back")

    def kill_driver(self, job: str) -> None:
        """SIGKILL the driver's process group; `watch` must start a new run."""
        runs = self.world.live(job)
        if not runs:
            self.say(f"  {job} has no live run to kill")
            return
        before = {r["run-id"] for r in runs}
        old = int(runs[0]["pid"])
        os.killpg(old, signal.SIGKILL)
        self.tally.faults["driver SIGKILLed"] += 1
        self.say(f"  SIGKILLed the driver of {job} (pid {old})")
        deadline = time.monotonic() + RESTART_SECONDS
        while time.monotonic() < deadline:
            now = self.world.live(job)
            if now and all(r["run-id"] not in before for r in now):
                self.say(f"  watch restarted {job} (pid {now[0]['pid']})")
                self.only_watch_acted(f"when watch restarted {job}")
                return
            time.sleep(0.5)
        self.violation(f"watch did not restart {job} within {RESTART_SECONDS} s of a SIGKILL")

    def kill_deployer(self, job: str) -> None:
        """A change deployed by a deployer SIGKILLed at a seeded delay; then deployed again."""
        self.change(job, self.rng.choice(("config", "query")))
        delay = round(self.rng.uniform(0.5, 20.0), 1)
        for other in JOBS:
            self.world.monitor.may_run(other)
        deployer = self.world.popen("deploy", "--lock-timeout", "600", "--start-timeout", "240")
        self.killed(deployer, delay, "deployer", "deployer SIGKILLed mid-deploy")
        self.recorded = self.records()
        if self.rng.random() < 0.5:
            # Before the next deploy, the job's run dies and `watch` acts on what it finds.
            seen = len(self.world.watch_events())
            runs = self.world.live(job)
            if not runs:
                self.say(f"  {job} has no live run (the killed deployer stopped it); watch acts")
            for run in runs:
                os.killpg(int(run["pid"]), signal.SIGKILL)
                self.tally.faults["driver SIGKILLed after a killed deployer"] += 1
                self.say(f"  SIGKILLed the driver of {job} (v{run['version']}); watch acts")
            self.watch_alone(job, seen)
            self.only_watch_acted(f"after the killed deployer of {job}")
        self.deployed(0, f"again, after the killed deployer of {job}")

    def watch_alone(self, job: str, seen: int) -> None:
        """Leave `watch` alone until it has restarted `job` (an event after the first `seen` of
        its log) and looked WATCH_LOOKS_AFTER more times; WATCH_SECONDS at most."""
        began = time.monotonic()
        deadline = began + WATCH_SECONDS
        while time.monotonic() < deadline:
            events = self.world.watch_events()[seen:]
            if any(e.get("event") == "restarted" and e.get("job") == job for e in events):
                time.sleep(max(0.0, min(WATCH_LOOKS_AFTER, deadline - time.monotonic())))
                break
            time.sleep(0.5)
        self.say(f"  watch acted alone for {time.monotonic() - began:.0f} s")

    def kill_stop(self, job: str) -> None:
        """`stop NAME` SIGKILLed at a seeded delay; then stopped again."""
        delay = round(self.rng.uniform(0.2, 6.0), 1)
        stopper = self.world.popen("stop", job, "--stop-timeout", "30", "--lock-timeout", "600")
        self.killed(stopper, delay, f"stop {job}", "stop SIGKILLed mid-way")
        self.stopped(job)

    def killed(self, process: subprocess.Popen[bytes], delay: float, what: str, fault: str) -> None:
        try:
            process.wait(delay)
            self.say(f"  the {what} ended (exit {process.returncode}) before {delay} s")
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
            self.tally.faults[fault] += 1
            self.say(f"  SIGKILLed the {what} after {delay} s")
        self.world.ws._remember_pids()  # noqa: SLF001 - so that close() kills every run
