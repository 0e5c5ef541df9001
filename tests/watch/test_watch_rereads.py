"""A look of `watch` reads again only what the store's listings show changed (on fakes and on a
local folder store; tests/watch/test_watch_requests.py counts the same on moto's S3 server)."""

from __future__ import annotations

import os
from pathlib import Path

from flink_sql_runner.model.stored import ABSENT
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.watch.records import WatchLog, WatchRecord
from tests.support.jobs import make_job, stored_of
from tests.support.watch_world import World


def watched(jobs: int = 5) -> World:
    world = World()
    for i in range(jobs):
        world.deployed(make_job(name=f"job{i}", tables={"out": {"format": "parquet",
                       "options": {"path": f"/out/{i}"}}}))  # fmt: skip
    return world


def test_a_second_look_at_unchanged_jobs_reads_nothing_again() -> None:
    world = watched()
    watcher = world.watcher()
    world.look(watcher)  # reads everything, writes each record
    world.look(watcher)  # reads again the records it wrote
    watcher.store.gets.clear()
    world.look(watcher)
    assert watcher.store.gets == []


def test_only_the_changed_record_and_manifest_are_read_again() -> None:
    world = watched()
    watcher = world.watcher()
    world.look(watcher)
    world.look(watcher)
    record = world.record("job3")
    WatchLog(world.store).write(WatchRecord(record.name, record.manifest, restarts=7))
    changed = stored_of(make_job(name="job1", description="changed", tables={"out": {
        "format": "parquet", "options": {"path": "/out/1"}}}))  # fmt: skip
    world.store.put(changed)
    watcher.store.gets.clear()
    world.look(watcher)
    assert sorted(watcher.store.gets) == ["_watch/job3.json", "job1"]
    assert world.record("job3").restarts == 7


def test_a_store_that_cannot_list_is_not_a_store_without_jobs() -> None:
    world = watched(2)
    watcher = world.watcher()
    world.look(watcher)
    world.target.runs.pop("job0")  # down
    watcher.store.fail_reads = True
    world.look(watcher)
    assert world.target.submissions == []
    watcher.store.fail_reads = False
    world.look(watcher)
    assert [s.name for s in world.target.submissions] == ["job0"]


def test_a_vanished_manifest_is_not_served_from_memory() -> None:
    world = watched(2)
    watcher = world.watcher()
    world.look(watcher)
    del world.store.data.manifests["job1"], world.store.data.versions["job1"]
    world.look(watcher)
    assert set(watcher._stored()) == {"job0"}


# -- a local folder store: stamps of inode, modification time and size -----------------------


def test_a_folder_store_reads_again_only_files_whose_stamp_changed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for name in ("a", "b"):
        store.write(stored_of(make_job(name=name)), ABSENT)
    store.write_side("_watch/a.json", '{"n": 1}')
    store.write_side("_watch/b.json", '{"n": 1}')
    first = store.read_many(["a", "b"], 1, snapshot=store.snapshot())
    docs = store.read_side_docs("_watch")

    b = store.read("b")
    manifest = b.manifest
    assert manifest is not None
    manifest.job["description"] = "same size? no matter: a new inode"
    store.write(manifest, b.token)
    store.write_side("_watch/b.json", '{"n": 2}')  # same size, replaced atomically
    again = store.read_many(["a", "b"], 1, snapshot=store.snapshot(), known=first)
    docs_again = store.read_side_docs("_watch", known=docs)
    assert again.manifests["a"] is first.manifests["a"], "unchanged: given back unread"
    assert again.manifests["b"].job["description"].startswith("same size")  # type: ignore[union-attr]
    assert again.tokens["b"] != first.tokens["b"]
    assert docs_again["a.json"].text == '{"n": 1}'
    assert docs_again["b.json"].text == '{"n": 2}'

    os.remove(tmp_path / "_watch" / "a.json")
    assert set(store.read_side_docs("_watch", known=docs_again)) == {"b.json"}
