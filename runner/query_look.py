"""What a run's loop reads of its running query, at a small cost per look.

The loop looks five times a second where its stop marker is on a local disk (lifecycle.py).
PySpark's `lastProgress` and `status` have Spark write the whole progress (or status) as JSON
and Python parse it, at every read: three reads a look. Asking as below instead spends 7% less
of a running driver's CPU at a 3 s trigger, 6% at 1 s (trigger_cost.py, side by side; the py4j
threads that answer the loop 0.35 CPU-s in 30 s, from 0.97).

A look here asks the JVM small questions instead: the last progress's batch id and trigger
time, whether a trigger runs, whether the query is active. It asks for the progress's JSON only
when the progress is another one than the one read before. Spark makes a new progress object
for each trigger and each idle report, each with its own trigger time, so (batch id, trigger
time) tells them apart (read in Spark's ProgressReporter, 3.5 to 4.3). The progress it gives is
that JSON parsed: the dict PySpark 3.5's `lastProgress` gives; PySpark 4 builds its own objects
from the same JSON (a UUID for `id`, offsets as JSON text), which the runner does not read.
The dict is shared between the looks that find the same progress: read it, never change it.

The JVM's query comes from `java_query` (spark_internals.py, the one adapter to Spark's
internals). A query without one (Spark Connect, the tests' fakes) is read through PySpark's
public properties: the same answers, at their cost.
"""

from __future__ import annotations

import json
from typing import Any

from .spark_internals import java_query


class QueryLook:
    """The reads of one running query: `active()`, `trigger_active()`, `progress()`."""

    def __init__(self, query: Any):
        self.query = query
        self.jsq = java_query(query)
        #: (batch id, trigger time) of the progress last parsed, and that progress.
        self._key: tuple[Any, Any] | None = None
        self._progress: dict[str, Any] | None = None
        #: How many progresses were read as JSON (for the tests: once per new progress).
        self.parsed = 0

    def active(self) -> bool:
        if self.jsq is None:
            return bool(self.query.isActive)
        return bool(self.jsq.isActive())

    def trigger_active(self) -> bool:
        """Whether a trigger (a micro-batch, or its planning) runs now."""
        if self.jsq is None:
            return bool((self.query.status or {}).get("isTriggerActive"))
        return bool(self.jsq.status().isTriggerActive())

    def progress(self) -> dict[str, Any] | None:
        """Spark's last progress of the query, its JSON parsed; None before the first trigger
        completed. Shared with the next looks while it is the last one: not to be changed."""
        if self.jsq is None:
            found = self.query.lastProgress
            return dict(found) if found is not None else None
        java = self.jsq.lastProgress()
        if java is None:
            return None
        key = (java.batchId(), java.timestamp())
        if key != self._key or self._progress is None:
            self._progress = json.loads(java.json())
            self._key = key
            self.parsed += 1
        return self._progress

    def batch_id(self) -> int | None:
        return (self.progress() or {}).get("batchId")
