"""Where the tests keep what they fetch or build once per machine, outside every clone.

`FSR_TEST_CACHE`, else `$XDG_CACHE_HOME/flink-sql-runner-tests`, else
`~/.cache/flink-sql-runner-tests` (beside pip's own cache, `~/.cache/pip`; never `~/.m2`):

- `maven/`: the jars Maven fetches for the Kafka and YARN tests (tests/support/maven.py);
- `venvs/`: the Spark lines' virtualenvs (tests/matrix.py; the Kafka tests use one of them), each
  in a folder named for what it was made from;
- `jvm/`: class-data-sharing archives of Spark's classes (tests/support/jvm.py).
- `hadoop/`: the minicluster's launcher compiled into a jar, and a class-data-sharing archive of
  its classes (tests/support/hadoop_cluster.py).

A second clone, or a second CI run on the same machine, reuses all of it; a fresh machine makes
it anew. Every entry is keyed by what it was made from, so nothing stale is used.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    """The folder of the tests' cache, absolute (not created here)."""
    explicit = os.environ.get("FSR_TEST_CACHE")
    if explicit:
        return Path(explicit).expanduser().absolute()  # children may run elsewhere
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base).expanduser() / "flink-sql-runner-tests").absolute()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made if missing) while the block runs: one process at a
    time makes an entry of the cache; the lock goes with the process, however it ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
