"""A command that only reads (`plan`) reads the store ahead: its listing beside everything else,
the store's index standing in for it meanwhile, and the plan made again from the listing when
the two differ (gather/store_ahead.py). On moto's S3 server (real HTTP), requests counted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.errors import StoreError
from flink_sql_runner.gather.store_ahead import StoreAhead
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import ABSENT, StoredManifest
from flink_sql_runner.stores.base import Snapshot
from flink_sql_runner.stores.s3 import S3Store
from tests.support.fakes import FakeTarget
from tests.support.jobs import make_job, stored_of
from tests.support.s3_requests import Requests


def _jobs(count: int) -> list[Any]:
    return [
        make_job(
            name=f"job{i:03d}",
            tables={"out": {"format": "parquet", "options": {"path": f"/out/{i}"}}},
        )
        for i in range(count)
    ]


def _deployment(store: Any, target: FakeTarget, tmp_path: Path) -> Deployment:
    return Deployment(Settings(state_dir=tmp_path, cache=False), store=store, target=target)


def _decided(plan: Any) -> dict[str, tuple[str, int | None]]:
    return {d.name: (d.action.value, d.version) for d in plan.decisions}


@pytest.fixture
def world(s3_client: Any, s3_bucket: str) -> tuple[S3Store, FakeTarget, list[Any]]:
    """30 deployed jobs, each running; the index as deploys keep it."""
    store, target, jobs = S3Store(s3_bucket, "store/", s3_client), FakeTarget(), _jobs(30)
    for job in jobs:
        store.write(stored_of(job), ABSENT)
        target.add_run(Run(job.name, 1, "run-0", "pid 1"))
    assert store.refresh_index()
    return store, target, jobs


@pytest.mark.s3
def test_a_plan_from_an_index_the_listing_confirms_reads_no_manifest(
    world: tuple[S3Store, FakeTarget, list[Any]], s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    store, target, jobs = world
    requests = Requests(s3_client, s3_bucket)
    ahead = _deployment(store, target, tmp_path)
    ahead.read_store_ahead()
    planned = ahead.plan(jobs, read_only=True)
    sent = requests.take()
    listed = _deployment(store, target, tmp_path).plan(jobs)
    assert _decided(planned) == _decided(listed) == {j.name: ("noop", 1) for j in jobs}
    manifests = [(op, key) for op, key in sent if op == "GetObject" and key.endswith(".yaml")]
    assert manifests == [], "every manifest came from the index"
    assert sent.count(("GetObject", "store/_index.json")) == 1
    assert sum(1 for op, _ in sent if op == "ListObjectsV2") >= 1, "the listing confirmed it"


@pytest.mark.s3
def test_what_the_index_does_not_know_is_planned_from_the_listing(
    world: tuple[S3Store, FakeTarget, list[Any]], s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    """Manifests written, added and deleted by hand after the index was written: the plan is
    the one the listing gives, as if there were no index."""
    store, target, jobs = world
    changed = jobs[3]
    edited = StoredManifest(
        {**changed.spec, "sql": "SELECT 2 AS x"}, changed.tables, stored_of(changed).meta
    )
    s3_client.put_object(
        Bucket=s3_bucket, Key=f"store/{changed.name}.yaml", Body=edited.to_yaml().encode()
    )
    extra = make_job(
        name="by-hand", tables={"out": {"format": "parquet", "options": {"path": "/out/x"}}}
    )
    s3_client.put_object(
        Bucket=s3_bucket, Key="store/by-hand.yaml", Body=stored_of(extra).to_yaml().encode()
    )
    s3_client.delete_object(Bucket=s3_bucket, Key=f"store/{jobs[7].name}.yaml")

    ahead = _deployment(store, target, tmp_path)
    ahead.read_store_ahead()
    planned = _decided(ahead.plan(jobs, read_only=True))
    listed = _decided(_deployment(store, target, tmp_path).plan(jobs))
    assert planned == listed
    assert planned[changed.name][0] == "stop-and-start-clean"
    assert planned["by-hand"][0] == "orphaned"
    assert planned[jobs[7].name][0] != "noop", "a running job the store no longer records"
    assert planned[jobs[0].name] == ("noop", 1)


@pytest.mark.s3
def test_a_store_without_an_index_is_listed(s3_client: Any, s3_bucket: str, tmp_path: Path) -> None:
    store, target, jobs = S3Store(s3_bucket, "store/", s3_client), FakeTarget(), _jobs(3)
    for job in jobs:
        store.write(stored_of(job), ABSENT)
    assert store.index_snapshot() is None
    planned = _deployment(store, target, tmp_path).plan(jobs, read_only=True)
    assert {d.name for d in planned.decisions} == {j.name for j in jobs}


class _HeldListing(S3Store):
    """An S3 store whose listing begins only once the test lets it (`release`)."""

    def __init__(self, store: S3Store) -> None:
        super().__init__(store.bucket, store.prefix, store.client)
        self.release = threading.Event()

    def snapshot(self) -> Snapshot:
        assert self.release.wait(30), "the plan was not shown before the listing was needed"
        return super().snapshot()


@pytest.mark.s3
def test_the_plan_is_shown_while_the_listing_is_still_coming_in(
    world: tuple[S3Store, FakeTarget, list[Any]], tmp_path: Path
) -> None:
    """`plan` shows its plan before it waits for the listing (which only begins once the plan
    is shown here), and keeps what it showed when the listing confirms the index."""
    store, target, jobs = world
    held = _HeldListing(store)
    shown: list[dict[str, tuple[str, int | None]]] = []

    def show(plan: Any) -> str:
        shown.append(_decided(plan))
        held.release.set()
        return f"shown {len(shown)}"

    ahead = _deployment(held, target, tmp_path)
    ahead.read_store_ahead()
    plan, text = ahead.plan_shown(jobs, show)
    assert text == "shown 1" and shown == [_decided(plan)]
    assert _decided(plan) == {j.name: ("noop", 1) for j in jobs}


@pytest.mark.s3
def test_a_plan_shown_from_an_index_the_listing_contradicts_is_shown_again(
    world: tuple[S3Store, FakeTarget, list[Any]], s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    """A manifest edited by hand after the index was read, while the first plan was shown:
    the plan and the text returned are the listing's."""
    store, target, jobs = world
    held = _HeldListing(store)
    changed = jobs[5]
    edited = StoredManifest(
        {**changed.spec, "sql": "SELECT 2 AS x"}, changed.tables, stored_of(changed).meta
    )
    shown: list[dict[str, tuple[str, int | None]]] = []

    def show(plan: Any) -> str:
        shown.append(_decided(plan))
        if len(shown) == 1:
            key = f"store/{changed.name}.yaml"
            s3_client.put_object(Bucket=s3_bucket, Key=key, Body=edited.to_yaml().encode())
            held.release.set()
        return f"shown {len(shown)}"

    ahead = _deployment(held, target, tmp_path)
    ahead.read_store_ahead()
    plan, text = ahead.plan_shown(jobs, show)
    assert text == "shown 2"
    assert shown[0][changed.name] == ("noop", 1)
    assert shown[1] == _decided(plan)
    assert _decided(plan)[changed.name][0] == "stop-and-start-clean"


