"""Compiled modules kept for the run where the environment forbids bytecode.

An image that sets `PYTHONDONTWRITEBYTECODE=1` (this machine's and CI's do) makes every Python
process compile every module it imports from source that has no `__pycache__` beside it: the
deployer and the runner of an editable install, and every test file, which pytest also rewrites
for its asserts, in each worker. Over the suite that is some 460 processes (the CLI, drivers,
probes, workers), each paying a tenth of a second or more before its first line runs.

`keep()` lets the run's processes write their bytecode again, into a folder of this run only
(`PYTHONPYCACHEPREFIX`), never beside the sources: the checkout stays as the environment asked.
The run's first process calls it before it imports the suite's modules and removes the folder
at its end (`end()`); every process it starts inherits the setting. The folder lives no longer
than the run: Python checks a compiled module against its source's size and modification time
in whole seconds only, so a cache kept across runs could hand a later run the code of a source
since rewritten at the same path, size and second (as `git archive` and `cp -p` keep times). An
environment that writes bytecode anyway, or names its own prefix, is left as it is.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import MutableMapping

FORBID = "PYTHONDONTWRITEBYTECODE"
PREFIX = "PYTHONPYCACHEPREFIX"
#: The pid of the process that made the folder: only it removes it (not a worker, not a pytest
#: a test runs, which inherit the environment).
OWNER = "FSR_TEST_PYCACHE_OWNER"


def keep(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Bytecode written into a folder of this run where `environ` forbids writing it: the
    folder, or None when nothing was changed."""
    if not environ.get(FORBID) and not sys.dont_write_bytecode:
        return None
    if environ.get(PREFIX) or sys.pycache_prefix:
        return None  # a prefix the environment named: its own choice
    prefix = tempfile.mkdtemp(prefix="fsr-tests-pycache-")
    environ[PREFIX] = prefix
    environ[OWNER] = str(os.getpid())
    environ.pop(FORBID, None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    return prefix


def end(environ: MutableMapping[str, str] = os.environ) -> None:
    """The run's folder removed, by the process that made it."""
    if environ.get(OWNER) != str(os.getpid()):
        return
    prefix = environ.pop(PREFIX, "")
    del environ[OWNER]
    sys.dont_write_bytecode = True  # what this process imports after would make it again
    if prefix:
        shutil.rmtree(prefix, ignore_errors=True)
