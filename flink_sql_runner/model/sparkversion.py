"""Spark versions: what a checkpoint of one may be restored by, and which settings it pins.

A newer Spark restores an older one's checkpoint (Spark keeps its checkpoint and state formats
readable forward); an older Spark is not promised to read a newer one's, so a restart from a
checkpoint onto an older Spark is refused. From 4.1 on, Spark applies a changed
`spark.sql.shuffle.partitions` to a restarted query's stateless shuffles (SPARK-53942); the
state keeps the partitions its checkpoint was created with.
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a Spark version ("4.3.0", "3.5.1-amzn-0"); None if unreadable."""
    found = _VERSION.match(text.strip()) if isinstance(text, str) else None
    if not found:
        return None
    return int(found[1]), int(found[2]), int(found[3] or 0)


def is_older(candidate: str | None, than: str | None) -> bool:
    """Whether `candidate` is a Spark release older than `than` (False when either is unknown)."""
    a, b = version_tuple(candidate), version_tuple(than)
    return a is not None and b is not None and a < b


def stateless_shuffle_partitions_change(spark: str | None) -> bool:
    """Whether this Spark applies a new `spark.sql.shuffle.partitions` on restart (4.1+). An
    unknown Spark counts as one that does not: the setting stays pinned."""
    parsed = version_tuple(spark)
    return parsed is not None and parsed >= (4, 1, 0)
