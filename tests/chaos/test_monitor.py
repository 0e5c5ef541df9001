"""The chaos soak's driver monitor judges a look by when it began."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
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


def run(manifest: Path) -> subprocess.Popen:
    """A stand-in driver of its own session whose command line names `manifest`, once it runs."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)",
         str(manifest)],
        start_new_session=True, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stdout.readline() == b"up\n"
    return process


def end(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


MANIFEST = "orders/_control/v1.manifest.json"


def test_a_run_that_ended_before_the_next_began_is_not_two_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc is read one process after another: the old run is read, ends, the new one starts
    and is read in the same look. They were never up at once."""
    runs = [run(tmp_path / MANIFEST)]

    def handover(_: str) -> Iterator[str]:
        yield str(runs[0].pid)
        end(runs[0])
        runs.append(run(tmp_path / MANIFEST))
        yield str(runs[1].pid)

    monkeypatch.setattr(monitor.os, "listdir", handover)
    try:
        look = monitor.sample(tmp_path)
        assert sorted(look.drivers["orders"]) == sorted(r.pid for r in runs)
        assert look.at_once == {"orders": 1}
        watching = DriverMonitor(tmp_path)
        watching.check(look)
        assert watching.violations == [] and watching.most == {"orders": 1}
    finally:
        for process in runs:
            end(process)


def test_two_runs_a_look_shows_up_at_one_instant_are_two_drivers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = run(tmp_path / MANIFEST), run(tmp_path / MANIFEST)
    try:
        # Both up while the look reads them.
        monkeypatch.setattr(monitor.os, "listdir", lambda _: [str(old.pid), str(new.pid)])
        assert monitor.sample(tmp_path).at_once == {"orders": 2}
        # The old one read, then ended before the new one was read: the new one had started
        # before the old one was read, so both were up then.
        read = monitor._read

        def ending_the_old_run(path: str) -> bytes | None:
            if path == f"/proc/{new.pid}/stat" and old.poll() is None:
                end(old)
            return read(path)

        monkeypatch.setattr(monitor, "_read", ending_the_old_run)
        look = monitor.sample(tmp_path)
        assert look.at_once == {"orders": 2}
        watching = DriverMonitor(tmp_path)
        watching.check(look)
        assert (
            len(watching.violations) == 1
            and "2 drivers of orders at once" in (watching.violations[0])
        )
    finally:
        end(old)
        end(new)


def test_a_prepared_run_given_its_go_after_the_old_run_was_read_and_ended_is_not_two_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm handover: the prepared run was up before the look, but it is a driver only from
    its go, given once the old run was gone. The old run read, then ended, then the go: one
    driver after the other, though the prepared run had started first."""
    prepared = tmp_path / "orders" / "_control" / "v1.prepared-ab12.manifest.json"
    old, new = run(tmp_path / MANIFEST), run(prepared)
    go = tmp_path / "orders" / "_control" / "v1.prepared-ab12.go.json"

    def handover(_: str) -> Iterator[str]:
        yield str(old.pid)
        end(old)
        go.parent.mkdir(parents=True, exist_ok=True)
        go.write_text('{"run-id": "r2", "go": true}')
        yield str(new.pid)

    monkeypatch.setattr(monitor.os, "listdir", handover)
    try:
        look = monitor.sample(tmp_path)
        assert sorted(look.drivers["orders"]) == sorted([old.pid, new.pid])
        assert look.at_once == {"orders": 1}
    finally:
        end(old)
        end(new)


def test_a_look_after_stop_that_read_a_driver_is_a_violation_though_it_ended_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [run(tmp_path / MANIFEST), run(tmp_path / MANIFEST)]
    watching = DriverMonitor(tmp_path)
    watching.stopped("orders")
    time.sleep(0.01)  # the look begins after `stop` returned

    def read_then_end(_: str) -> Iterator[str]:
        for process in runs:
            yield str(process.pid)
        for process in runs:
            end(process)

    monkeypatch.setattr(monitor.os, "listdir", read_then_end)
    try:
        watching.check(monitor.sample(tmp_path))
        assert any("orders runs after `stop orders` returned ok" in v for v in watching.violations)
    finally:
        for process in runs:
            end(process)
