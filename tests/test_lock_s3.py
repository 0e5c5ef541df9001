"""The store lock on S3 (moto's server over HTTP): conditional puts make it exclusive."""

from __future__ import annotations

from typing import Any

import pytest

from flink_sql_runner.errors import LockTimeout
from flink_sql_runner.lock import S3LockBackend, StoreLock
from flink_sql_runner.stores.s3 import S3Store
from tests.fakes import FakeClock

pytestmark = pytest.mark.s3


def test_only_one_holder_then_release(s3_client: Any, s3_bucket: str) -> None:
    backend = S3Store(s3_bucket, "jobs/", client=s3_client).lock_backend()
    assert backend.location == f"s3://{s3_bucket}/jobs/_lock.json"
    clock = FakeClock(1_700_000_000.0)
    first = StoreLock(backend, "deploy", ttl=60, clock=clock, sleep=clock.sleep)
    second = StoreLock(backend, "deploy", ttl=60, clock=clock, sleep=clock.sleep)
    first.acquire(timeout=0)
    with pytest.raises(LockTimeout, match=r"locked by deploy by pid \d+ on .* since"):
        second.acquire(timeout=3)
    first.release()
    second.acquire(timeout=0)
    second.release()
    listed = s3_client.list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    assert listed == [], "released locks leave nothing behind"


def test_an_expired_lock_is_taken_over_once(s3_client: Any, s3_bucket: str) -> None:
    backend = S3LockBackend(s3_client, s3_bucket, "_lock.json")
    clock = FakeClock(1_700_000_000.0)
    crashed = StoreLock(backend, "deploy", ttl=30, clock=clock, sleep=clock.sleep)
    assert crashed.try_acquire() is None
    clock.now += 31
    takers = [StoreLock(backend, "deploy", ttl=30, clock=clock, sleep=clock.sleep) for _ in "ab"]
    outcomes = [taker.try_acquire() for taker in takers]
    assert outcomes[0] is None and outcomes[1] is not None, "exactly one takes it over"
    assert takers[0].took_over is not None
    crashed.release()  # the crashed deploy's late release must not free the new holder's lock
    holder, _ = backend.read()
    assert holder is not None and holder.owner == takers[0].holder.owner
