"""What every manifest store offers. Implementations: local folder, S3."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from flink_sql_runner.errors import StoreError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.lock import LockBackend


class StoreConflict(StoreError):
    """A conditional write found the stored object changed since this deployer read it."""


@dataclass(frozen=True)
class Reads:
    """Stored manifests by name (None: not stored), and the names that could not be read, with
    why: one unreadable manifest is its job's problem, not every job's."""

    manifests: dict[str, StoredManifest | None]
    problems: dict[str, str] = field(default_factory=dict)


class ManifestStore(Protocol):
    """Where deployed manifests live, one `<name>.yaml` per job."""

    #: Where the store is, for messages (e.g. "s3://bucket/prefix/").
    location: str

    def list_names(self) -> list[str]:
        """Names of all stored jobs (archived ones excluded), sorted."""
        ...

    def read_many(self, names: Iterable[str], max_workers: int) -> Reads:
        """`read` for every name, concurrently where it pays; a name that cannot be read is
        reported in `Reads.problems`."""
        ...

    def refresh_index(self) -> bool:
        """Bring a store's read cache up to date after a deploy (under the lock); True if it
        wrote anything. Stores without one return False."""
        ...

    def read(self, name: str) -> StoredManifest | None:
        """The stored manifest of `name`, or None; StoreError when unreadable."""
        ...

    def write(self, manifest: StoredManifest) -> None:
        """Store atomically (a reader sees the old or the new manifest, never a part), and only
        if the stored object is still what this store object last read, listed or wrote for
        that name (absent if it saw none): StoreConflict otherwise, so a deployer that lost the
        lock cannot overwrite what another one recorded."""
        ...

    def archive(self, name: str) -> str:
        """Move `name` out of the live set, keeping a copy; returns where it went. Conditional
        like `write`."""
        ...

    def write_side(self, key: str, text: str) -> None:
        """Write a side document (e.g. `_intents/<name>.json`) beside the manifests."""
        ...

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of the side documents in `folder`: one listing."""
        ...

    def delete_side(self, key: str) -> None: ...

    def lock_backend(self, name: str | None = None) -> LockBackend:
        """Where this store's lock lives (see lock.py); `name` another lock beside it (the
        watcher's leadership, `_watch/_leader.json`)."""
        ...


def read_each(store: ManifestStore, names: Iterable[str], max_workers: int) -> Reads:
    """`store.read` for every name, `max_workers` at a time; a StoreError is that name's."""
    names = list(dict.fromkeys(names))

    def one(name: str) -> StoredManifest | None | StoreError:
        try:
            return store.read(name)
        except StoreError as exc:
            return exc

    if max_workers <= 1 or len(names) <= 1:
        answers = [one(name) for name in names]
    else:
        with runtime.pool(min(max_workers, len(names)), "read") as pool:
            answers = list(pool.map(one, names))
    manifests: dict[str, StoredManifest | None] = {}
    problems: dict[str, str] = {}
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, StoreError):
            problems[name] = str(answer)
        else:
            manifests[name] = answer
    return Reads(manifests, problems)
