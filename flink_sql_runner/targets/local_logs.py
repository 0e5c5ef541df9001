"""The local target's driver logs read back: which runs of a version they show, when each
started, the batch its first trigger reported and how it ended (`inspect` of runs of a release
that kept no run history). The logs are `<state-dir>/logs/<name>/<UTC start>-<run id>.log`,
each headed by the line the target writes as it starts the run (targets/local.py)."""

from __future__ import annotations

import re
from pathlib import Path

from flink_sql_runner.model.checkpoint_report import RunSeen
from flink_sql_runner.model.control import parse_app_name

#: How much of a driver log's head and tail is read for a run's first and last batch.
LOG_BYTES_READ = 64 * 1024
_FIRST = re.compile(r"\[flink-sql-runner\] active: first trigger done \(batch (\d+)\)")
_ENDS = (
    (re.compile(r"\[flink-sql-runner\] stopped gracefully"), "stopped"),
    (re.compile(r"\[flink-sql-runner\] the query finished"), "finished"),
    (re.compile(r"\[flink-sql-runner\] the query failed"), "failed"),
    (re.compile(r"\[flink-sql-runner\] the job (cannot start|failed)"), "failed"),
)
_STAMP = re.compile(r"(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)")


def logged_runs(logs: Path, name: str, version: int) -> list[RunSeen]:
    """The runs of `version` of job `name` the driver logs in `logs` show, oldest first."""
    folder = logs / name
    found = []
    for path in sorted(folder.glob("*.log")) if folder.is_dir() else []:
        head, tail = _ends_of(path)
        first = head.split(maxsplit=3)
        parsed = parse_app_name(first[2]) if len(first) > 2 and first[0] == "====" else None
        if parsed is None or parsed[1] != version:
            continue
        stamp, _, run_id = path.stem.partition("-")
        match = _FIRST.search(head + tail)
        ended = next((how for pattern, how in _ENDS if pattern.search(tail)), None)
        found.append(
            RunSeen(run_id or None, _started(stamp), int(match[1]) if match else None, ended)
        )
    return found


def _ends_of(path: Path) -> tuple[str, str]:
    """The first and the last LOG_BYTES_READ of a log ("" when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(LOG_BYTES_READ)
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - LOG_BYTES_READ))
            tail = handle.read()
    except OSError:
        return "", ""
    return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")


def _started(stamp: str) -> str | None:
    m = _STAMP.match(stamp)
    return f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:{m[5]}:{m[6]}Z" if m else None
