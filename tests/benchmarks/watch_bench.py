"""What one look of `watch` costs when nothing changed: S3 requests and CPU seconds per look.

    python -m tests.benchmarks --only watch --watch-jobs 100,1000,10000

N jobs are recorded in an S3 store on moto's S3 server (a separate process on 127.0.0.1, one
per size and kind), each with a run the (fake) target lists and, as this release's runner
writes it, a status beacon (`<checkpoint-root>/_status/<name>.v1.json`); runs of an older
runner (`status files only`) have a runner status file instead (with a beacon the look never
reads the status file, so it is not written: seeding 10,000 jobs is two PUTs each). The
store's `_index.json` is written as a deploy writes it, from the manifests and ETags the
seeding's PUTs answered (not read back). The watcher looks three times (the first reads
everything and writes each job's record, the second reads again the records the first wrote;
their wall times are shown); before the third each runner's heartbeat is written as this
release writes it (on S3 every beacon rewritten with the same bytes; on a local folder each
beacon's empty beat file, `<name>.v1.beat`), and the third look is measured: every HTTP
request its S3 client sends (retries too, from botocore's `before-send` event), split into the
manifest store's and the checkpoint storage's, and the CPU time of this process (moto's server
is another process). With the checkpoints on S3, with and without beacons (runs of an older
runner: one status-file GET per job), and on a local folder; above `ALL_ROWS_UP_TO` jobs only
on S3 with beacons.

The watcher's clock (`LookClock`) moves by the default interval (15 s) before each look and
not otherwise: on moto, seeding 10,000 jobs and the first two looks take minutes with no
heartbeat written between looks 1 and 2, so on the real clock every run would be judged
stalled at look 2 (`stall_timeout`, 180 s), replaced, and look 3 would read again the records
and beacons the replacements wrote (what one earlier attempt at 10,000 measured: 754 record
GETs). Stalls are judged as always; only the time between looks is that of a watcher looking
every 15 s at runners that beat. The measured look must be one at unchanged jobs: if it said
anything (an event, a warning), wrote more than the lease's renewal or read a beacon on S3,
the benchmark fails instead of reporting it. `profile=True` prints a cProfile of one more
unchanged look after the measured one.

Beside it, `status` of the same kind of jobs, checkpoints and beacons on S3, each job's
checkpoint having committed a batch: run once (it reads everything and keeps what it read of
runs that are gone in the state folder), every beacon rewritten unchanged, then measured; with
every job's run alive (its status file and `commits/` are read every time: they move with every
micro-batch) and with every run gone (stopped).
"""

from __future__ import annotations

import io
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.benchmarks.common import machine, markdown_table, moto_server_process, s3_client


@dataclass(frozen=True)
class Look:
    jobs: int
    checkpoints: str  # "S3" or "local folder"
    beacons: bool
    store_requests: Counter[str]
    storage_requests: Counter[str]
    cpu_seconds: float
    seconds: float
    #: Wall time of the first two looks (read everything, write every record; read the records).
    first_looks: tuple[float, float] = (0.0, 0.0)


