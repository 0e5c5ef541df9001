"""Where the test suite's CPU goes: by kind of process and by test module.

    python -m tests.benchmarks.suite_cpu [--out FILE.json] [-- PYTEST ARGS...]

Runs pytest (by default the README's test command's `pytest -n 3`) and, beside it, reads the
process table every second: each process's CPU seconds (the last reading before it ended, so a
process that lives less than a second may be missed or undercounted), its command line, and the
test it serves. A test's processes are found by `PYTEST_CURRENT_TEST` in their environment (pytest
sets it in its workers; the CLI runs, their spark-submits and drivers inherit it), else by their
parent's. At the end it prints the machine's busy share (from /proc/stat), the CPU of each kind of
process (a driver's JVM, its Python, a probe, the tests' own Spark sessions, the pytest workers,
the machine's own kernel threads and agents; what the JVMs started and waited for that no reading
saw, from the CPU the kernel adds to the JVM for it) and the modules whose processes cost most,
with how many Spark JVMs each started. Linux only. docs/developers/testing.md keeps a measured
run's tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.benchmarks.common import process_table
from tests.support.scratch import for_a_program

#: What each kind of process is told by (its command line, then its name), first match wins.
KINDS = (
    ("kafka.Kafka", "Kafka broker"),
    ("deploy.master.Master", "standalone daemons"),
    ("deploy.worker.Worker", "standalone daemons"),
    ("DriverWrapper", "cluster drivers and executors"),
    ("ExecutorBackend", "cluster drivers and executors"),
    ("ExecutorLauncher", "cluster drivers and executors"),
    ("ApplicationMaster", "cluster drivers and executors"),
    ("launcher.Main", "spark-submit launchers"),
)


@dataclass
class Seen:
    pid: int
    ppid: int
    cpu: float
    name: str
    command: str
    test: str | None
    first: float
    last: float
    #: Its CPU seconds when first seen, where it was there before the run began (else 0).
    base: float = 0.0
    #: CPU seconds of its children that ended and it waited for (as `base`, from the run on).
    reaped: float = 0.0
    reaped_base: float = 0.0
    #: Whether it was seen as a JVM yet (its `reaped_base` is taken then).
    was_jvm: bool = False

    @property
    def used(self) -> float:
        return self.cpu - self.base


def kind_of(seen: Seen) -> str:
    command, name = seen.command, seen.name
    for mark, kind in KINDS:
        if mark in command:
            return kind
    java = name == "java"
    if "--probe" in command:
        return "probe JVMs" if java else "probe Pythons"
    if "job_runner.py" in command:
        return "driver JVMs" if java else "driver Pythons"
    if java and "pyspark-shell" in command:
        return "the tests' Spark sessions"
    if java and ("hadoop" in command.lower() or "minicluster" in command.lower()):
        return "Hadoop minicluster"
    if java:
        return "other JVMs"
    if "-m flink_sql_runner" in command or "warm_cli" in command:
        return "the CLI"
    if "exec(eval(sys.stdin" in command or "pytest" in command:
        return "pytest"
    if not command:
        return f"kernel threads ({name.split('/')[0]})"
    return f"other: {name}"


def _environ_test(pid: str) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(b"PYTEST_CURRENT_TEST="):
            return item.split(b"=", 1)[1].decode(errors="replace").split(" ")[0]
    return None


def sample(seen: dict[str, Seen], began: float, first: bool = False) -> None:
    """One reading of the process table into `seen` (keyed by pid and start time); the
    `first`, before the run began, keeps what each process had used by then."""
    now = time.monotonic() - began
    for process in process_table():
        pid, name, fields, cpu = str(process.pid), process.name, process.fields, process.cpu_seconds
        key = f"{pid}:{fields[19]}"
        found = seen.get(key)
        if found is None or found.name != name:  # new, or it exec'd another program
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            test = _environ_test(pid)
            if found is None:
                found = seen[key] = Seen(int(pid), int(fields[1]), cpu, name, "", test, now, now,
                                         cpu if first else 0.0)  # fmt: skip
            found.name, found.command = name, command.decode(errors="replace").strip()
            found.test = found.test or test
        became_jvm = name == "java" and not found.was_jvm
        found.was_jvm = found.was_jvm or became_jvm
        found.cpu, found.last = max(found.cpu, cpu), now
        found.reaped = max(found.reaped, process.reaped_cpu_seconds)
        if first or became_jvm:
            # What it carries from before it was this JVM, or before the run: spark-class runs
            # its launcher JVM and waits for it before it becomes the JVM it launched.
            found.reaped_base = found.reaped


def busy_share() -> tuple[int, int]:
    """(busy, all) clock ticks of the machine so far."""
    fields = [int(f) for f in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def attribute(seen: dict[str, Seen]) -> None:
    """A process without a test of its own serves its parent's (as seen when it started)."""
    by_pid: dict[int, list[Seen]] = defaultdict(list)
    for item in seen.values():
        by_pid[item.pid].append(item)
    for item in sorted(seen.values(), key=lambda s: s.first):
        if item.test is None:
            parents = [p for p in by_pid.get(item.ppid, []) if p.first <= item.first + 1]
            if parents:
                item.test = max(parents, key=lambda p: p.first).test


