"""One soak: a world, a first deploy, `watch` started, N seeded rounds, a quiet phase, the checks.

The checks, once deploys and faults are over and `watch` had time to restart what died:
- every job runs what the store records: the desired state the harness asked for; one live run,
  of the stored version, whose runtime manifest carries the stored query id and description;
  the stored description and query are the job file's;
- every version's rows in its sink are exactly the rate source's range 0..n-1: no batch twice,
  no gap;
- the process-table monitor saw one driver per job at most, at every sample, and none of a job
  after `stop` returned ok for it (until a deploy asked it back).
"""

from __future__ import annotations

import os
import platform
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos.actions import Rounds, Tally
from tests.chaos.world import JOBS, ROWS_PER_BATCH, World
from tests.support.rows import rows_by_version

#: How long a job that should run may take to be up again before a round begins.
SETTLE_SECONDS = 180


@dataclass
class Summary:
    seed: int
    store: str
    rounds: int
    tally: Tally
    seconds: float
    samples: int = 0
    rows: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        return self.tally.violations

    def text(self) -> str:
        actions = ", ".join(f"{k} {v}" for k, v in sorted(self.tally.actions.items()))
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.tally.faults.items())) or "none"
        rows = "; ".join(
            f"{job}: " + ", ".join(f"v{v} {n}" for v, n in sorted(by.items()))
            for job, by in self.rows.items()
        )
        lines = [
            f"seed {self.seed}, {self.store} store: {self.rounds} rounds in {self.seconds:.0f} s",
            f"  actions: {actions}",
            f"  faults injected: {faults}",
            f"  deploys {self.tally.deploys}, stops {self.tally.stops}, "
            f"monitor samples {self.samples}",
            f"  rows per version: {rows}",
            f"  violations: {len(self.violations)}",
            *(f"    {v}" for v in self.violations),
        ]
        return "\n".join(lines)


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load {load}"


def run_soak(
    seed: int,
    rounds: int,
    store: str,
    root: Path,
    spark: Any,
    s3_endpoint: str | None = None,
    quiet: float = 15.0,
) -> Summary:
    """One soak on real Spark in `root` (a temp folder); every process is stopped on return."""
    began = time.monotonic()
    tally = Tally()
    world = World(root, store, s3_endpoint)
    act = Rounds(world, random.Random(f"{seed}/{store}"), tally)
    summary = Summary(seed, store, rounds, tally, 0.0)
    try:
        world.monitor.start()
        act.say(f"seed {seed}: first deploy of {', '.join(JOBS)}")
        act.deployed(0, "first deploy")
        act.recorded = act.records()
        world.start_watch()
        for number in range(1, rounds + 1):
            settle(world, act)
            act.round(number)
        act.say(f"quiet phase: {quiet:.0f} s, then every job that should run up")
        time.sleep(quiet)
        settle(world, act)
        act.only_watch_acted("in the quiet phase")
        check(world, act, spark, summary)
    finally:
        world.close()
        summary.samples = world.monitor.samples
        for violation in world.monitor.violations:
            act.violation(f"monitor: {violation}")
        summary.seconds = time.monotonic() - began
    return summary


def settle(world: World, act: Rounds) -> None:
    """Wait until every job that should run has a live run (watch restarts what died)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        if all(world.live(j) for j in JOBS if world.expected[j].running):
            return
        time.sleep(0.5)
    down = [j for j in JOBS if world.expected[j].running and not world.live(j)]
    act.violation(f"{', '.join(down)} should run and stayed down for {SETTLE_SECONDS} s")


def check(world: World, act: Rounds, spark: Any, summary: Summary) -> None:
    status = world.status()
    for job in JOBS:
        expected = world.expected[job]
        row, stored = status.get(job), world.stored(job)
        if row is None or stored is None:
            act.violation(f"{job}: not in status or not stored: {row}")
            continue
        desired = "running" if expected.running else "stopped"
        spec, meta = stored, stored["meta"]
        if spec.get("desired-state", "running") != desired:
            act.violation(f"{job}: the store records {spec.get('desired-state')}, not {desired}")
        if (spec.get("description"), spec.get("sql")) != (expected.description, expected.sql):
            act.violation(
                f"{job}: the store records {spec.get('description')!r} / {spec.get('sql')!r}, "
                f"the job file says {expected.description!r} / {expected.sql!r}"
            )
        live = world.live(job)
        if not expected.running:
            if live:
                act.violation(f"{job}: stopped, yet {len(live)} run(s) alive: {live}")
            continue
        if len(live) != 1:
            act.violation(f"{job}: {len(live)} live runs, expected 1: {live}")
            continue
        version = live[0]["version"]
        if version != meta["query-version"]:
            act.violation(f"{job}: runs v{version}, the store records v{meta['query-version']}")
            continue
        runtime = world.runtime(job, live[0])
        ran = (runtime["meta"]["query-id"], runtime["description"])
        if ran != (meta["query-id"], spec.get("description")):
            act.violation(f"{job}: the run's manifest {ran} is not the stored one")
    for job in JOBS:
        values, _ = rows_by_version(spark, world.out(job))
        summary.rows[job] = {v: len(vals) for v, vals in values.items()}
        for version, vals in values.items():
            if vals != list(range(len(vals))):
                doubled = len(vals) - len(set(vals))
                gaps = sorted(set(range(max(vals) + 1)) - set(vals))[:10]
                act.violation(
                    f"{job} v{version}: {len(vals)} rows, {doubled} twice, missing {gaps}"
                )
            elif len(vals) % ROWS_PER_BATCH:
                act.violation(f"{job} v{version}: {len(vals)} rows, not whole batches")
    act.say("checks done: " + ", ".join(f"{j} {summary.rows[j]}" for j in JOBS))