class LookClock:
    """The watcher's monotonic clock in this benchmark: it moves only when the benchmark says,
    by the default interval before each look, as if the looks came `interval` seconds apart.
    Seeding N jobs and a fresh watcher's first two looks take minutes on moto at 10,000 jobs,
    without heartbeats between them: on the real clock every run would be judged stalled at
    look 2 (`stall_timeout` 180 s) and restarted, and look 3 would measure the restarts' records
    and beacons instead of an unchanged look. Stalls are judged as always (the same code, the
    same comparisons); only the time between the looks is that of a watcher running every 15 s."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _known(written: dict[str, tuple[Any, str]]) -> Any:
    """What seeding wrote, as the `Reads` a deploy hands `refresh_index`: each manifest under
    the ETag its PUT answered (so the index is written without reading them back)."""
    from flink_sql_runner.stores.base import Reads

    return Reads(
        {n: m for n, (m, _) in written.items()}, {}, {n: t for n, (_, t) in written.items()}
    )


def _look(
    jobs: int,
    on_s3: bool,
    url: str,
    scratch: Path,
    say: Callable[[str], None],
    profile: bool = False,
    beacons: bool = True,
) -> Look:
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.act.settings import Settings
    from flink_sql_runner.host.collector import Frozen
    from flink_sql_runner.model.runs import Run
    from flink_sql_runner.model.stored import ABSENT
    from flink_sql_runner.stores.s3 import S3Store
    from flink_sql_runner.stores.storage import FileStorage
    from flink_sql_runner.watch.events import Notifier
    from flink_sql_runner.watch.watcher import Watcher, WatchSettings
    from tests.support.fakes import FakeTarget, write_beacon, write_beat
    from tests.support.jobs import make_job, stored_of

    client = s3_client(url, scratch)
    bucket = f"watch-{jobs}-{'s3' if on_s3 else 'local'}-{'b' if beacons else 'n'}"
    client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/ckpt" if on_s3 else str(scratch / f"ckpt-{jobs}")
    store, storage, target = S3Store(bucket, "store/", client), FileStorage(client), FakeTarget()
    written: dict[str, tuple[Any, str]] = {}

    def seed(i: int) -> None:
        name = f"job{i:05d}"
        sink = {"format": "parquet", "options": {"path": f"/out/{name}"}}
        stored = stored_of(make_job(name=name, tables={"out": sink}, **{"checkpoint-root": root}))
        written[name] = (stored, store.write(stored, ABSENT))
        if beacons:  # the status file is not read while the beacon is listed: not written
            write_beacon(storage, root, name, 1, "run-0")
        else:
            status = {"run-id": "run-0", "state": "active", "heartbeat": 1}
            storage.write_text(f"{root}/{name}/_control/v1.status.json", json.dumps(status))

    def beat(i: int) -> None:
        """A runner's heartbeat as this release writes it: on S3 the beacon's same bytes again
        (its ETag stays), elsewhere its beat file (the beacon written only on a change)."""
        if on_s3:
            write_beacon(storage, root, f"job{i:05d}", 1, "run-0")
        else:
            write_beat(storage, root, f"job{i:05d}", 1)

    def heartbeats() -> None:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(beat, range(jobs)))

    kind = "beacons" if beacons else "status files only"
    say(f"  {jobs} jobs, checkpoints {'on S3' if on_s3 else 'local'}, {kind}: seeding")
    begun = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(seed, range(jobs)))
    for i in range(jobs):
        target.add_run(Run(f"job{i:05d}", 1, "run-0", "pid 1"))
    store.refresh_index(_known(written))  # as deploys keep it, from what they wrote
    say(f"  seeded in {time.perf_counter() - begun:.0f} s")
    deployment = Deployment(Settings(state_dir=scratch / "state"), store=store, target=target)
    deployment.storage = storage
    settings = WatchSettings(leader_ttl=3600)
    clock, events = LookClock(), io.StringIO()
    # As the `watch` command has it: what a look left frozen until the next (host/collector.py).
    frozen = Frozen()
    watcher = Watcher(deployment, settings, Notifier(events, "json"), clock=clock, collector=frozen)

    def timed_look() -> float:
        clock.advance(settings.interval)
        begun = time.perf_counter()
        watcher.step()
        watcher.between_looks()
        return time.perf_counter() - begun

    try:
        say("  looks 1 and 2 (read everything; read again the records look 1 wrote)")
        first_looks = (timed_look(), timed_look())
        say(f"  looks 1 and 2 took {first_looks[0]:.0f} s and {first_looks[1]:.0f} s")
        if beacons:
            heartbeats()  # the same bytes again: the modification tokens move, the ETags stay
        said = events.tell()
        sent = Sent(client, bucket)
        say("  look 3, measured")
        clock.advance(settings.interval)
        cpu, begun = time.process_time(), time.perf_counter()
        watcher.step()
        watcher.between_looks()
        cpu, seconds = time.process_time() - cpu, time.perf_counter() - begun
        store_side, storage_side = sent.take()
        sent.close()
        _unchanged(events.getvalue()[said:], store_side, storage_side, beacons and on_s3)
        if profile:  # one more unchanged look, under cProfile (not the one measured)
            import cProfile
            import pstats

            if beacons:
                heartbeats()
            clock.advance(settings.interval)
            prof = cProfile.Profile()
            prof.runcall(watcher.step)
            watcher.between_looks()
            for order in ("cumulative", "tottime"):
                pstats.Stats(prof).sort_stats(order).print_stats(30)
    finally:
        watcher.stopping.set()
        watcher.settle()
        watcher.actions.close()
        watcher.leader.release()
        frozen.end()
    where = "S3" if on_s3 else "local folder"
    return Look(jobs, where, beacons, store_side, storage_side, cpu, seconds, first_looks)


def _unchanged(said: str, store: Counter[str], storage: Counter[str], beacons_on_s3: bool) -> None:
    """Raise unless the measured look was one at unchanged jobs: no event said, nothing written
    but the lease's renewal, no beacon read."""
    problems = []
    if said.strip():
        problems.append(f"it said {said.strip().splitlines()[:3]}")
    if store["PutObject"] > 1:
        problems.append(f"it wrote {store['PutObject']} objects to the store")
    if beacons_on_s3 and storage["GetObject"]:
        problems.append(f"it read {storage['GetObject']} objects of checkpoint storage")
    if problems:
        raise RuntimeError(
            "the measured look was not one at unchanged jobs: " + "; ".join(problems)
        )


