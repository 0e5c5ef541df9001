"""Review: the fleet and a job's "now" as the pages show them (each test fails today).

The promises: a look at the fleet that fails is said, never shown as no jobs nor as now;
unknown is never not running; the filters show what they say; the page reads what `status`
reads at most once every 2 seconds however many pages are open (cli/ui.py)."""

from __future__ import annotations

import collections
import functools
import json
import re
from datetime import datetime, timedelta, timezone
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import StoreError
from flink_sql_runner.ui.fleet import Fleet
from flink_sql_runner.ui.pages import Pages
from tests.ui.world import PageWorld


def text_of(body: bytes) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body.decode())).split())


@pytest.fixture
def world(tmp_path: Path) -> PageWorld:
    return PageWorld(tmp_path)


def test_status_json_after_a_failed_look_is_not_the_last_look_served_as_now(
    world: PageWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet page says the look failed and shows the last one as not now; /status.json
    answers 200 with the last look's rows, word for word what it answered when the store
    did answer: a script polling it sees a healthy fleet while nothing can be read."""
    world.job("alpha")
    pages = world.pages()
    before = pages.answer("/status.json")
    assert before.status == 200

    def fail() -> None:
        raise StoreError("the store did not answer: 503 Service Unavailable")

    monkeypatch.setattr(world.store, "snapshot", fail)
    assert "The last look failed" in text_of(pages.answer("/").body)
    after = pages.answer("/status.json")
    assert after.status != 200 or "503 Service Unavailable" in after.body.decode(), (
        "the failed look is not said: " + after.body.decode()[:200]
    )


def test_watch_records_that_cannot_be_read_are_said_and_do_not_hide_a_crash_looping_job(
    world: PageWorld,
) -> None:
    """watch/status.py swallows a failure to read the watch records (records = {}): a
    crash-looping job becomes `down` with 0 restarts, leaves the Failing filter, and the page
    says nothing of it."""
    world.job("alpha", alive=False)
    world.watched("alpha", restarts=5, state="crash-looping", failure="boom", looping=True)
    pages = world.pages()
    assert 'data-job="alpha"' in pages.answer("/?show=failing").body.decode()
    listed = world.store.read_side_docs

    def refuse(folder: str, known: Any = None) -> Any:
        if folder.startswith("_watch"):
            raise StoreError("cannot list _watch/: SlowDown (HTTP 503)")
        return listed(folder, known)

    world.store.read_side_docs = refuse  # type: ignore[method-assign]
    failing = pages.answer("/?show=failing").body.decode()
    shown = text_of(failing.encode())
    said = "SlowDown" in shown or "watch records" in shown
    assert said and 'data-job="alpha"' in failing, shown[:600]


def test_a_job_page_never_says_not_running_of_a_run_whose_liveness_is_unknown(
    world: PageWorld,
) -> None:
    """The fleet's Running column says `unknown`; the job page's says `no` (job.html tests
    r.running only)."""
    world.job("alpha")
    world.target.unknown.add("alpha")
    shown = text_of(world.pages().answer("/jobs/alpha").body)
    assert "Health unknown" in shown
    running = re.search(r"Running (\S+)", shown)
    assert running is not None and running.group(1) != "no", shown[:400]


def test_a_heartbeat_stamped_in_the_future_is_not_shown_healthy_as_if_fresh(
    world: PageWorld,
) -> None:
    """A runner's clock an hour ahead: `updated` is in the future, so `now - updated` is
    negative and a heartbeat that stopped is never `stalled` (watch/status.py::_quiet); the
    page shows `healthy` with no word of the clocks (its `_ago` filter knows they can differ:
    "in the future (clocks differ)")."""
    world.job("alpha")
    status_file = Path(world.root) / "alpha" / "_control" / "v1.status.json"
    ahead = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status_file.write_text(json.dumps({**json.loads(status_file.read_text()), "updated": ahead}))
    row = json.loads(world.pages().answer("/status.json").body)["jobs"][0]
    assert not (row["health"] == "healthy" and not row["health-detail"]), row


def counted(world: PageWorld) -> collections.Counter[str]:
    """Every request the page makes of the store, the target and the checkpoint storage."""
    calls: collections.Counter[str] = collections.Counter()

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def call(*args: Any, **kw: Any) -> Any:
            calls[f"{label}.{name}"] += 1
            return original(*args, **kw)

        setattr(owner, name, call)

    for name in ("read", "read_many", "snapshot", "read_side_docs", "read_archived"):
        wrap(world.store, name, "store")
    wrap(world.target, "list_runs", "target")
    for name in ("read_text", "file_names", "dir_names", "tree", "exists", "listing"):
        if hasattr(world.deployment.storage, name):
            wrap(world.deployment.storage, name, "storage")
    return calls


def test_a_job_page_asked_again_and_again_does_not_read_everything_again(
    world: PageWorld,
) -> None:
    """A view of /jobs/NAME makes about 11 requests besides the fleet's look (on S3 more: a GET
    per history record and per claim, two listings of what runs, the intents' listing), none
    of them shared: a page left reloading, or ten tabs, multiply them, where the fleet's are
    shared for 2 s."""
    world.job("alpha")
    world.job("beta")
    calls = counted(world)
    pages = Pages(world.deployment, fleet=Fleet(world.deployment, reuse_for=60.0))
    pages.answer("/jobs/alpha")
    once = sum(calls.values())
    calls.clear()
    for _ in range(10):
        pages.answer("/jobs/alpha")
    assert sum(calls.values()) <= once, dict(calls)


def test_a_sink_with_thousands_of_claims_is_not_read_whole_on_every_view(
    world: PageWorld,
) -> None:
    """Anyone who can write the sink can add claims: each view lists them and GETs every one
    (100,000 files: 100,000 GETs, every view), and shows them all."""
    world.job("alpha")
    claims = world.tmp / "out" / "alpha" / "_flink-sql-runner" / "claims"
    claims.mkdir(parents=True)
    for i in range(3000):
        (claims / f"{i}-{i}.json").write_text('{"job": "alpha", "query-version": 1}')
    calls = counted(world)
    assert world.pages().answer("/jobs/alpha").status == 200
    assert calls["storage.read_text"] < 500, dict(calls)


def test_the_down_filter_does_not_list_a_job_whose_run_is_up(world: PageWorld) -> None:
    """The Down filter, "should run, and no run is up" (ui/fleet.py), lists `restarting`, which
    watch/health.py gives only to a job whose run is up (watch restarted it and waits for it
    to become healthy): a running job shown among the down ones."""
    world.job("alpha")
    status_file = Path(world.root) / "alpha" / "_control" / "v1.status.json"
    status = json.loads(status_file.read_text())
    status_file.write_text(json.dumps({**status, "state": "starting"}))
    world.watched("alpha", restarts=1, state="restarting")
    pages = world.pages()
    row = json.loads(pages.answer("/status.json").body)["jobs"][0]
    assert row["running"] and row["health"] == "restarting", row
    assert 'data-job="alpha"' not in pages.answer("/?show=down").body.decode()