#: The kind of what a JVM started and waited for that the readings never saw (each lives
#: milliseconds): Hadoop's local file system runs `chmod` and `readlink` for each file it writes.
UNSEEN = "programs JVMs started, unseen"


def unseen_children(seen: dict[str, Seen]) -> list[Seen]:
    """One entry per JVM for the CPU of its children it waited for that no reading saw: what it
    reaped since it was that JVM (its children's, and theirs', as each waited), less what the
    processes below it that were seen had used, those that ended before its last reading and
    whose parents did (a YARN container's JVM under the script that launched it; what a child
    still running waited for is that child's, not the JVM's). Never below 0 (a reading's second
    may see a child's end before its parent's)."""
    children: dict[int, list[Seen]] = defaultdict(list)
    for item in seen.values():
        children[item.ppid].append(item)

    def ended_below(parent: Seen, until: float) -> float:
        ended = [c for c in children[parent.pid] if parent.first <= c.first and c.last < until]
        return sum(c.used + ended_below(c, until) for c in ended)

    found = []
    for item in seen.values():
        if item.name != "java":
            continue
        cpu = item.reaped - item.reaped_base - ended_below(item, item.last)
        if cpu > 0:
            found.append(Seen(item.pid, item.pid, cpu, UNSEEN, UNSEEN, item.test, item.first,
                              item.last))  # fmt: skip
    return found


def report(seen: dict[str, Seen], wall: float, busy: float, top: int = 20) -> str:
    every = [*seen.values(), *unseen_children(seen)]
    cpu_all = sum(s.used for s in every)
    kinds, counts = Counter(), Counter()
    modules: dict[str, Counter[str]] = defaultdict(Counter)
    jvms: Counter[str] = Counter()
    for item in every:
        kind = UNSEEN if item.name == UNSEEN else kind_of(item)
        kinds[kind] += item.used
        counts[kind] += 1
        module = (item.test or "").split("::")[0] or "(no test)"
        modules[module][kind] += item.used
        if kind in ("driver JVMs", "probe JVMs", "cluster drivers and executors"):
            jvms[module] += 1
    lines = [f"wall {wall:.0f} s, the two cores {100 * busy:.0f}% busy; CPU seen in processes "
             f"{cpu_all:.0f} s", "", "| kind | CPU-s | processes |", "|---|---|---|"]  # fmt: skip
    lines += [f"| {k} | {v:.0f} | {counts[k]} |" for k, v in kinds.most_common() if v >= 1]
    lines += ["", "| module | CPU-s | Spark JVMs | most of it |", "|---|---|---|---|"]
    ranked = sorted(modules.items(), key=lambda kv: -sum(kv[1].values()))
    for module, costs in ranked[:top]:
        most = ", ".join(f"{k} {v:.0f}" for k, v in costs.most_common(3))
        lines.append(f"| `{module}` | {sum(costs.values()):.0f} | {jvms[module]} | {most} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.suite_cpu",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--out", help="also write every process seen, as JSON, to this file")
    parser.add_argument("--top", type=int, default=20, help="modules shown")
    parser.add_argument("pytest", nargs="*", default=["-n", "3"], help="pytest's arguments")
    args = parser.parse_args(argv)
    seen: dict[str, Seen] = {}
    done = threading.Event()
    began = time.monotonic()
    sample(seen, began, first=True)
    ticks = busy_share()

    def sampler() -> None:
        while not done.is_set():
            sample(seen, began)
            done.wait(1.0)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    try:
        code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest])  # noqa: S603
    finally:
        done.set()
        thread.join()
    wall = time.monotonic() - began
    after = busy_share()
    attribute(seen)
    print(report(seen, wall, (after[0] - ticks[0]) / max(1, after[1] - ticks[1]), args.top))
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(s) for s in seen.values()]))
    return code


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