@dataclass(frozen=True)
class StatusLook:
    jobs: int
    alive: bool
    store_requests: Counter[str]
    storage_requests: Counter[str]
    cpu_seconds: float
    seconds: float


class Sent:
    """Every HTTP request an S3 client sends from now on (retries too: botocore's `before-send`
    event), by operation, split into the manifest store's and the checkpoint storage's (keys
    under `<bucket>/ckpt/`, where the benchmarks put the checkpoint root). Requests sent by
    threads whose names begin with `apart` are counted apart (`take(apart=True)`)."""

    def __init__(self, client: Any, bucket: str, apart: str | None = None) -> None:
        self.client, self.bucket, self.apart = client, bucket, apart
        self.sent: Counter[tuple[bool, str, str]] = Counter()
        self.lock = threading.Lock()  # requests are sent from several threads at once
        client.meta.events.register("before-send.s3", self._count)

    def _count(self, event_name: str, request: Any, **_: Any) -> None:
        url = unquote(request.url)  # a listing names its prefix in the query
        ckpt = f"/{self.bucket}/ckpt/" in url or "prefix=ckpt/" in url
        apart = bool(self.apart) and threading.current_thread().name.startswith(self.apart)
        with self.lock:
            self.sent[apart, "storage" if ckpt else "store", event_name.rsplit(".", 1)[-1]] += 1

    def take(self, apart: bool = False) -> tuple[Counter[str], Counter[str]]:
        """The store's and the checkpoint storage's requests since the last take (`apart`:
        those of the threads counted apart)."""
        with self.lock:
            taken = {k: n for k, n in self.sent.items() if k[0] == apart}
            for key in taken:
                del self.sent[key]
        return tuple(  # type: ignore[return-value]
            Counter({op: n for (_, s, op), n in taken.items() if s == side})
            for side in ("store", "storage")
        )

    def close(self) -> None:
        self.client.meta.events.unregister("before-send.s3", self._count)


