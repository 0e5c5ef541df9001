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

import os
import sys
from collections.abc import MutableMapping

from tests.support.cache import cache_root

FORBID = "PYTHONDONTWRITEBYTECODE"
PREFIX = "PYTHONPYCACHEPREFIX"


def keep(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Bytecode written under the tests' cache where `environ` forbids writing it: the prefix
    now used, or None when nothing was changed."""
    if not environ.get(FORBID) and not sys.dont_write_bytecode:
        return None
    prefix = environ.get(PREFIX) or sys.pycache_prefix or str(cache_root() / "pycache")
    environ[PREFIX] = prefix
    environ.pop(FORBID, None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    return prefix
