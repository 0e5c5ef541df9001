"""Review: the deploy history as `forget` leaves it and as the job page tells it (each test fails
today).

The promises: forget leaves nothing of the history; the history never records (nor the page
says) what was not recorded; "an unreadable record is reported, the others are shown"."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from html import unescape
from pathlib import Path

from flink_sql_runner.act.forget import Places, forget_jobs, survey_jobs
from flink_sql_runner.act.history import HistoryWriter
from flink_sql_runner.model.history import history_key
from flink_sql_runner.model.stored import Meta
from tests.ui.world import PageWorld


def text_of(body: bytes) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body.decode())).split())


def forget(world: PageWorld, name: str):
    places = Places(world.store, world.target, world.deployment.storage, world.state)
    surveys = survey_jobs(places, [name])
    return surveys, list(forget_jobs(places, surveys, stop_timeout=5))


def test_forget_leaves_no_file_of_the_history_behind(tmp_path: Path) -> None:
    """A record's write killed before its rename leaves `.v000001-....json.XXXX.tmp` beside the
    records (host/atomic.py), the job's SQL in it; the local store's listing skips names that
    begin with a dot, so `forget` reports the job forgotten and leaves it (and the folder)."""
    world = PageWorld(tmp_path)
    world.job("alpha", alive=False)
    stored = world.store.read("alpha").manifest
    assert stored is not None
    assert HistoryWriter(world.store).write(stored, "start-clean", "new", lambda _: None) is None
    folder = world.state / "manifests" / "_history" / "alpha"
    (record,) = [p.name for p in folder.iterdir()]
    (folder / f".{record}.k1ll3d.tmp").write_text(json.dumps({"query": stored.job["sql"]}))

    _, [result] = forget(world, "alpha")

    assert result.outcome == "forgotten", result.message
    left = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    assert left == [], left


def test_forget_is_not_refused_by_a_history_record_that_is_not_text(tmp_path: Path) -> None:
    """One undecodable file in `_history/<name>/` makes the survey's listing raise: the job
    cannot be forgotten at all ("nothing was touched") until someone deletes it by hand,
    though forget would delete it anyway."""
    world = PageWorld(tmp_path)
    world.job("alpha", alive=False)
    folder = world.state / "manifests" / "_history" / "alpha"
    folder.mkdir(parents=True)
    (folder / "v000001-20260101T000000.000000Z.json").write_bytes(b"\xff\xfe not text")

    [survey], [result] = forget(world, "alpha")

    assert survey.refused is None, survey.refused
    assert result.outcome == "forgotten", result.message
    assert not folder.exists() or not list(folder.iterdir())


def test_a_start_recorded_though_it_failed_is_said_so_on_the_job_page(tmp_path: Path) -> None:
    """act/job_steps.py records a start that wrote and then failed with a `note` ("..., then
    failed: recorded, the job down"); the page shows the decision's reason only (no note, no
    command): the failed deploy reads as one that went well."""
    world = PageWorld(tmp_path)
    world.job("alpha", alive=False)
    stored = world.store.read("alpha").manifest
    assert stored is not None
    note = "v1 committed batches 0 to 3, then failed: recorded, the job down"
    written = HistoryWriter(world.store).write(
        stored, "start-clean", "new job", lambda _: None, note=note
    )
    assert written is None
    shown = text_of(world.pages().answer("/jobs/alpha").body)
    assert "then failed" in shown, shown[shown.find("Versions and deploys") :][:500]


def test_a_version_that_was_never_recorded_is_not_said_to_have_been_deployed(
    tmp_path: Path,
) -> None:
    """v2's start failed and was rolled back: its number is left behind, nothing recorded it
    (gather/history.py says so). The page says "No record of v2: deployed by a release that
    kept no history, or a deploy stopped before it wrote the record": a deploy of v2 that
    never was."""
    world = PageWorld(tmp_path)
    world.job("alpha", alive=False)
    for version, day in ((1, 1), (3, 3)):
        doc = {"schema-version": 1, "name": "alpha", "query-version": version,
               "action": "start-clean", "reason": "new", "changes": [], "query": "SELECT 1",
               "at": f"2026-01-0{day}T00:00:00.000Z"}  # fmt: skip
        at = datetime(2026, 1, day, tzinfo=timezone.utc)
        world.store.write_side(history_key("alpha", version, at), json.dumps(doc))
    stored = world.store.read("alpha").manifest
    assert stored is not None
    world.store.write(replace(stored, meta=Meta.new(3)), world.store.read("alpha").token)
    shown = text_of(world.pages().answer("/jobs/alpha").body)
    said = re.search(r"No record of v2[^.]*\.", shown)
    assert said is not None, shown[:800]
    assert "deployed" not in said.group(0), said.group(0)
