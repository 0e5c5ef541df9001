"""An opt-in timing log for benchmarks: with FLINK_SQL_RUNNER_TIMING_LOG=FILE set, each step
of a command appends one JSON line `{"event", "at" (Unix time), ...}` to FILE. Off otherwise."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

ENV = "FLINK_SQL_RUNNER_TIMING_LOG"
_lock = threading.Lock()


def mark(event: str, **fields: Any) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps({"event": event, "at": time.time(), **fields}, default=str)
    with _lock, open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")
