"""The chaos soak's driver monitor judges a look by when it began."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.chaos import monitor
from tests.chaos.monitor import DriverMonitor, Sample


def test_a_look_begun_before_stop_returned_may_still_see_the_driver(tmp_path: Path) -> None:
    monitor = DriverMonitor(tmp_path)
    begun = time.monotonic()  # a look begins, is paused, and sees the driver after `stop`
    monitor.stopped("orders")
    monitor.check(Sample(begun, {"orders": {7: [(7, 1)]}}))
    assert monitor.violations == []
    monitor.check(Sample(time.monotonic(), {"orders": {7: [(7, 1)]}}))
    assert len(monitor.violations) == 1
    assert "orders runs after `stop orders` returned ok" in monitor.violations[0]


def test_a_run_that_ended_during_the_look_is_not_counted_beside_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc is read one process after another: the old run, read first, ends before the new
    one is read. Both were never up at once."""
    manifest = tmp_path / "orders" / "_control" / "v1.manifest.json"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", str(manifest)],
            start_new_session=True,
        )
        for _ in range(2)
    ]
    old, new = runs
    try:
        read = monitor._read

        def ending_the_old_run(path: str) -> bytes | None:
            if path == f"/proc/{new.pid}/stat" and old.poll() is None:
                old.kill()
                old.wait()
            return read(path)

        monkeypatch.setattr(monitor.os, "listdir", lambda _: [str(old.pid), str(new.pid)])
        monkeypatch.setattr(monitor, "_read", ending_the_old_run)
        look = monitor.sample(tmp_path)
        assert look.drivers == {"orders": {new.pid: [(new.pid, 1)]}}
        # Two runs up at once are still two.
        monkeypatch.setattr(monitor, "_read", read)
        both = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", str(manifest)],
            start_new_session=True,
        )
        runs.append(both)
        monkeypatch.setattr(monitor.os, "listdir", lambda _: [str(new.pid), str(both.pid)])
        assert len(monitor.sample(tmp_path).drivers["orders"]) == 2
    finally:
        for run in runs:
            run.kill()
            run.wait()
