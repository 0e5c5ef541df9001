"""Compiled modules kept in the tests' machine cache where the environment forbids bytecode.

An image that sets `PYTHONDONTWRITEBYTECODE=1` (this machine's and CI's do) makes every Python
process compile every module it imports from source that has no `__pycache__` beside it: the
deployer and the runner of an editable install, and every test file, which pytest also rewrites
for its asserts, in each worker. Over the suite that is some 460 processes (the CLI, drivers,
probes, workers), each paying a tenth of a second or more before its first line runs.

`keep()` lets the run's processes write their bytecode again, but into `pycache/` of the tests'
machine cache (tests/support/cache.py), through `PYTHONPYCACHEPREFIX`, never beside the sources:
the checkout stays as the environment asked. The run's first process calls it before it imports
the suite's modules; every process it starts inherits the setting. An environment that writes
bytecode anyway, or that names its own prefix, is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

from tests.support.cache import cache_root

FORBID = "PYTHONDONTWRITEBYTECODE"
PREFIX = "PYTHONPYCACHEPREFIX"


def keep(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Bytecode written under the tests' cache where `environ` forbids writing it: the prefix
    now used, or None when nothing was changed."""
    if not environ.get(FORBID) and not sys.dont_write_bytecode:
        return None
    prefix = environ.get(PREFIX) or sys.pycache_prefix or str(cache_root() / "pycache")
    if prefix == str(cache_root() / "pycache") and os.path.isdir(prefix):
        prune(prefix)  # before any is used: a module since deleted may have come back changed
    environ[PREFIX] = prefix
    environ.pop(FORBID, None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    return prefix


def prune(prefix: str) -> int:
    """The compiled modules under `prefix` whose source is gone, removed (a test's modules in
    its temp folder, a clone since deleted), and the folders they leave empty: the cache holds
    what the sources on this machine compile to, not every run's. The number removed."""
    removed = 0
    root = Path(prefix)
    for folder, _, names in os.walk(root, topdown=False):
        for name in names:
            stem, _, ending = name.partition(".")
            if not ending.endswith(".pyc"):
                continue
            source = Path("/", Path(folder).relative_to(root), f"{stem}.py")
            if not source.exists():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))
                removed += 1
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only if empty
    return removed


def end() -> int:
    """At the run's end, by its first process: the tests' own prefix pruned (`prune`); a prefix
    the environment named is never touched."""
    ours = str(cache_root() / "pycache")
    if sys.pycache_prefix != ours or not os.path.isdir(ours):
        return 0
    return prune(ours)
