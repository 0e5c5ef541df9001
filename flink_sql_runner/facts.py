"""Gathering the facts a plan is made from: stored manifests, what runs, what state exists."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from flink_sql_runner import checkpoints
from flink_sql_runner.intents import IntentLog
from flink_sql_runner.manifest import Job
from flink_sql_runner.plan import CheckpointFacts, JobFacts
from flink_sql_runner.s3uri import is_s3_uri
from flink_sql_runner.stored import StoredManifest
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.targets.base import Target

#: Reads (store, checkpoints) are I/O: many at once.
GATHER_WORKERS = 32


class StateReader(Protocol):
    """Reads checkpoint storage (local folders, S3) without Spark."""

    def inspect(self, location: str) -> checkpoints.CheckpointInfo: ...

    def highest_version(self, job_location: str) -> int: ...


class StorageStateReader:
    """The real reader: local folders and s3:// / s3a:// through one lazily made boto3 client."""

    def __init__(self) -> None:
        self._client = None

    def _s3(self, location: str):  # type: ignore[no-untyped-def]
        if is_s3_uri(location) and self._client is None:
            from flink_sql_runner.stores.s3 import make_s3_client

            self._client = make_s3_client()
        return self._client

    def inspect(self, location: str) -> checkpoints.CheckpointInfo:
        return checkpoints.inspect_checkpoint(location, s3_client=self._s3(location))

    def highest_version(self, job_location: str) -> int:
        return checkpoints.highest_version(job_location, s3_client=self._s3(job_location))


def gather(
    jobs: list[Job],
    store: ManifestStore,
    target: Target,
    state: StateReader,
    include_orphans: bool = True,
    workers: int = GATHER_WORKERS,
) -> list[JobFacts]:
    """Every fact the decision tree needs, read before anything is decided or done."""
    desired = {job.name: job for job in jobs}
    names = set(desired)
    # Three independent questions (the store's listing, its intent records, what runs) are
    # asked at once; answers are taken in this order, so the first failure is the one reported.
    with ThreadPoolExecutor(max_workers=3) as pool:
        listing = pool.submit(store.list_names)
        pending = pool.submit(IntentLog(store).read_all)
        runs = pool.submit(target.list_running)
        listed = listing.result()
        if include_orphans:
            names |= set(listed)
        intents = pending.result()
        running = runs.result()
    if not include_orphans:
        intents = {name: intent for name, intent in intents.items() if name in desired}
    names |= set(intents)
    ordered = sorted(names)
    stored = store.read_many(ordered, workers)

    def one(name: str) -> JobFacts:
        job, previous, intent = desired.get(name), stored.get(name), intents.get(name)
        checkpoint = _checkpoint_facts(name, job, previous, state)
        intent_checkpoint = checkpoint
        if intent is not None and (previous is None or previous.meta != intent.manifest.meta):
            intent_checkpoint = _checkpoint_facts(name, job, intent.manifest, state)
        return JobFacts(
            name=name,
            desired=job,
            stored=previous,
            running=running.get(name),
            checkpoint=checkpoint,
            intent=intent,
            intent_checkpoint=intent_checkpoint if intent is not None else None,
        )

    # Local checkpoint folders answer in microseconds and threads would only queue for the
    # GIL; remote ones (S3) wait on the network, many at once.
    if workers <= 1 or len(ordered) <= 1 or not _any_remote(desired.values(), stored.values()):
        return [one(n) for n in ordered]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, ordered))


def _checkpoint_facts(
    name: str, job: Job | None, stored: StoredManifest | None, state: StateReader
) -> CheckpointFacts | None:
    root = job.checkpoint_root if job else None
    stored_root = str(stored.job.get("checkpoint-root", "")).rstrip("/") if stored else ""
    root = root or stored_root
    if not root:
        return None
    highest = state.highest_version(f"{root}/{name}")
    if stored is None or not stored_root:
        return CheckpointFacts(f"{root}/{name}", False, None, highest)
    location = f"{stored_root}/{name}/{stored.meta.query_version}"
    info = state.inspect(location)
    return CheckpointFacts(location, info.valid, info.last_committed, highest)


def _any_remote(jobs: Iterable[Job], stored: Iterable[StoredManifest | None]) -> bool:
    """Whether any checkpoint root, in git or in the store, is on S3."""
    roots = [job.checkpoint_root for job in jobs]
    roots += [str(manifest.job.get("checkpoint-root", "")) for manifest in stored if manifest]
    return any(is_s3_uri(root) for root in roots)
