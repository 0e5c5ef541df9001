"""What the fleet page costs (`flink-sql-runner ui`): GET / over real HTTP, look by look.

    python -m tests.benchmarks --only ui --ui-jobs 100,1000

N jobs seeded as for `status` (`watch_bench.status_world`: an S3 store on moto's S3 server, a
separate process on 127.0.0.1, with each job's manifest, the store's index and its watch
record; its checkpoint with a committed batch, its status file and its status beacon on S3;
the fake target lists each job's run), every run alive or every run gone (stopped). A real
`PageServer` on 127.0.0.1 (port 0) serves `Pages` over a `Fleet` as `ui` makes them (one look
shared by the requests of `reuse_for`, 2 s; a running job's status file and commits listing
read again once `fresh_for`, 10 s, has passed), and each measured request is a GET of / from a
new connection, its whole body read:

- `status`'s first look and the runners' heartbeats (the beacons' same bytes again) come
  before the page's, so that nothing between the page's looks ages what it read;
- *first look*: the server's first request (a fresh server reads everything);
- *within reuse_for*: a request right after it, answered from that look;
- then `reuse_for` is set to 0, so that every request makes a look of its own, as one past
  `reuse_for` does, in rounds: once `fresh_for` has passed since the running jobs were last
  read, *a look after fresh_for*; where the page reads them again behind its looks, *a look
  while the reads behind run*, and *the reads behind* themselves, until they end;
- then side by side, in turn: *looks within fresh_for* (`fresh_for` raised for them: on moto,
  reading 1,000 running jobs takes longer than 10 s, so that with 10 s the first of them
  would have expired again) and `status`'s own look (`status_rows` as `flink-sql-runner
  status` makes its rows: the state folder's cache of what it read, every running job read
  every time).

Per request: wall time (request sent to last byte read), the look's own time (the `Fleet`'s)
and the answer's (`Pages.answer`: the look and the template), CPU of this process (the
server's threads and the client) and of moto's server, the S3 requests the look sent
(botocore's `before-send`, split into the store's and the checkpoint storage's, by operation;
the reads behind a look counted apart, by their threads' name), the page's bytes.
`profile=True` prints a cProfile of one more look within fresh_for (`Pages.answer("/")` on
this thread: the look and the template; HTTP is not in it).
"""

from __future__ import annotations

import dataclasses
import http.client
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.benchmarks.common import Server, machine, markdown_table, moto_server_process
from tests.benchmarks.watch_bench import Sent, StatusWorld, _requests, status_world

#: What each measured request is, in the order the table shows them.
KINDS = {
    "first": "first look (a fresh server)",
    "reused": "within reuse_for (the shared look)",
    "after": "a look after fresh_for",
    "during": "a look while the reads behind run",
    "behind": "the reads behind a look (no request)",
    "within": "a look within fresh_for",
    "status": "`status`'s own look (no page)",
}
#: The threads that read running jobs again behind the page's looks (ui/fleet.py).
BEHIND = "behind"
#: `fresh_for` while the looks within it are measured.
WITHIN_FOR = 600.0


@dataclass(frozen=True)
class Request:
    """One GET / (or one `status_rows`, `kind` "status": no page, no HTTP; or the reads behind
    a look, "behind")."""

    kind: str
    seconds: float
    cpu_seconds: float
    store_requests: Counter[str]
    storage_requests: Counter[str]
    page_bytes: int = 0
    looks: int = 0  # looks the fleet made for it (0: answered from the shared one)
    look_seconds: float = 0.0  # the look's own time (the Fleet's)
    answer_seconds: float = 0.0  # Pages.answer's: the look and the template
    moto_cpu_seconds: float = 0.0


@dataclass
class UiResult:
    jobs: int
    alive: bool
    requests: list[Request] = field(default_factory=list)
    #: The load average before and after.
    load: tuple[float, float] = (0.0, 0.0)

    def of(self, kind: str) -> list[Request]:
        return [r for r in self.requests if r.kind == kind]

    def median(self, kind: str) -> float:
        return statistics.median(r.seconds for r in self.of(kind))


