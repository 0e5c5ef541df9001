"""A process-table monitor: every ~0.2 s it reads /proc and finds the drivers of each job.

A driver is every process whose command line names a runtime manifest under this world's
checkpoints, `<checkpoints>/<job>/_control/v<N>.manifest.json` (the gate, spark-submit, its JVM and
the Python driver all carry it; the local target starts each run in a session of its own), or a
prepared run's, `v<N>.prepared-<id>.manifest.json`, once its go file gives it the go (before
that it writes nothing: a warm handover's new run beside the old one is not a second driver). One
run is one session: two sessions of one job that a look shows up at one instant are two drivers,
a violation (a look reads /proc one process after another: a run that ended before the next one
started, both read in one look, is not). A job the harness was told is stopped (`stop NAME`
returned ok, no deploy asked it back since) must have no driver at all.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_SECONDS = 0.2


@dataclass
class Sample:
    """The drivers of each job at one look: {job: {session id: [(pid, version), ...]}}, and
    how many of a job's sessions the look shows up at one instant (1 or 2; where not given,
    as many as were read)."""

    at: float
    drivers: dict[str, dict[int, list[tuple[int, int]]]] = field(default_factory=dict)
    at_once: dict[str, int] = field(default_factory=dict)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # the process ended between the listing and the read
        return None


def session_of(stat: bytes) -> int:
    """Field 6 of /proc/<pid>/stat; the command name (field 2) may hold spaces and ')'."""
    return int(stat[stat.rindex(b")") + 2 :].split()[3])


def _given_go(manifest: str) -> bool:
    """Whether the prepared run of `manifest` was given its go (runner/prepare.py)."""
    raw = _read(manifest.removesuffix(".manifest.json") + ".go.json")
    try:
        return raw is not None and json.loads(raw).get("go") is True
    except ValueError:  # being written
        return False


#: Clock ticks a second, the unit of a process's start time in /proc/<pid>/stat.
TICKS = os.sysconf("SC_CLK_TCK")


def _started(stat: bytes) -> int:
    """Field 22 of /proc/<pid>/stat: when the process started, in ticks since boot (a pid used
    again differs)."""
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def _up(pid: int, started: int) -> bool:
    """Whether the process `pid` that started at `started` is still up. Only a process that is
    gone (no such pid, another process under it, a zombie) is not: one that cannot be read
    for another reason may be up."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    return b") Z " not in stat and _started(stat) == started


@dataclass
class _Seen:
    """A driver's process as a look read it: when (seconds since boot), its start, and whether
    it is a prepared run's (a driver from its go on, not from its start)."""

    pid: int
    started: int
    read_at: float
    prepared: bool = False


def _at_once(earlier: list[_Seen], new: _Seen) -> bool:
    """Whether a session read before (`earlier`, its processes) and the process `new` just read
    were up at one instant: `new` had started when one of `earlier` was read (unless `new` is a
    prepared run, which may have been given its go since), or one of `earlier` is still up now,
    after `new` was read. A run that ended between its read and the start (or the go) of the
    next one is neither: the look saw them one after the other."""
    # Start times are whole ticks: a tick's margin, so that a start after the read never counts.
    if not new.prepared and any(new.started < seen.read_at * TICKS - 1 for seen in earlier):
        return True
    return any(_up(seen.pid, seen.started) for seen in earlier)


def sample(checkpoints: Path) -> Sample:
    """One look at the process table. /proc is read one process after another, not at one
    instant: every driver read counts for `drivers`, but two sessions of a job count as up at
    once (`at_once`) only where the look shows they were, as soon as the second is read
    (`_at_once`)."""
    pattern = re.compile(
        re.escape(str(checkpoints)) + r"/(?P<job>[a-z0-9][a-z0-9_-]*)/_control/v(?P<v>\d+)"
        r"(?P<prepared>\.prepared-[0-9a-f]+)?\.manifest\.json$"
    )
    found = Sample(time.monotonic())
    seen: dict[str, dict[int, list[_Seen]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        raw = _read(f"/proc/{entry}/cmdline")
        if not raw:  # a zombie or a kernel thread
            continue
        for arg in raw.split(b"\0"):
            match = pattern.search(arg.decode(errors="replace"))
            if match:
                break
        else:
            continue
        if match["prepared"] and not _given_go(match.group(0)):
            continue
        stat = _read(f"/proc/{entry}/stat")
        if stat is None or b") Z " in stat:
            continue
        read_at = time.clock_gettime(time.CLOCK_BOOTTIME)
        now = _Seen(int(entry), _started(stat), read_at, bool(match["prepared"]))
        job, session = match["job"], session_of(stat)
        sessions = found.drivers.setdefault(job, {})
        sessions.setdefault(session, []).append((now.pid, int(match["v"])))
        others = [procs for other, procs in seen.setdefault(job, {}).items() if other != session]
        if any(_at_once(procs, now) for procs in others):
            found.at_once[job] = 2
        found.at_once.setdefault(job, 1)
        seen[job].setdefault(session, []).append(now)
    return found


class DriverMonitor:
    """Samples in a thread of its own until `stop()`; `violations` says what it saw wrong."""

    def __init__(self, checkpoints: Path, interval: float = SAMPLE_SECONDS):
        self.checkpoints = checkpoints
        self.interval = interval
        self.samples = 0
        self.violations: list[str] = []
        self.most: dict[str, int] = {}
        self._stopped: dict[str, float] = {}  # job: when its `stop` returned ok
        self._shapes: set[str] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="driver-monitor", daemon=True)

    def start(self) -> DriverMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join(10)

    def stopped(self, job: str) -> None:
        """`stop NAME` returned ok: from now on no driver of `job` may be up."""
        with self._lock:
            self._stopped[job] = time.monotonic()

    def may_run(self, job: str) -> None:
        """A deploy (or a retried stop) is under way: `job` may run again."""
        with self._lock:
            self._stopped.pop(job, None)

    def _loop(self) -> None:
        while not self._done.is_set():
            self.check(sample(self.checkpoints))
            self._done.wait(self.interval)

    def check(self, look: Sample) -> None:
        with self._lock:
            self.samples += 1
            for job, sessions in look.drivers.items():
                at_once = look.at_once.get(job, len(sessions))
                self.most[job] = max(self.most.get(job, 0), at_once)
                if at_once > 1:
                    self._violation(f"{len(sessions)} drivers of {job} at once: {sessions}")
                # A look begun before `stop` returned may have seen the driver still up.
                if sessions and self._stopped.get(job, look.at) < look.at:
                    self._violation(f"{job} runs after `stop {job}` returned ok: {sessions}")

    def _violation(self, text: str) -> None:
        # One line per kind of situation: a violation lasting many samples is one finding.
        shape = re.sub(r"\d+", "N", text)
        if shape not in self._shapes:
            self._shapes.add(shape)
            self.violations.append(f"{time.strftime('%H:%M:%S')} {text}")
