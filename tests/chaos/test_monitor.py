"""The chaos soak's driver monitor judges a look by when it began."""

from __future__ import annotations

import time
from pathlib import Path

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
