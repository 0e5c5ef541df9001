"""The stores' one contract, on a folder, on S3 (moto's server) and on the fake: a read returns a
version token, a write passes it back and lands only on that version; listings are snapshots the
caller holds; side documents are written and deleted conditionally when asked. No store object
remembers what it read: two objects on one store behave as one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.stored import ABSENT, Stored
from flink_sql_runner.stores.base import ManifestStore, StoreConflict
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.s3 import S3Store
from tests.support.fakes import FakeStore, StoreData
from tests.support.jobs import manifest

KINDS = ["folder", "fake", pytest.param("s3", marks=pytest.mark.s3)]


@pytest.fixture(params=KINDS)
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], ManifestStore]:
    """A new store object on one store each time it is called (another process's view)."""
    if request.param == "folder":
        return lambda: LocalStore(tmp_path / "store")
    if request.param == "fake":
        data = StoreData()
        return lambda: FakeStore(data)
    client, bucket = request.getfixturevalue("s3_client"), request.getfixturevalue("s3_bucket")
    return lambda: S3Store(bucket, "jobs/", client)


def test_a_write_lands_only_on_the_version_it_passes(opened) -> None:
    store = opened()
    assert store.read("job") == Stored(None, ABSENT)
    first = store.write(manifest("job", 1), ABSENT)
    assert first is not ABSENT and store.read("job") == Stored(manifest("job", 1), first)
    with pytest.raises(StoreConflict):
        store.write(manifest("job", 2), ABSENT)  # "new" when it is not
    second = opened().write(manifest("job", 2), first)  # another object, the same store
    assert second != first
    with pytest.raises(StoreConflict):
        store.write(manifest("job", 3), first)  # stale
    with pytest.raises(StoreConflict):
        store.archive("job", first)
    assert opened().read("job") == Stored(manifest("job", 2), second)
    assert store.archive("job", second)
    assert store.read("job") == Stored(None, ABSENT) and store.list_names() == []


def test_every_archived_copy_is_read_back_oldest_first(opened) -> None:
    """What `forget` finds a pruned job's checkpoints by."""
    store = opened()
    assert store.read_archived("job") == []
    store.archive("job", store.write(manifest("job", 1), ABSENT))
    store.archive("job", store.write(manifest("job", 2), ABSENT))
    store.write(manifest("job-2", 1), ABSENT)
    assert opened().read_archived("job") == [manifest("job", 1), manifest("job", 2)]
    assert opened().read_archived("job-2") == []


def test_reads_come_with_their_tokens_and_a_snapshot_is_what_the_caller_holds(opened) -> None:
    store = opened()
    a = store.write(manifest("a", 1), ABSENT)
    snapshot = store.snapshot()
    b = opened().write(manifest("b", 1), ABSENT)  # after the snapshot
    reads = store.read_many(["a", "b"], 2, snapshot=snapshot)
    assert reads.stored("a") == Stored(manifest("a", 1), a)
    assert reads.stored("b") == Stored(None, ABSENT), "not in the caller's snapshot"
    fresh = store.read_many(["a", "b"], 2, snapshot=store.snapshot())
    assert fresh.stored("b") == Stored(manifest("b", 1), b)
    assert store.read_many(["b", "c"], 2).tokens == {"b": b, "c": ABSENT}, "no snapshot: read"


def docs(store) -> dict:
    return {n: (d.text, d.token) for n, d in store.read_side_docs("_intents").items()}


def test_side_documents_are_written_and_deleted_conditionally_when_asked(opened) -> None:
    store = opened()
    first = store.write_side("_intents/job.json", '{"phase": "intended"}', expected=ABSENT)
    assert docs(store) == {"job.json": ('{"phase": "intended"}', first)}
    assert store.read_side_folder("_intents") == {"job.json": '{"phase": "intended"}'}
    with pytest.raises(StoreConflict):
        store.write_side("_intents/job.json", "{}", expected=ABSENT)
    second = opened().write_side("_intents/job.json", '{"phase": "submitting"}', expected=first)
    with pytest.raises(StoreConflict):
        store.write_side("_intents/job.json", '{"phase": "healthy"}', expected=first)
    with pytest.raises(StoreConflict):
        store.delete_side("_intents/job.json", expected=first)
    assert docs(store) == {"job.json": ('{"phase": "submitting"}', second)}
    unconditional = store.write_side("_intents/job.json", "{}")  # today's default
    store.delete_side("_intents/job.json", expected=unconditional)
    assert store.read_side_docs("_intents") == {}
    store.delete_side("_intents/job.json", expected=unconditional)  # already gone: deleted
    store.delete_side("_intents/job.json")
    store.write_side("_intents/other.json", "{}")
    with pytest.raises(StoreConflict):
        store.delete_side("_intents/other.json", expected=ABSENT)  # "absent" when it is not


def test_of_many_writers_of_one_version_exactly_one_wins(opened) -> None:
    """The compare-and-swap is atomic: eight writers that read the same version race."""
    token = opened().write(manifest("job", 1), ABSENT)
    won: list[int] = []
    lost: list[int] = []
    start = threading.Barrier(8)

    def writer(version: int) -> None:
        store = opened()
        start.wait()
        try:
            store.write(manifest("job", version), token)
            won.append(version)
        except StoreConflict:
            lost.append(version)

    threads = [threading.Thread(target=writer, args=(v,)) for v in range(2, 10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == 7
    stored = opened().read("job").manifest
    assert stored is not None and stored.meta.query_version == won[0]


def test_the_fake_can_lose_a_writes_answer_after_storing_it() -> None:
    """As S3 can: the PUT landed, the answer never came back."""
    store = FakeStore()
    store.lose_answers = 1
    with pytest.raises(StoreError, match="connection broke"):
        store.write(manifest("job", 1), ABSENT)
    landed = store.read("job")
    assert landed.manifest == manifest("job", 1), "it was stored all the same"
    with pytest.raises(StoreConflict):
        store.write(manifest("job", 1), ABSENT), "a retry on the old token finds it changed"


@pytest.mark.s3
def test_the_index_is_written_conditionally_and_from_a_fresh_listing(
    s3_client: Any, s3_bucket: str
) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    tokens = {n: store.write(manifest(n, 1), ABSENT) for n in ("a", "b")}
    known = store.read_many(["a", "b"], 2)
    gets: list[str] = []
    s3_client.meta.events.register(
        "before-send.s3.GetObject", lambda request, **_: gets.append(request.url)
    )
    assert store.refresh_index(known)
    assert [url.rsplit("/", 1)[1] for url in gets] == ["_index.json"], "known: nothing read"
    assert not store.refresh_index(), "nothing changed since"
    S3Store(s3_bucket, "jobs/", s3_client).write(manifest("a", 2), tokens["a"])
    gets.clear()
    assert store.refresh_index(known), "what `known` holds of a is stale: read again"
    assert sorted(url.rsplit("/", 1)[1] for url in gets) == ["_index.json", "a.yaml"]
    reader = S3Store(s3_bucket, "jobs/", s3_client)
    snapshot = reader.snapshot()
    gets.clear()
    assert reader.read_many(["a", "b"], 2, snapshot=snapshot).manifests == {
        "a": manifest("a", 2),
        "b": manifest("b", 1),
    }
    assert [url.rsplit("/", 1)[1] for url in gets] == ["_index.json"]