class _Page:
    """A PageServer on 127.0.0.1 over one world, and what each GET / cost."""

    def __init__(self, world: StatusWorld, server: Server) -> None:
        from flink_sql_runner.ui.fleet import Fleet
        from flink_sql_runner.ui.pages import Pages
        from flink_sql_runner.ui.server import PageServer

        self.world, self.moto = world, server
        self.fleet = Fleet(world.deployment)
        self.pages = Pages(world.deployment, fleet=self.fleet)
        answer = self.pages.answer
        self.answered = 0.0

        def timed(target: str) -> Any:  # the server calls it on its own thread
            begun = time.perf_counter()
            try:
                return answer(target)
            finally:
                self.answered = time.perf_counter() - begun

        self.pages.answer = timed  # type: ignore[method-assign]
        self.server = PageServer(self.pages, "127.0.0.1", 0)
        self.sent = Sent(world.client, world.bucket, apart=BEHIND)

    @property
    def reads(self) -> Any:
        """The fleet's StatusReads (what it keeps of the running jobs between looks)."""
        return self.fleet._reads

    def behind(self) -> bool:
        """Whether the page is reading running jobs again behind its last look now."""
        running = getattr(self.fleet, "reading_behind", None)
        return bool(running and running())

    def get(self, kind: str) -> Request:
        looks = self.fleet.looks
        self.sent.take()
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        moto = self.moto.cpu_seconds()
        cpu, begun = time.process_time(), time.perf_counter()
        try:
            connection.request("GET", "/")
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        cpu, seconds = time.process_time() - cpu, time.perf_counter() - begun
        moto = self.moto.cpu_seconds() - moto
        if answer.status != 200 or b'data-job="job00000"' not in body:
            raise RuntimeError(f"GET / answered {answer.status}: {body[:300]!r}")
        made = self.fleet.looks - looks
        seen = self.fleet._last  # what the page showed (seen() would look again)
        if seen is None or self.fleet._failed is not None:
            raise RuntimeError(f"the look failed: {self.fleet._failed}")
        store, storage = self.sent.take()
        return Request(kind, seconds, cpu, store, storage, len(body), made,
                       seen.seconds if made else 0.0, self.answered, moto)  # fmt: skip

    def settle(self, since: tuple[float, float]) -> Request | None:
        """Wait for the reads behind the last look to end: what they cost since `since` (this
        process's CPU, moto's), None when none ran."""
        if getattr(self.fleet, "settle", None) is None:
            return None  # a page that reads running jobs in its looks
        self.fleet.settle()
        store, storage = self.sent.take(apart=True)
        if not store and not storage:
            return None
        cpu, moto = time.process_time() - since[0], self.moto.cpu_seconds() - since[1]
        took = self.fleet.behind_seconds
        return Request("behind", took, cpu, store, storage, moto_cpu_seconds=moto)

    def status(self) -> Request:
        """`status_rows` as `flink-sql-runner status` makes its rows (no page)."""
        from flink_sql_runner.watch.status import status_rows

        self.sent.take()
        moto = self.moto.cpu_seconds()
        cpu, begun = time.process_time(), time.perf_counter()
        rows = status_rows(self.world.deployment, [])
        cpu, seconds = time.process_time() - cpu, time.perf_counter() - begun
        assert len(rows) == self.world.jobs
        store, storage = self.sent.take()
        moto = self.moto.cpu_seconds() - moto
        return Request("status", seconds, cpu, store, storage, look_seconds=seconds,
                       moto_cpu_seconds=moto)  # fmt: skip

    def close(self) -> None:
        self.fleet_settle()
        self.sent.close()
        self.server.close()

    def fleet_settle(self) -> None:
        settle = getattr(self.fleet, "settle", None)
        if settle is not None:
            settle()


def _check_within(request: Request, page: _Page) -> None:
    """A look within fresh_for reads no running job again, in it or behind it: raise if it
    did."""
    if page.world.alive and (request.storage_requests["GetObject"] or page.behind()):
        raise RuntimeError("a look meant within fresh_for read running jobs again")


