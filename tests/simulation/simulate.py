"""One seed: the world, its actors and the director that plays the scenario, the checks after
every step and at the end. `run_seed(seed)` returns what happened."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from flink_sql_runner.host import processes as procs
from flink_sql_runner.host import runtime
from flink_sql_runner.model import intents as intents_module
from flink_sql_runner.model import stored as stored_module
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores import lock as lock_module
from tests.simulation import actors, windows
from tests.simulation.kafka import Topic
from tests.simulation.scenario import VARIANTS, Op, Scenario, generate, wants
from tests.simulation.sim_runtime import EPOCH, Killed, Proc, SimRuntime, one_core
from tests.simulation.world import (
    PREFIX,
    SimTarget,
    Stream,
    Violation,
    World,
    history_lines,
    key_of_manifest,
    sink_of_tables,
)

MAX_STEPS = 60_000
QUIET_WAIT = 1200.0  # at most this long for the actors to end before the quiet phase
QUIET_WATCH = 600.0  # the watchers' time in the quiet world before the final checks


@dataclass
class Outcome:
    seed: int
    scenario: Scenario
    violations: list[Violation]
    events: list[tuple[int, float, str]]  # what happened (World.events)
    steps: int
    virtual_seconds: float
    note: str = ""
    crashes: list[str] = field(default_factory=list)

    @property
    def history(self) -> list[str]:
        """What happened, a line per event (made when asked: a passing seed is never shown)."""
        return history_lines(self.events)

    def first_lines(self) -> list[str]:
        seen, lines = set(), []
        for v in self.violations:
            if v.kind not in seen:
                seen.add(v.kind)
                lines.append(v.line())
        return lines


@contextmanager
def deterministic(rt: SimRuntime, rng: random.Random, one_machine: bool) -> Iterator[None]:
    """uuid4 and the product's UTC stamps from the seed and the virtual clock; the pids, the
    machines and the process table the lock consults from the simulated processes, so a replay
    never depends on which pids the real machine has. `one_machine`: every process on one host
    and pid namespace (a holder whose process is gone is taken over at once); else each on its
    own (as CI runners are: a lock is taken over only once it expired)."""
    saved = (uuid.uuid4, stored_module.utc_now_iso, intents_module.utc_now_iso)
    machine = (os.getpid, socket.gethostname, lock_module.this_machine)
    table = (procs.start_marker, procs.is_same_process)

    def uuid4() -> uuid.UUID:
        return uuid.UUID(int=rng.getrandbits(128), version=4)

    def utc_now_iso() -> str:
        stamp = datetime.fromtimestamp(EPOCH + rt.now, timezone.utc)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")

    def getpid() -> int:
        proc = rt.current()
        return proc.pid if proc is not None else machine[0]()

    def start_marker(pid: int) -> str | None:
        proc = rt.proc_of(pid)
        return f"sim:{pid}" if proc is not None and not proc.dead else None

    uuid.uuid4 = uuid4  # type: ignore[assignment]
    stored_module.utc_now_iso = utc_now_iso  # type: ignore[assignment]
    intents_module.utc_now_iso = utc_now_iso  # type: ignore[assignment]
    os.getpid = getpid
    socket.gethostname = lambda: "sim-host"
    lock_module.this_machine = lambda: "sim-boot/" + ("one" if one_machine else str(getpid()))
    procs.start_marker = start_marker
    procs.is_same_process = lambda pid, marker: start_marker(pid) == marker
    try:
        yield
    finally:
        uuid.uuid4, stored_module.utc_now_iso, intents_module.utc_now_iso = saved  # type: ignore[assignment]
        os.getpid, socket.gethostname, lock_module.this_machine = machine
        procs.start_marker, procs.is_same_process = table


class Director:
    """Plays the scenario: starts the actors' processes, delivers Ctrl-Cs, kills, restarts
    watchers, then the quiet phase and the final checks."""

    def __init__(self, world: World, scenario: Scenario) -> None:
        self.world, self.scenario = world, scenario
        self.rt = world.rt
        self.actors: list[Proc] = []
        self.watchers: list[Proc] = []
        self.count = 0
        self.last_variant = 0
        #: The jobs the last deploy in the quiet world rightly left as they were: a change
        #: refused for its state or for where its Kafka source starts, and the starts it keeps
        #: from its sink.
        self.held_back: set[str] = set()

    # -- processes -----------------------------------------------------------------------------
    def start(
        self, kind: str, body: Callable[[str], str], wanted: dict[str, str] | None = None
    ) -> Proc:
        self.count += 1
        name = f"{kind}-{self.count}"
        self.world.kinds[name] = kind
        self.world.wants[name] = wanted or {}

        def main() -> None:
            self.world.log(f"{name} begins")
            said = body(name)
            self.world.log(f"{name} ends: {said}")

        proc = self.rt.process(name, main)
        (self.watchers if kind == "watch" else self.actors).append(proc)
        return proc

    def exit_now(self, why: str) -> None:
        """The calling process ends at once (os._exit): its other threads too."""
        proc = self.rt.me().proc
        self.world.log(f"{proc.name} exits at once: {why}")
        self.rt.kill(proc)
        raise Killed

    def kill(self, proc: Proc, why: str) -> None:
        if not proc.dead:
            self.rt.kill(proc)
            self.world.log(f"KILL {proc.name} ({why})")

    def later(self, delay: float, fn: Callable[[], None], name: str) -> None:
        def timer() -> None:
            self.rt.sleep(delay)
            fn()

        self.rt.spawn(timer, name, daemon=True)

    def watchers_up(self) -> None:
        alive = [w for w in self.watchers if not w.dead]
        for _ in range(2 - len(alive)):
            self.start("watch", lambda name: (actors.watch(self.world, name), "stopped")[1])

    # -- the actors ------------------------------------------------------------------------------
    def deploy(self, op: Op | None, variant: int, quiet: bool = False) -> Proc:
        _, _, prune = VARIANTS[variant]
        jobs = self.scenario.jobs(variant)
        wanted = wants(jobs, prune)
        holder: list[Callable[[], None]] = []

        def body(name: str) -> str:
            ok, summary, refused, failing = actors.deploy(
                self.world,
                name,
                jobs,
                prune,
                op.parallelism if op else 1,
                holder.append,
                self.exit_now,
                self.scenario.handover,
            )
            # A change refused for its state (and those of the jobs it keeps from its sink): the
            # others as after an ok deploy.
            blocked = self.blocked_by(refused, jobs)
            excused = bool(refused) and set(failing) <= blocked
            if ok or excused:
                self.after_ok_deploy(name, jobs, prune, set(refused) | blocked)
            wrong = [f"{job} refused, but {why}" for job, said in refused.items()
                     if (why := self.wrongly_refused(job, jobs, said)) is not None]  # fmt: skip
            if quiet and not ok and (wrong or not excused):
                said = "; ".join(wrong) if wrong else summary
                self.world.violate("quiet-deploy-failed", f"{name} in a quiet world: {said}")
            elif quiet and not ok:
                self.held_back = set(refused) | blocked
            return ("ok: " if ok else "not ok: ") + summary

        proc = self.start("deploy", body, wanted)
        if op is not None and op.interrupts:

            def signal() -> None:
                if not proc.dead and proc.main is not None and holder:
                    self.world.log(f"Ctrl-C to {proc.name}")
                    proc.main.signal = holder[0]

            self.later(op.interrupt_after, signal, f"ctrl-c-{proc.name}")
            if op.interrupts > 1:
                self.later(
                    op.interrupt_after + op.second_after + 0.1, signal, f"ctrl-c2-{proc.name}"
                )
        if op is not None and op.kill_after is not None:
            self.later(op.kill_after, lambda: self.kill(proc, "scenario"), f"kill-{proc.name}")
        return proc

    def stop(self, op: Op) -> Proc:
        def body(name: str) -> str:
            said = actors.stop(self.world, name, op.name)
            for job, outcome, _ in said:
                if outcome in ("stopped", "not-running"):
                    self.world.track.stopped.setdefault(job, (self.rt.step, name))
                    alive = [r for r in self.world.live_runs(job) if r.writer]
                    if alive:
                        self.world.violate(
                            "runs-after-stop",
                            f"{name} returned ok for {job} but {alive[0].describe()} is alive",
                        )
            return "; ".join(f"{j}: {o} {m}" for j, o, m in said)

        proc = self.start("stop", body, {op.name: "stopped"})
        if op.kill_after is not None:
            self.later(op.kill_after, lambda: self.kill(proc, "scenario"), f"kill-{proc.name}")
        return proc

    # -- checks ----------------------------------------------------------------------------------
    def stored(self) -> dict[str, StoredManifest]:
        found = {}
        for key, (body, _) in sorted(self.world.objects.items()):
            rest = key[len(PREFIX) :]
            if key.startswith(PREFIX) and rest.endswith(".yaml") and "/" not in rest:
                found[rest[:-5]] = self.world.manifest_of(body, key)
        return found

    def wrongly_refused(self, name: str, jobs: tuple, said: str) -> str | None:
        """Why refusing a job's change is wrong (None: it is right). For its state (`said` is
        `actors.STATE`): a change whose windows would be partial is refused unless the job
        accepts them; one that keeps its state (the same windows, the same sink) continues from
        it, and one that declares where its Kafka source starts rebuilds it. For where its
        Kafka source starts (`said`, the refusal's words): `wrongly_refused_carry`."""
        job = next(j for j in jobs if j.name == name)
        if said != actors.STATE:
            return self.wrongly_refused_carry(job, said)
        if job.spec.get("on-state-change") == "partial":
            return "the job says on-state-change: partial"
        if job.spec.get("kafka-start"):
            return f"the job declares kafka-start {job.spec['kafka-start']}: its state is rebuilt"
        bases = self.recorded(name)  # the version it replaces is one of them
        if not bases:
            return "no version of it is recorded"
        new = windows.Query.of(job.spec.get("sql"), job.tables.get("src"))
        sink = sink_of_tables(str(job.spec["target-table"]), job.tables)
        kept = []
        for base in bases:
            old = windows.Query.of(base.job.get("sql"), base.tables.get("src"))
            if (
                old is not None
                and new is not None
                and (old.size, old.delay) == (new.size, new.delay)
                and sink_of_tables(str(base.job["target-table"]), base.tables) == sink
            ):
                kept.append(f"v{base.meta.query_version} ({old.describe()})")
        if len(kept) == len(bases):
            return (f"the state of {' and of '.join(kept)} is kept by {new.describe()} in the "
                    "same sink: it continues from it")  # fmt: skip
        return None

    def wrongly_refused_carry(self, job: Any, said: str) -> str | None:
        """Why refusing to carry where the job's Kafka source starts is wrong (None: it is
        right). The one such refusal the world can cause is SPEC's "a previous version that
        committed nothing": right only when the job declares no start and the stored version
        committed no batch on its checkpoint, as the world's runs left it."""
        if job.spec.get("kafka-start"):
            return f"the job declares kafka-start {job.spec['kafka-start']}"
        stored = self.stored().get(job.name)
        if stored is None:
            return "no version of it is stored to carry from"
        version = stored.meta.query_version
        if f"v{version} committed no batch" not in said:
            return f"the world makes no such refusal of a carry from v{version}: {said}"
        w = self.world
        found = w.checkpoints.get(stored.checkpoint) or w.read_checkpoint(stored.checkpoint)
        if found is not None and found.committed is not None:
            return f"v{version} committed batch {found.committed} on {stored.checkpoint}"
        return None

    def recorded(self, name: str) -> list[StoredManifest]:
        """What the store records of a job: its stored manifest, and its open intent's
        (an interrupted start the next deploy may find took effect)."""
        found = [m for m in (self.stored().get(name),) if m is not None]
        intent = self.world.objects.get(f"{PREFIX}_intents/{name}.json")
        if intent is not None:
            doc = json.loads(intent[0])
            if isinstance(doc.get("manifest"), dict):
                found.append(StoredManifest.from_dict(doc["manifest"], name))
        return found

    def blocked_by(self, refused: dict[str, str], jobs: tuple) -> set[str]:
        """The jobs that would write the sink one of `refused` still writes (their start is
        rightly refused while it does)."""
        held = {sink_of_tables(str(m.job["target-table"]), m.tables)
                for name in refused for m in self.recorded(name)}  # fmt: skip
        return {j.name for j in jobs if j.name not in refused
                and sink_of_tables(str(j.spec["target-table"]), j.tables) in held}  # fmt: skip

    def after_ok_deploy(self, name: str, jobs: tuple, prune: bool, skip: set[str]) -> None:
        """After a deploy that ended ok (or did all but refuse changes for their state, and
        the starts those keep from their sinks: `skip`): every job runs what the store
        records."""
        w, stored = self.world, self.stored()
        for job in jobs:
            if job.name in skip:
                continue
            manifest = stored.get(job.name)
            desired = str(job.spec.get("desired-state", "running"))
            if manifest is None and desired == "stopped" and not w.live_runs(job.name):
                continue  # never started, stays so: nothing to record
            if manifest is None:
                w.violate("ok-deploy-not-recorded", f"{name} ended ok, {job.name} not stored")
                continue
            have = key_of_manifest(manifest.job, manifest.tables, manifest.meta.query_version)
            want = key_of_manifest(job.spec, job.tables, manifest.meta.query_version)
            # A job deployed as stopped keeps its stored manifest (its changes apply once it
            # runs again): only its desired state is compared then.
            changed = have != want and desired != "stopped"
            if changed or manifest.job.get("desired-state", "running") != desired:
                w.violate(
                    "ok-deploy-not-recorded",
                    f"{name} ended ok but the store records "
                    f"{job.name} as {have}, {manifest.job.get('desired-state')}",
                )
            alive = w.live_runs(job.name)
            version = manifest.meta.query_version
            if desired == "stopped" and alive:
                w.violate(
                    "ok-deploy-runs-other",
                    f"{name} ended ok; {job.name} should be "
                    f"stopped but {alive[0].describe()} is alive",
                )
            elif desired != "stopped":
                other = [r for r in alive if r.version != version]
                ran = [
                    r
                    for r in w.runs
                    if r.name == job.name
                    and r.version == version
                    and (not r.gone or r.how_gone.startswith("died"))
                ]
                if other or not ran:
                    w.violate(
                        "ok-deploy-runs-other",
                        f"{name} ended ok; the store records "
                        f"{job.name} v{version} but runs: "
                        + (", ".join(r.describe() for r in alive) or "none"),
                    )
        if prune:
            for gone in sorted(set(stored) - {j.name for j in jobs}):
                w.violate(
                    "ok-deploy-not-recorded",
                    f"{name} ended ok (--prune) but {gone} is still stored",
                )

    def final_checks(self) -> None:
        w, stored = self.world, self.stored()
        for name, manifest in sorted(stored.items()):
            if manifest.job.get("desired-state", "running") == "stopped":
                continue
            if name in self.held_back:  # "refused, nothing is stopped or started": down or not
                continue
            version = manifest.meta.query_version
            alive = w.live_runs(name)
            if not any(r.version == version for r in alive):
                w.violate(
                    "stays-down",
                    f"{name} v{version} should run but runs: "
                    + (", ".join(r.describe() for r in alive) or "nothing")
                    + " after the quiet phase",
                )
        # Rows lost: the checkpoint of (job, v) went past a batch committed into a sink that
        # the store never recorded for (job, v), and on into another sink.
        by_version: dict[tuple[str, int], list[tuple[int, str]]] = {}
        for (name, version, batch), sink in sorted(w.track.committed.items()):
            by_version.setdefault((name, version), []).append((batch, sink))
        for (name, version), batches in sorted(by_version.items()):
            recorded = w.track.recorded_sinks.get((name, version), set())
            for index, (batch, sink) in enumerate(batches):
                later = [(b, s) for b, s in batches[index + 1 :] if s != sink]
                if sink not in recorded and later:
                    w.violate(
                        "rows-lost",
                        f"{name} v{version} batch {batch} was committed "
                        f"only into {sink}, which the store never recorded for "
                        f"v{version} (it records {sorted(recorded)}); the checkpoint "
                        f"went on with batch {later[0][0]} into {later[0][1]}",
                    )
                    break
        # The ledger of records once more, whole: every record from where each job began to its
        # furthest committed batch written by exactly one version, or declared.
        for kind, text in w.ledger.final():
            w.violate(kind, text)

    # -- the scenario ----------------------------------------------------------------------------
    def run(self) -> None:
        w, rt = self.world, self.rt
        faults = self.world.faults
        self.watchers_up()
        for op in self.scenario.ops:
            rt.sleep(op.at)
            if op.kind == "deploy":
                self.last_variant = op.variant
                self.deploy(op, op.variant)
            elif op.kind == "stop":
                self.stop(op)
            else:
                alive = [p for p in self.watchers if not p.dead]
                if alive:
                    self.kill(alive[rt.rng.randrange(len(alive))], "scenario")
            self.watchers_up()
        # The quiet phase: no faults, no kills; the actors end; a last deploy; watchers go on.
        rt.sleep(30)
        for key in vars(faults):
            setattr(faults, key, 0.0)
        w.log("QUIET: faults off")
        rt.block(until=lambda: all(p.dead for p in self.actors), deadline=rt.now + QUIET_WAIT)
        for proc in self.actors:
            self.kill(proc, "still running when the quiet phase began")
        self.watchers_up()
        # A killed deployer's submission may still reach the cluster until the target's submit
        # timeout has passed: until then the product rightly starts nothing beside it.
        rt.sleep(SimTarget.submit_timeout)
        last = self.deploy(None, self.last_variant, quiet=True)
        rt.block(until=lambda: last.dead, deadline=rt.now + QUIET_WAIT)
        if not last.dead:
            w.violate("quiet-deploy-failed", f"{last.name} did not end in {QUIET_WAIT:.0f} s")
            self.kill(last, "did not end")
        else:
            _, _, prune = VARIANTS[self.last_variant]
            jobs = self.scenario.jobs(self.last_variant)
            left = actors.pending(w, "plan", jobs, prune, self.scenario.handover)
            if left:
                w.violate(
                    "no-convergence",
                    "after a deploy in a quiet world the next deploy "
                    "would still do: " + "; ".join(left),
                )
        rt.sleep(QUIET_WATCH)
        self.final_checks()
        w.log("END")


def run_seed(seed: int, verbose: bool = False, one_machine: bool = False) -> Outcome:
    scenario = generate(seed)
    rng = random.Random(f"world-{seed}")
    rt = SimRuntime(rng)
    world = World(rt, copy.copy(scenario.faults))
    world.verbose = verbose
    if scenario.kafka:
        added = [scenario.partition_added_at] if scenario.partition_added_at is not None else []
        world.topic = Topic(created=[0.0, 0.0, *added])
    director = Director(world, scenario)
    crashes: list[str] = []

    def crashed(thread, exc: BaseException) -> None:
        line = f"{thread.proc.name}/{thread.name} crashed: {type(exc).__name__}: {exc}"
        crashes.append(line)
        if thread.proc.name in ("director", "cluster"):  # the simulation's own bug
            world.violate("simulator-error", line.splitlines()[0])
            return
        # A traceback that ends a process of the product: never meant for people.
        world.violate("traceback", line.splitlines()[0])

    rt.on_crash = crashed

    def after_step() -> None:
        p = world.faults.kill_per_step
        if p and rng.random() < p:
            victims = [x for x in director.actors + director.watchers if not x.dead]
            if victims:
                director.kill(victims[rng.randrange(len(victims))], "at a random step")

    rt.after_step = after_step
    said = Stream(world, "stderr")
    with (
        one_core(_worker_slot),
        runtime.install(rt),
        deterministic(rt, rng, one_machine),
        contextlib.redirect_stderr(said),
    ):
        world.cluster = rt.process("cluster", lambda: rt.block(until=lambda: False))
        boss = rt.process("director", director.run)
        note = rt.run(boss, MAX_STEPS)
    if note:
        world.log(f"CUT SHORT: {note}")
    return Outcome(seed, scenario, world.violations, world.events, rt.step, rt.now, note, crashes)


def failing_line(seed: int, one_machine: bool = False) -> str | None:
    """One seed's first violation of each kind on one line; None when it kept every check."""
    outcome = run_seed(seed, one_machine=one_machine)
    if not outcome.violations and not outcome.note:
        return None
    return f"seed {seed}: " + " | ".join(outcome.first_lines() or [outcome.note])


def _chunk(seeds: list[int], one_machine: bool = False) -> list[tuple[int, str | None]]:
    return [(seed, failing_line(seed, one_machine)) for seed in seeds]


#: This process's number among run_many's workers (None: it is none of them); they run their
#: seeds each on a CPU of its own, in turn (sim_runtime.one_core).
_worker_slot: int | None = None


def _worker_begins(slots: Any) -> None:
    """A worker of run_many begins: it takes the next number."""
    global _worker_slot
    with slots.get_lock():
        _worker_slot = slots.value
        slots.value += 1


def run_many(
    first: int, count: int, workers: int = 1, one_machine: bool = False
) -> Iterator[tuple[int, str | None]]:
    """(seed, its failing line or None) for `count` seeds from `first`, in seed order;
    `workers` processes at once (each seed replays the same in any process)."""
    seeds = list(range(first, first + count))
    if workers <= 1:
        for seed in seeds:
            yield seed, failing_line(seed, one_machine)
        return
    import concurrent.futures
    import multiprocessing

    size = 10
    chunks = [seeds[i : i + size] for i in range(0, len(seeds), size)]
    context = multiprocessing.get_context("spawn")
    slots = context.Value("i", 0)
    with concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker_begins, initargs=(slots,)
    ) as pool:
        for found in pool.map(_chunk, chunks, [one_machine] * len(chunks)):
            yield from found