# -- the pieces, without a server ---------------------------------------------------------------


class _Store:
    """A store whose listing waits for the test, and whose index says what it is told."""

    def __init__(self, listing: Snapshot, index: Snapshot | None) -> None:
        self.listing, self.index = listing, index
        self.release = threading.Event()

    def snapshot(self) -> Snapshot:
        assert self.release.wait(10)
        return self.listing

    def index_snapshot(self) -> Snapshot | None:
        return self.index


def test_the_index_is_there_to_start_from_before_the_listing_is_in() -> None:
    snap = Snapshot(("a",), {"a": '"1"'}, {"a": '"1"'})
    store = _Store(snap, Snapshot(("a",), {"a": '"1"'}, {"a": '"1"'}))
    ahead = StoreAhead(lambda: store)  # type: ignore[arg-type, return-value]
    first = ahead.first()  # does not wait for the listing
    assert first is store.index
    store.release.set()
    assert ahead.confirms(first)


@pytest.mark.parametrize(
    "index",
    [
        Snapshot(("a",), {"a": '"2"'}, {"a": '"2"'}),  # rewritten since
        Snapshot(("a", "b"), {"a": '"1"', "b": '"1"'}, {"a": '"1"', "b": '"1"'}),  # deleted
        Snapshot((), {}, {}),  # added
    ],
    ids=["rewritten", "deleted", "added"],
)
def test_an_index_the_listing_does_not_show_is_not_confirmed(index: Snapshot) -> None:
    store = _Store(Snapshot(("a",), {"a": '"1"'}, {"a": '"1"'}), index)
    store.release.set()
    ahead = StoreAhead(lambda: store)  # type: ignore[arg-type, return-value]
    assert not ahead.confirms(ahead.first())