def measure(
    world: StatusWorld,
    server: Server,
    rounds: int,
    within: int,
    say: Callable[[str], None],
    profile: bool = False,
    fresh_for: float | None = None,
) -> UiResult:
    """The requests of one world, as the module says (`fresh_for`: the page's, instead of its
    default: the smoke test's, not to wait 10 s a round)."""
    from tests.benchmarks.common import load_average

    result = UiResult(world.jobs, world.alive)
    load = load_average()
    page = _Page(world, server)
    if fresh_for is not None:
        page.reads.fresh_for = fresh_for
    add = result.requests.append
    try:
        # `status`'s first (it reads everything and keeps what it read of runs that are gone)
        # and the runners' heartbeats (the beacons' same bytes again), before the page's first
        # look, so that nothing between the page's looks ages what it read.
        page.status()
        if world.alive:
            world.heartbeats()
        add(page.get("first"))
        add(page.get("reused"))
        if result.requests[-1].looks:
            raise RuntimeError("a request within reuse_for made a look of its own")
        say(f"  first look {result.requests[0].seconds:.2f} s, within reuse_for "
            f"{result.requests[1].seconds * 1000:.1f} ms")  # fmt: skip
        page.fleet_settle()
        page.fleet.reuse_for = 0.0  # from now on every request makes a look
        fresh_for = float(page.reads.fresh_for)
        read_at = time.monotonic()  # when the running jobs were last read
        for index in range(rounds):
            time.sleep(max(0.0, read_at + fresh_for + 0.2 - time.monotonic()))
            since = (time.process_time(), server.cpu_seconds())
            add(page.get("after"))
            said = [f"after fresh_for {result.requests[-1].seconds:.2f} s"]
            if page.behind():
                add(page.get("during"))
                said.append(f"during the reads behind {result.requests[-1].seconds:.2f} s")
            behind = page.settle(since)
            if behind is not None:  # its CPU, this process's and moto's: less the looks'
                looks = [r for r in result.requests[-2:] if r.kind in ("after", "during")]
                behind = dataclasses.replace(
                    behind,
                    cpu_seconds=behind.cpu_seconds - sum(r.cpu_seconds for r in looks),
                    moto_cpu_seconds=behind.moto_cpu_seconds
                    - sum(r.moto_cpu_seconds for r in looks),
                )
                add(behind)
                said.append(f"the reads behind {behind.seconds:.2f} s")
            read_at = time.monotonic()
            say(f"  round {index + 1}: " + "; ".join(said))
        # Side by side: looks within fresh_for and `status`'s, in turn.
        page.reads.fresh_for = WITHIN_FOR
        for index in range(rounds):
            steps = ["status", *["within"] * within]
            for step in reversed(steps) if index % 2 else steps:
                if step == "status":
                    add(page.status())
                    continue
                add(page.get("within"))
                _check_within(result.requests[-1], page)
            done = result.requests[-within - 1 :]
            say(f"  side by side {index + 1}: " + ", ".join(f"{r.kind} {r.seconds:.2f} s"
                                                           for r in done))  # fmt: skip
        if profile:
            say(profile_answer(page.pages))
        page.reads.fresh_for = fresh_for
    finally:
        page.close()
    result.load = (load, load_average())
    return result


def profile_answer(pages: Any, top: int = 15) -> str:
    """A cProfile of one `Pages.answer("/")` on this thread (a look and the template; the
    look made now, whatever `reuse_for` is), top `top` by cumulative time."""
    import cProfile
    import io
    import pstats

    pages.fleet.reuse_for = 0.0
    prof = cProfile.Profile()
    prof.runcall(pages.answer, "/")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def run(
    sizes: list[int],
    rounds: int = 3,
    within: int = 3,
    say: Callable[[str], None] = print,
    profile_at: int | None = None,
    runs: tuple[str, ...] = ("gone", "alive"),
    fresh_for: float | None = None,
) -> list[UiResult]:
    """Each size, runs gone then alive (`runs`), each in a world of its own on a moto server of
    its own; `profile_at`: the size whose worlds are profiled once more after the rounds."""
    results = []
    with tempfile.TemporaryDirectory(prefix="fsr-ui-bench-") as scratch:
        for jobs in sizes:
            for alive in (False, True):
                if ("alive" if alive else "gone") not in runs:
                    continue
                with moto_server_process() as server:
                    folder = Path(scratch, f"{jobs}-{alive}")
                    folder.mkdir()
                    bucket = f"ui-{jobs}-{'alive' if alive else 'gone'}"
                    world = status_world(jobs, alive, server.url, folder, say, bucket)
                    results.append(
                        measure(world, server, rounds, within, say, profile_at == jobs, fresh_for)
                    )
                    for line in section(results[-1:]).splitlines():
                        if line.startswith("| ") and not line.startswith("| jobs"):
                            say("  " + line)
    return results