@dataclass
class StatusWorld:
    """N jobs as `status` and the page read them: an S3 store on moto with each job's manifest
    and the store's index, its watch record, and on S3 under `<bucket>/ckpt` its checkpoint
    (a committed batch), status file and beacon; the fake target lists each job's run, alive
    or gone (stopped)."""

    jobs: int
    alive: bool
    client: Any
    bucket: str
    root: str
    deployment: Any

    @property
    def state(self) -> str:
        return "active" if self.alive else "stopped"

    def heartbeats(self) -> None:
        """Every beacon written again with the same bytes, as runners' heartbeats do on S3."""
        from tests.support.fakes import write_beacon

        storage = self.deployment.storage
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: write_beacon(storage, self.root, f"job{i:05d}", 1, "run-0",
                                                 state=self.state), range(self.jobs)))  # fmt: skip


def status_world(
    jobs: int,
    alive: bool,
    url: str,
    scratch: Path,
    say: Callable[[str], None],
    bucket: str | None = None,
) -> StatusWorld:
    """Seed a `StatusWorld` of `jobs` jobs on moto's server at `url` (a state folder in
    `scratch`, for `status`'s own cache of what it read)."""
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.act.settings import Settings
    from flink_sql_runner.model.runs import Liveness, Run
    from flink_sql_runner.model.stored import ABSENT
    from flink_sql_runner.stores.s3 import S3Store
    from flink_sql_runner.stores.storage import FileStorage
    from flink_sql_runner.watch.records import WatchLog, WatchRecord, manifest_digest
    from tests.support.fakes import FakeTarget, write_beacon
    from tests.support.jobs import make_job, stored_of

    client = s3_client(url, scratch)
    bucket = bucket or f"status-{jobs}-{'alive' if alive else 'gone'}"
    client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/ckpt"
    store, storage, target = S3Store(bucket, "store/", client), FileStorage(client), FakeTarget()
    state = "active" if alive else "stopped"
    written: dict[str, tuple[Any, str]] = {}

    def seed(i: int) -> None:
        name = f"job{i:05d}"
        sink = {"format": "parquet", "options": {"path": f"/out/{name}"}}
        stored = stored_of(make_job(name=name, tables={"out": sink}, **{"checkpoint-root": root}))
        written[name] = (stored, store.write(stored, ABSENT))
        status = {"run-id": "run-0", "state": state, "heartbeat": 1, "last-batch": {"id": 3}}
        storage.write_text(f"{root}/{name}/_control/v1.status.json", json.dumps(status))
        storage.write_text(f"{root}/{name}/1/commits/3", "v1\n{}")
        write_beacon(storage, root, name, 1, "run-0", state=state)
        WatchLog(store).write(WatchRecord(name, manifest_digest(stored)))

    say(f"  {jobs} jobs, runs {'alive' if alive else 'gone'}: seeding")
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(seed, range(jobs)))
    liveness = Liveness.ALIVE if alive else Liveness.GONE
    for i in range(jobs):
        target.add_run(Run(f"job{i:05d}", 1, "run-0", "pid 1", liveness=liveness))
    store.refresh_index(_known(written))
    (scratch / "state").mkdir(exist_ok=True)
    deployment = Deployment(Settings(state_dir=scratch / "state"), store=store, target=target)
    deployment.storage = storage
    return StatusWorld(jobs, alive, client, bucket, root, deployment)


def _status_look(
    jobs: int, alive: bool, url: str, scratch: Path, say: Callable[[str], None]
) -> StatusLook:
    from flink_sql_runner.watch.status import status_rows

    world = status_world(jobs, alive, url, scratch, say)
    status_rows(world.deployment, [])  # reads everything, keeps what it read of runs gone
    if alive:
        world.heartbeats()
    sent = Sent(world.client, world.bucket)
    say("  status again, measured")
    cpu, begun = time.process_time(), time.perf_counter()
    status_rows(world.deployment, [])
    cpu, seconds = time.process_time() - cpu, time.perf_counter() - begun
    store_side, storage_side = sent.take()
    sent.close()
    return StatusLook(jobs, alive, store_side, storage_side, cpu, seconds)


