"""The product as the simulation drives it: one Deployment per simulated process, on the
world's S3 (the real S3 store and lock), cluster and checkpoint storage; its deploy (with the
CLI's own Ctrl-C handling), stop and watch. The only place that knows the product's interfaces:
adapt here when they change."""

from __future__ import annotations

import signal
from collections.abc import Callable

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.interrupts import DeployInterrupts
from flink_sql_runner.act.results import Abandoned
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.offsets import CANNOT_CARRY
from flink_sql_runner.errors import FsrError
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.targets.connectors import Connectors, SparkBuild, scala_of
from flink_sql_runner.watch.events import Notifier
from flink_sql_runner.watch.watcher import Watcher, WatchSettings
from tests.simulation import windows
from tests.simulation.world import (
    BUCKET,
    PREFIX,
    SIM_SPARK,
    SimS3,
    SimStorage,
    SimTarget,
    Stream,
    World,
)

#: Why `deploy` names a job refused for its state.
STATE = "its state"
TIMEOUTS = Timeouts(start=60.0, stop=20.0, poll=2.0)


def deployment(world: World, name: str, parallelism: int = 1, handover: str = "cold") -> Deployment:
    # Nothing on the machine's disk (`cache=False`: no load, status or SQL fingerprint cache in
    # the working folder's `./.flink-sql-runner/`, which a replay must not depend on either).
    settings = Settings(
        parallelism=parallelism,
        lock_timeout=600.0,
        timeouts=TIMEOUTS,
        handover=handover,
        cache=False,
    )
    store = S3Store(BUCKET, PREFIX, client=SimS3(world))
    found = Deployment(settings, store=store, target=SimTarget(world))
    found.storage = SimStorage(world)
    # No Spark in the simulation: a changed query's schema is unknown, as when the probe fails
    # (its run checks the sink), and no schema is cached on disk. What each query's state
    # means is read from its text (windows.py): the stateful job's windowed count, none for
    # the other jobs' filters.
    found.ask_spark = windows.probe
    found.schema_cache = None
    # The connector a Kafka job needs is served: the product would ask a Maven repository over
    # the network (a HEAD of its pom, targets/connectors.py) and find the Scala build from the
    # machine's spark-submit; a replay must depend on neither.
    found._connectors = Connectors(SparkBuild(SIM_SPARK, scala_of(SIM_SPARK)), head=lambda url: 200)
    found.say = lambda line: world.log(f"{name} says: {line}")
    return found


def deploy(
    world: World,
    name: str,
    jobs: tuple[Job, ...],
    prune: bool,
    parallelism: int,
    on_interrupts: Callable[[Callable[[], None]], None],
    exit_now: Callable[[str], None],
    handover: str = "cold",
) -> tuple[bool, str, dict[str, str], list[str]]:
    """`deploy` as the CLI runs it (cli/deploy.py): (whether it exits 0, a summary, the jobs
    whose change it refused as SPEC says it must be (for their state: `STATE`; for where their
    Kafka sources start: the refusal's words), the jobs that failed otherwise, with
    `(interrupted)` or `(error)` for a deploy that failed as a whole). `on_interrupts` is given
    what a SIGINT runs (the CLI's own handler); `exit_now` ends the process at once (the CLI's
    os._exit after a second Ctrl-C)."""
    d = deployment(world, name, parallelism, handover)
    interrupts = DeployInterrupts(d, lambda line: world.log(f"{name} says: {line}"))
    on_interrupts(lambda: interrupts._handle(signal.SIGINT, None))

    def shown(plan: Plan) -> None:
        world.planned(name, plan)

    try:
        plan, results = d.deploy(list(jobs), include_orphans=True, prune=prune, on_plan=shown)
    except Abandoned as exc:
        exit_now("abandoned: " + "; ".join(f"{n}: {r.summary}" for n, r in exc.results.items()))
        raise AssertionError("unreachable") from None
    except KeyboardInterrupt:
        return False, "interrupted before acting", {}, ["(interrupted)"]
    except FsrError as exc:
        return False, f"error: {str(exc).splitlines()[0]}", {}, ["(error)"]
    ok = all(r.ok for r in results.values()) and not plan.errors and interrupts.count == 0
    said = [f"{d.name}: error {d.reason}" for d in plan.errors]
    said += [f"{n}: {r.outcome} {r.summary}" for n, r in results.items()]
    refused = {d.name: STATE for d in plan.errors if d.state is not None and d.state.refused}
    refused |= {d.name: d.reason for d in plan.errors
                if CANNOT_CARRY in d.reason and d.name not in refused}  # fmt: skip
    failing = {d.name for d in plan.errors} | {n for n, r in results.items() if not r.ok}
    failing = sorted(failing - set(refused)) + (["(interrupted)"] if interrupts.count else [])
    return ok, "; ".join(said), refused, failing


def pending(
    world: World, name: str, jobs: tuple[Job, ...], prune: bool, handover: str = "cold"
) -> list[str]:
    """What a plan (under no lock) would still do: the jobs with steps."""
    d = deployment(world, name, handover=handover)
    plan = d.plan(list(jobs), include_orphans=True, prune=prune, read_only=True)
    return [f"{x.name}: {x.action.value} ({x.reason})" for x in plan.decisions if x.steps]


def stop(world: World, name: str, job: str) -> list[tuple[str, str, str]]:
    """`stop NAME`: (name, outcome, message) of each job."""
    d = deployment(world, name)
    try:
        return [(r.name, r.outcome, r.message) for r in d.stop([job])]
    except FsrError as exc:
        return [(job, "failed", str(exc).splitlines()[0])]


def watch(world: World, name: str) -> None:
    d = deployment(world, name)
    watcher = Watcher(d, WatchSettings(interval=15.0), Notifier(Stream(world, name)))
    watcher.run()
