"""Review: a job page's sections, and the fleet, that do not fail on their own (each test fails
today).

The promises: "a job page's sections each fail on their own" (ui/job.py: "one that cannot be
read says why in its place, and the others are shown"); "an unreadable record is reported, the
others are shown all the same" (gather/history.py); a look at the fleet that fails is said."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from flink_sql_runner.gather.history import read_history
from flink_sql_runner.model.history import history_key
from flink_sql_runner.targets.base import DriverLog
from tests.ui.world import PageWorld

#: JSON nested deeper than Python's recursion limit: json.loads raises RecursionError.
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def world(tmp_path: Path) -> PageWorld:
    world = PageWorld(tmp_path)
    world.job("alpha")
    return world


def record(name: str, version: int, at: str = "2026-01-01T00:00:00.000Z", **more) -> str:
    return json.dumps({"schema-version": 1, "name": name, "query-version": version,
                       "action": "start-clean", "reason": "new", "changes": [],
                       "query": "SELECT 1", "at": at, **more})  # fmt: skip


def job_page(world: PageWorld) -> str:
    answer = world.pages().answer("/jobs/alpha")
    assert answer.status == 200, answer.body[:300]
    page = answer.body.decode()
    assert "SELECT id, ts FROM src WHERE id &gt; 0" in page, "the query section is shown"
    return page


def test_a_log_file_that_cannot_be_read_fails_only_the_log_section(world: PageWorld) -> None:
    """gather/logs.last_lines raises FsrError for an OSError; ui/job.py::_log catches only
    OSError, so the whole page is a 500."""
    folder = world.tmp / "a-folder-not-a-log"
    folder.mkdir()
    world.target.logs.append(DriverLog("fake log of alpha run-alpha", str(folder), "run-alpha", 1))
    assert "Is a directory" in job_page(world)


def test_a_claim_named_with_another_digit_fails_only_the_sinks_section(world: PageWorld) -> None:
    """Anyone who can write the sink can name a claim `²-1.json`: str.isdigit() takes `²`,
    int() refuses it, and the ValueError makes the whole page a 500."""
    claims = world.tmp / "out" / "alpha" / "_flink-sql-runner" / "claims"
    claims.mkdir(parents=True)
    (claims / "\u00b2-1.json").write_text("{}")
    job_page(world)


def test_a_history_record_whose_time_cannot_be_made_utc_is_one_problem(world: PageWorld) -> None:
    """`at` 0001-01-01T00:00:00+01:00 parses, and astimezone(utc) raises OverflowError, which
    neither HistoryEntry.from_dict nor the page catches: a 500."""
    good = history_key("alpha", 1, datetime(2026, 1, 1, tzinfo=timezone.utc))
    world.store.write_side(good, record("alpha", 1))
    forged = history_key("alpha", 1, datetime(2026, 1, 2, tzinfo=timezone.utc))
    world.store.write_side(forged, record("alpha", 1, at="0001-01-01T00:00:00+01:00"))
    page = job_page(world)
    assert "No deploy history recorded yet." not in page


def test_a_history_record_that_is_not_utf8_is_one_problem_beside_the_others(
    world: PageWorld,
) -> None:
    """The local store raises StoreError for the whole folder on one undecodable file: the
    readable records are not shown."""
    world.store.write_side(
        history_key("alpha", 1, datetime(2026, 1, 1, tzinfo=timezone.utc)), record("alpha", 1)
    )
    folder = world.state / "manifests" / "_history" / "alpha"
    (folder / "v000001-20260102T000000.000000Z.json").write_bytes(b"\xff\xfe not text")
    history = read_history(world.store, "alpha")
    assert [e.version for e in history.entries] == [1]
    assert len(history.problems) == 1


def test_a_history_record_nested_too_deep_is_one_problem(world: PageWorld) -> None:
    world.store.write_side(history_key("alpha", 1, datetime(2026, 1, 1, tzinfo=timezone.utc)), DEEP)
    job_page(world)


def test_a_claim_nested_too_deep_fails_only_the_sinks_section(world: PageWorld) -> None:
    claims = world.tmp / "out" / "alpha" / "_flink-sql-runner" / "claims"
    claims.mkdir(parents=True)
    (claims / "1-0.json").write_text(DEEP)
    job_page(world)


def test_a_checkpoint_file_nested_too_deep_fails_only_the_checkpoint_section(
    world: PageWorld,
) -> None:
    """`inspect`'s reader lets the RecursionError of a forged `metadata` out: a 500."""
    checkpoint = Path(world.root) / "alpha" / "1"
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "metadata").write_text(DEEP)
    job_page(world)


@pytest.mark.parametrize("forged", ["nested too deep", "a batch time out of range"])
def test_one_job_s_status_file_does_not_take_the_fleet_down(world: PageWorld, forged: str) -> None:
    """One status file (written where any job's driver can write) makes every look fail with a
    500 text: the fleet, /status.json and every other job's page. gather/inspection.
    read_status_file catches ValueError, not RecursionError; model/json_values.
    json_time_of_text lets `0001-01-01T00:00:00+14:00`'s OverflowError out; ui/fleet.py's look
    catches FsrError only."""
    world.job("beta")
    status_file = Path(world.root) / "alpha" / "_control" / "v1.status.json"
    if forged == "nested too deep":
        status_file.write_text(DEEP)
    else:
        status = json.loads(status_file.read_text())
        status["last-batch"]["timestamp"] = "0001-01-01T00:00:00+14:00"
        status_file.write_text(json.dumps(status))
    pages = world.pages()
    for path in ("/", "/status.json", "/jobs/beta"):
        answer = pages.answer(path)
        assert answer.status == 200, (path, answer.status)
    assert 'data-job="beta"' in pages.answer("/").body.decode()


def test_a_log_of_one_huge_line_does_not_make_a_huge_page(world: PageWorld) -> None:
    """The tail is 200 lines of any length: a driver that logs one 20 MB line (a query plan, a
    row) makes a 20 MB page, read whole into memory on every view (a 1 GB one, 1 GB)."""
    log = world.tmp / "driver.log"
    with log.open("wb") as handle:
        handle.write(b"INFO start\n" + b"x" * (20 * 1024 * 1024) + b"\nINFO end\n")
    world.target.logs.append(DriverLog("fake log of alpha run-alpha", str(log), "run-alpha", 1))
    page = job_page(world)
    assert len(page) < 2 * 1024 * 1024, len(page)