def run_status(sizes: list[int], say: Callable[[str], None] = print) -> list[StatusLook]:
    looks = []
    with tempfile.TemporaryDirectory(prefix="fsr-status-bench-") as scratch:
        for alive in (False, True):
            for jobs in sizes:
                with moto_server_process() as server:
                    folder = Path(scratch, f"{jobs}-{alive}")
                    folder.mkdir()
                    looks.append(_status_look(jobs, alive, server.url, folder, say))
                    say("  " + status_section(looks[-1:]).splitlines()[-1])
    return looks


def status_section(looks: list[StatusLook]) -> str:
    rows = [
        [f"{look.jobs:,}", "alive" if look.alive else "gone (stopped)",
         _requests(look.store_requests), _requests(look.storage_requests),
         f"{look.cpu_seconds:.2f} s", f"{look.seconds:.2f} s"]
        for look in looks
    ]  # fmt: skip
    table = markdown_table(
        ["jobs", "runs", "store requests", "checkpoint-storage requests", "CPU", "wall time"],
        rows,
    )
    return (
        f"#### `status` of unchanged jobs\n\n{machine()}; moto's S3 server in its own process, "
        "no latency added; checkpoints and beacons on S3; the second `status` on this machine "
        "(the first reads everything), every beacon rewritten unchanged before it when the "
        "runs are alive.\n\n" + table
    )


#: Above this many jobs only the row that matters is measured (checkpoints on S3, beacons):
#: at 10,000 the other two take as long again each (a look over runs without beacons is a GET
#: per job; the local folder's seeding and first looks are as slow as S3's) and say what 100
#: and 1,000 say.
ALL_ROWS_UP_TO = 1000


def run(sizes: list[int], say: Callable[[str], None] = print) -> list[Look]:
    looks = []
    with tempfile.TemporaryDirectory(prefix="fsr-watch-bench-") as scratch:
        for on_s3, beacons in ((False, True), (True, False), (True, True)):
            for jobs in sizes:
                if jobs > ALL_ROWS_UP_TO and not (on_s3 and beacons):
                    continue
                with moto_server_process() as server:
                    folder = Path(scratch, f"{jobs}-{on_s3}-{beacons}")
                    folder.mkdir()
                    looks.append(_look(jobs, on_s3, server.url, folder, say, beacons=beacons))
                    say("  " + section(looks[-1:]).splitlines()[-1])
    return looks


def _requests(counter: Counter[str]) -> str:
    if not counter:
        return "0"
    return (
        f"{sum(counter.values())} ("
        + ", ".join(f"{v} {k}" for k, v in sorted(counter.items()))
        + ")"
    )


def section(looks: list[Look]) -> str:
    rows = [
        [f"{look.jobs:,}", look.checkpoints, "beacons" if look.beacons else "status files only",
         _requests(look.store_requests),
         _requests(look.storage_requests), f"{look.cpu_seconds:.2f} s", f"{look.seconds:.2f} s",
         f"{look.first_looks[0]:.1f} s, {look.first_looks[1]:.1f} s"]
        for look in looks
    ]  # fmt: skip
    table = markdown_table(
        ["jobs", "checkpoints", "runners report in", "store requests",
         "checkpoint-storage requests",
         "CPU of the look", "wall time", "looks 1 and 2 (wall)"],
        rows,
    )  # fmt: skip
    return (
        f"#### One look of `watch` at unchanged jobs\n\n{machine()}; moto's S3 server in its own "
        "process, no latency added; the third look of a fresh watcher (the first reads "
        "everything, the second the records the first wrote), every runner's heartbeat written "
        "before it (on S3 its beacon's same bytes, on a local folder its beat file); "
        "`status files only`: runs of an older runner, "
        "which writes no beacon.\n\n" + table
    )
