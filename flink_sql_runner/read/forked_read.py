"""Both cores for a cold read: a forked child reads the last files beside the command.

Reading a job file costs about 0.5 ms of one core (YAML, the template's merge, the schema, the
query's tables, the checks), a table file of 1,000 tables about 0.1 s: 10,000 jobs the load
cache does not know are seconds of one core on a CI runner that has two. Before reading the
job files, and before reading the table files, the command forks: the child reads the files of
the list's tail that the cache does not know (half of their bytes) into its copy of the cache
and sends back the entries it kept; the command reads the head meanwhile, then takes the
entries and reads the tail, each of its files now known: given back as the cache gives back
any unchanged file, with its warnings, its tables declared again (a name declared twice is
found as in one process) and its sources looked at again. The files are read in their order,
so problems and warnings come in the order one process gives them; a file the child could not
keep (a problem, a secret) is read by the command as before.

The child is only a help: whatever it does, the command reads every file itself. It is not
started on one CPU, off Linux, or for less than `MIN_BYTES` of files the cache does not know.
It sends nothing but cache lines of its share's files (the cache checks each entry as it
checks any); if it fails, sends something broken, or has not ended `deadline` after the
command read its own share (a lock another thread held when it was forked, say), it is killed
by its pid and its share read by the command.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

from flink_sql_runner.read.load_cache import LoadCache

#: Fewer bytes of unknown files than this are read in one process (about 0.2 s of one core):
#: forking and taking the entries back cost tens of milliseconds.
MIN_BYTES = 200_000

T = TypeVar("T")


@dataclass
class Beside:
    """A child reading `share`, the tail of the files from `first` on, into `section`."""

    pid: int
    fd: int
    first: int
    share: frozenset[str]
    section: str


#: Starts the child once the reader it calls on each file is made.
Start = Callable[[Callable[[Path], object]], Beside | None]


def with_reader(
    files: list[Path], cache: LoadCache | None, section: str
) -> tuple[LoadCache | None, Start | None]:
    """The cache to read `files` with (one in memory when the command keeps none, for what
    the child sends), and what starts the child; (cache, None) where no child would pay."""
    if not _can_fork():
        return cache, None
    within = cache if cache is not None else LoadCache()
    first = split_at(files, lambda source: within.has(section, source))
    if first is None:
        return cache, None
    return within, lambda read: _fork(files[first:], first, within, section, read)


def split_at(files: list[Path], known: Callable[[str], bool]) -> int | None:
    """Where the tail holding half of the bytes of the files not `known` begins; None when
    they are fewer than MIN_BYTES (edited files are not told from unchanged ones here: that
    takes reading them)."""
    sizes = []
    for at, path in enumerate(files):
        if not known(str(path)):
            try:
                sizes.append((at, os.stat(path).st_size))
            except OSError:
                continue
    total = sum(size for _, size in sizes)
    if total < MIN_BYTES:
        return None
    head = 0
    for at, size in sizes:
        head += size
        if head * 2 >= total:
            return at + 1 if at + 1 < len(files) else None
    return None


def take(beside: Beside, cache: LoadCache, deadline: float) -> int:
    """The child's entries put in `cache` (the entries of its share's files only), waiting
    for it at most `deadline` seconds; the child has ended when this returns (killed if it had
    not). The number of entries taken."""
    received = _received(beside.fd, deadline)
    end(beside, killed=received is None)
    if not received:
        return 0
    return cache.take_lines(received, beside.section, beside.share)


def end(beside: Beside, killed: bool = True) -> None:
    """The child ended (`killed` by its pid first) and reaped, its pipe closed: also when the
    command fails or is interrupted before it took the child's entries."""
    if beside.fd < 0:
        return
    if killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(beside.pid, signal.SIGKILL)
    os.close(beside.fd)
    beside.fd = -1
    with contextlib.suppress(ChildProcessError):
        os.waitpid(beside.pid, 0)


@contextmanager
def ended(beside: Beside | None) -> Iterator[None]:
    """Around the command's read: whatever it raises, the child is not left behind."""
    try:
        yield
    finally:
        if beside is not None:
            end(beside)


def read_in_order(
    files: list[Path], cache: LoadCache | None, beside: Beside | None, read: Callable[[Path], T]
) -> list[T]:
    """`read` of each file, in their order; the child's entries taken into `cache` before the
    first file of its share (waiting for them at most twice the time the command's own share
    took, plus 2 s), and the child ended whatever `read` raises."""
    found = []
    began = time.monotonic()
    with ended(beside):
        for at, path in enumerate(files):
            if beside is not None and cache is not None and at == beside.first:
                take(beside, cache, deadline=2 * (time.monotonic() - began) + 2)
            found.append(read(path))
    return found


def _fork(
    tail: list[Path], first: int, cache: LoadCache, section: str, read: Callable[[Path], object]
) -> Beside | None:
    """The child started; None when the system refuses a pipe or a process (the command then
    reads alone). Ctrl-C and SIGTERM are held from before the fork until the child has its
    own handlers (their default: the child ends), so that no signal makes the child run on
    in the command's code."""
    try:
        took, given = os.pipe()
    except OSError:
        return None
    held = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: forked beside a thread
            pid = os.fork()
            if pid == 0:  # before anything else runs in the child
                _child(took, given, before, tail, cache, read)  # never returns
    except OSError:
        os.close(took)
        os.close(given)
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    os.close(given)
    return Beside(pid, took, first, frozenset(str(p) for p in tail), section)


def _child(
    took: int,
    given: int,
    mask: set[signal.Signals],
    tail: list[Path],
    cache: LoadCache,
    read: Callable[[Path], object],
) -> NoReturn:
    """Read, send, leave: never returns, runs nothing of the command's (no atexit handler, no
    buffered output flushed)."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(took)
        for path in tail:
            read(path)
        _send(given, cache.changed_lines())
        code = 0
    finally:
        os._exit(code)


def _received(fd: int, deadline: float) -> bytes | None:
    """Everything read from `fd` until its end, or None when the end did not come in time."""
    chunks: list[bytes] = []
    ends = time.monotonic() + deadline
    waiting = select.poll()  # not select(): it refuses a descriptor above 1023
    waiting.register(fd, select.POLLIN)
    while True:
        left = ends - time.monotonic()
        if left <= 0 or not waiting.poll(left * 1000):
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _can_fork() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except OSError:
        return False
