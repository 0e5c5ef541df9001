"""The store lock on S3 (moto's server over HTTP): conditional puts make it exclusive, and an
endpoint that ignores them is refused."""

from __future__ import annotations

from typing import Any

import pytest

from flink_sql_runner.errors import LockTimeout, StoreError
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.stores.s3_lock import S3LockBackend
from tests.support.fakes import FakeClock
from tests.support.faultproxy import FaultProxy

pytestmark = pytest.mark.s3


def lease(backend: S3LockBackend, clock: FakeClock, ttl: float = 60) -> StoreLock:
    return StoreLock(backend, "deploy", ttl=ttl, clock=clock, sleep=clock.sleep)


def test_only_one_holder_then_release(s3_client: Any, s3_bucket: str) -> None:
    backend = S3Store(s3_bucket, "jobs/", client=s3_client).lock_backend()
    assert backend.location == f"s3://{s3_bucket}/jobs/_lock.json"
    clock = FakeClock()
    first, second = lease(backend, clock), lease(backend, clock)
    first.acquire(timeout=0, heartbeat=False)
    with pytest.raises(LockTimeout, match=r"locked by deploy by pid \d+ on .* since"):
        second.acquire(timeout=3)
    first.release()
    second.acquire(timeout=0, heartbeat=False)
    second.release()
    listed = s3_client.list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    assert listed == [], "released locks leave nothing behind"


def test_a_lock_left_unchanged_is_taken_over_once(s3_client: Any, s3_bucket: str) -> None:
    backend = S3LockBackend(s3_client, s3_bucket, "_lock.json")
    crashed = lease(backend, FakeClock(), ttl=30)
    assert crashed.try_acquire() is None
    clock = FakeClock()
    takers = [lease(backend, clock, ttl=30) for _ in "ab"]
    assert all(taker.try_acquire() is not None for taker in takers), "both start watching"
    clock.now += 30
    outcomes = [taker.try_acquire() for taker in takers]
    assert outcomes[0] is None and outcomes[1] is not None, "exactly one takes it over"
    assert takers[0].took_over is not None
    crashed.release()  # the crashed deploy's late release must not free the new holder's lock
    holder, _ = backend.read()
    assert holder is not None and holder.owner == takers[0].holder.owner
    assert not crashed.renew_once(), "and its late renewal finds the lock moved on"


def test_renewals_change_the_lock_and_keep_waiters_away(s3_client: Any, s3_bucket: str) -> None:
    backend = S3LockBackend(s3_client, s3_bucket, "_lock.json")
    here, there = FakeClock(), FakeClock(1e6)
    holder, waiter = lease(backend, here, ttl=30), lease(backend, there, ttl=30)
    assert holder.try_acquire() is None
    for _ in range(6):
        here.now += 10
        there.now += 10
        assert holder.renew_once()
        assert waiter.try_acquire() is not None


def test_an_endpoint_that_ignores_conditional_writes_is_refused(
    fault_proxy: FaultProxy, proxied_client: Any, s3_bucket: str
) -> None:
    backend = S3LockBackend(proxied_client, s3_bucket, "jobs/_lock.json")
    fault_proxy.inject("drop-conditions", times=100, method="PUT")
    with pytest.raises(StoreError) as refused:
        lease(backend, FakeClock()).acquire(timeout=0, heartbeat=False)
    assert str(refused.value) == (
        f"the S3 endpoint of s3://{s3_bucket}/jobs/_lock.json ignores conditional writes "
        "(If-None-Match and If-Match), so the store's lock cannot keep two deployers apart; use "
        "an endpoint that supports them (AWS S3, and recent MinIO, Ceph and moto do)"
    )
    assert proxied_client.list_objects_v2(Bucket=s3_bucket).get("Contents", []) == []


def test_an_endpoint_that_ignores_if_match_on_delete_is_refused(
    fault_proxy: FaultProxy, proxied_client: Any, s3_bucket: str
) -> None:
    """Releasing the lock deletes it with `If-Match: <etag>`: where DELETE ignores that, a
    holder that lost its lease would delete the next holder's lock and let a third deployer in.
    Before, the start-up check tried conditional PUTs only and accepted such an endpoint."""
    backend = S3LockBackend(proxied_client, s3_bucket, "jobs/_lock.json")
    fault_proxy.inject("drop-conditions", times=100, method="DELETE")
    with pytest.raises(StoreError) as refused:
        lease(backend, FakeClock()).acquire(timeout=0, heartbeat=False)
    assert str(refused.value) == (
        f"the S3 endpoint of s3://{s3_bucket}/jobs/_lock.json ignores conditional writes "
        "(If-Match on DELETE), so the store's lock cannot keep two deployers apart; use an "
        "endpoint that supports them (AWS S3, and recent MinIO, Ceph and moto do)"
    )
    assert proxied_client.list_objects_v2(Bucket=s3_bucket).get("Contents", []) == []


def test_the_check_of_conditional_deletes_leaves_the_lock_held(
    fault_proxy: FaultProxy, proxied_client: Any, s3_bucket: str
) -> None:
    """On an endpoint that honours them (moto), the refused DELETE of the check leaves the
    lock in place, held by the one that created it."""
    backend = S3LockBackend(proxied_client, s3_bucket, "jobs/_lock.json")
    holder = lease(backend, FakeClock())
    holder.acquire(timeout=0, heartbeat=False)
    deletes = [seen for seen in fault_proxy.seen("DELETE")]
    assert len(deletes) == 1, "the check tried one DELETE with a wrong If-Match"
    current, _ = backend.read()
    assert current == holder.holder
    holder.release()
    assert backend.read() == (None, None)