def _stat(values: list[float], unit: str = "s", scale: float = 1.0) -> str:
    if not values:
        return "-"
    median = statistics.median(values) * scale
    if len(values) == 1:
        return f"{median:.2f} {unit}"
    return f"{median:.2f} {unit} ({min(values) * scale:.2f})"


def _same(counters: list[Counter[str]]) -> str:
    """The requests of each sample: one figure when they were all the same."""
    shown = list(dict.fromkeys(_requests(c) for c in counters))
    return " / ".join(shown) if shown else "-"


def section(results: list[UiResult]) -> str:
    headers = ["jobs", "runs", "request", "n", "wall time", "the look", "the template",
               "HTTP and the rest", "CPU", "moto's CPU", "store requests",
               "checkpoint-storage requests", "page"]  # fmt: skip
    rows = []
    for result in results:
        for kind, label in KINDS.items():
            done = result.of(kind)
            if not done:
                continue
            page = kind not in ("status", "behind")
            rows.append([
                f"{result.jobs:,}",
                "alive" if result.alive else "gone (stopped)",
                label,
                len(done),
                _stat([r.seconds for r in done]),
                _stat([r.look_seconds for r in done]) if kind not in ("reused", "behind") else "-",
                _stat([r.answer_seconds - r.look_seconds for r in done]) if page else "-",
                _stat([r.seconds - r.answer_seconds for r in done], "ms", 1000) if page else "-",
                _stat([r.cpu_seconds for r in done]),
                _stat([r.moto_cpu_seconds for r in done]),
                _same([r.store_requests for r in done]),
                _same([r.storage_requests for r in done]),
                f"{statistics.median(r.page_bytes for r in done) / 1024:.0f} KiB" if page else "-",
            ])  # fmt: skip
    loads = ", ".join(f"{r.load[0]:.1f} to {r.load[1]:.1f}" for r in results)
    lines = [
        "#### The fleet page, GET / over HTTP",
        "",
        f"{machine()}; moto's S3 server in its own process, no latency added; checkpoints and "
        "beacons on S3; a `PageServer` on 127.0.0.1 as `ui` makes it (`reuse_for` 2 s, "
        "`fresh_for` 10 s), then with `reuse_for` 0 so that each request makes a look. Times "
        "are median (best) of n; *the look* is the `Fleet`'s, *the template* the rest of "
        "`Pages.answer`, *HTTP and the rest* the wall time past the answer (the request, the "
        "page's bytes, the client); CPU is this process's (the server's threads and the "
        f"client). Load average {loads} (before and after each world).",
        "",
        markdown_table(headers, rows),
        "",
    ]
    for result in results:
        runs = "alive" if result.alive else "gone"
        said = []
        if result.of("within") and result.of("status"):
            ratio = result.median("status") / result.median("within")
            said.append(f"`status`'s look / the page's look within fresh_for: {ratio:.1f}x")
        if result.of("within") and result.of("after"):
            ratio = result.median("after") / result.median("within")
            said.append(f"a look after fresh_for / within: {ratio:.1f}x")
        if said:
            lines.append(f"- {result.jobs:,} jobs, runs {runs}: " + "; ".join(said))
    for result in results:
        if result.jobs < 1000:
            continue
        for kind in ("after", "during", "within"):
            if result.of(kind):
                wall = result.median(kind)
                lines.append(
                    f"- {'met' if wall < 1 else 'MISSED'}: {result.jobs:,} jobs, runs "
                    f"{'alive' if result.alive else 'gone'}, {KINDS[kind]} under 1 s: {wall:.2f} s"
                )
    return "\n".join(lines).rstrip()
