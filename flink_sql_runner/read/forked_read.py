"""Both cores for a cold read: a forked child reads the last files beside the command.

Reading a job file costs about 0.7 ms of one core (YAML, the template's merge, the schema, the
query's tables, the checks); 10,000 files the load cache does not know are seven seconds of one
core on a CI runner that has two. Before reading, the command forks: the child reads the files
of the list's tail that the cache does not know (half of them) into its copy of the cache and
sends back the entries it kept; the command reads the head meanwhile, then takes the entries
and reads the tail, each of its files now known: given back as the cache gives back any
unchanged file, its warnings and source checks included. The files are read in their order,
so problems and warnings come in the order one process gives them; a file the child could not
keep (a problem, a secret) is read by the command as before.

The child is only a help: whatever it does, the command reads every file itself. It is not
started on one CPU, off Linux, or for fewer than `MIN_FILES` files the cache does not know.
It sends nothing but cache lines (the cache checks each entry as it checks its file's); if it
fails, sends something broken, or has not ended `deadline` after the command read its own
share (a lock another thread held when it was forked, say), it is killed by its pid and its
share read by the command.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flink_sql_runner.read.load_cache import LoadCache

#: Fewer unknown files than this are read in one process: forking and taking the entries back
#: cost about 50 ms.
MIN_FILES = 400


@dataclass
class Beside:
    """A child reading `share`, the tail of the files from `first` on."""

    pid: int
    fd: int
    first: int
    share: frozenset[str]


def unknown_files(files: list[Path], cache: LoadCache | None) -> list[int]:
    """The positions of the files the cache holds no entry for (edited files are not told
    from unchanged ones here: that takes reading them)."""
    if cache is None:
        return list(range(len(files)))
    return [i for i, path in enumerate(files) if not cache.has_job(str(path))]


def fork_reader(files: list[Path], cache: LoadCache, read: Callable[[Path], None]) -> Beside | None:
    """A child that calls `read` on the tail of `files` holding half of the unknown ones, its
    entries in its copy of `cache` then sent back; None where it would not pay (see above)."""
    unknown = unknown_files(files, cache)
    if len(unknown) < MIN_FILES or not _can_fork():
        return None
    first = unknown[len(unknown) // 2]
    tail = files[first:]
    took, given = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: forked beside a thread
        pid = os.fork()
    if pid == 0:  # the child: read, send, leave without running anything of the parent's
        code = 1
        try:
            os.close(took)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for path in tail:
                read(path)
            _send(given, cache.changed_lines())
            code = 0
        finally:
            os._exit(code)
    os.close(given)
    return Beside(pid, took, first, frozenset(str(p) for p in tail))


def take(beside: Beside, cache: LoadCache, deadline: float) -> int:
    """The child's entries put in `cache` (the entries of its share's files only), waiting
    for it at most `deadline` seconds; the child has ended when this returns (killed if it had
    not). The number of entries taken."""
    received = _received(beside.fd, deadline)
    if received is None:
        os.kill(beside.pid, signal.SIGKILL)
    os.close(beside.fd)
    os.waitpid(beside.pid, 0)
    if not received:
        return 0
    return cache.take_lines(received, beside.share)


def _received(fd: int, deadline: float) -> bytes | None:
    """Everything read from `fd` until its end, or None when the end did not come in time."""
    chunks: list[bytes] = []
    ends = time.monotonic() + deadline
    while True:
        left = ends - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
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