def test_without_an_index_the_listing_is_what_is_gathered_from() -> None:
    store = _Store(Snapshot(("a",)), None)
    store.release.set()
    ahead = StoreAhead(lambda: store)  # type: ignore[arg-type, return-value]
    assert ahead.first() is store.listing
    assert ahead.confirms(ahead.first())


def test_a_store_that_cannot_be_opened_says_so_when_its_answer_is_wanted() -> None:
    def refuse() -> Any:
        raise StoreError("cannot open s3://nowhere/: no such bucket")

    ahead = StoreAhead(refuse)
    with pytest.raises(StoreError, match="no such bucket"):
        ahead.first()
    with pytest.raises(StoreError, match="no such bucket"):
        ahead.listing()


def test_the_store_is_opened_at_once_and_read_on_threads() -> None:
    """Making the store (an S3 client: CPU) is done by the caller, before the files are read;
    on a thread beside the loading it waited for the GIL and the listing waited for it."""
    snap = Snapshot(("a",), {"a": '"1"'}, {"a": '"1"'})
    opened_on: list[threading.Thread] = []
    read_on: list[threading.Thread] = []

    class Watched(_Store):
        def snapshot(self) -> Snapshot:
            read_on.append(threading.current_thread())
            return super().snapshot()

    store = Watched(snap, snap)
    store.release.set()

    def open_store() -> Any:
        opened_on.append(threading.current_thread())
        return store

    ahead = StoreAhead(open_store)
    assert opened_on == [threading.current_thread()], "opened before the constructor returned"
    assert ahead.confirms(ahead.first())
    assert read_on and read_on[0] is not threading.current_thread()


def test_a_failed_listing_fails_the_plan_even_when_the_index_was_read() -> None:
    class Failing(_Store):
        def snapshot(self) -> Snapshot:
            raise StoreError("cannot list s3://b/p/: SlowDown (HTTP 503)")

    index = Snapshot(("a",), {"a": '"1"'}, {"a": '"1"'})
    ahead = StoreAhead(lambda: Failing(index, index))  # type: ignore[arg-type, return-value]
    first = ahead.first()
    with pytest.raises(StoreError, match="503"):
        ahead.confirms(first)


def test_invalid_input_is_exit_2_and_no_word_of_a_store_read_ahead(tmp_path: Path) -> None:
    """The store read ahead (here an endpoint nobody answers on) neither delays nor hides the
    input's error."""
    from tests.support.cli import run_cli

    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "broken.yaml").write_text("name: broken\ntarget-table: out\n")  # no sql
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FLINK_SQL_RUNNER_STATE_DIR": str(tmp_path / "state"),
    }
    result = run_cli("plan", "--path", str(jobs), "--manifest-store", "s3://b/p/", env=env)
    assert result.returncode == 2, result.stderr
    assert "broken.yaml" in result.stderr and "sql" in result.stderr
    assert "127.0.0.1:9" not in result.stderr and "s3://b/p/" not in result.stderr
