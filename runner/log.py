"""The runner's log lines: UTC time, a fixed prefix, on stderr (the driver's log)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(message: str) -> None:
    print(f"{utc_now()} [flink-sql-runner] {message}", file=sys.stderr, flush=True)
