"""What every manifest store offers. Implementations: local folder, S3."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from flink_sql_runner.lock import LockBackend
from flink_sql_runner.stored import StoredManifest


class ManifestStore(Protocol):
    """Where deployed manifests live, one `<name>.yaml` per job."""

    #: Where the store is, for messages (e.g. "s3://bucket/prefix/").
    location: str

    def list_names(self) -> list[str]:
        """Names of all stored jobs (archived ones excluded), sorted."""
        ...

    def read_many(self, names: Iterable[str], max_workers: int) -> dict[str, StoredManifest | None]:
        """`read` for every name, by name in the order given, concurrently where it pays."""
        ...

    def refresh_index(self) -> bool:
        """Bring a store's read cache up to date after a deploy (under the lock); True if it
        wrote anything. Stores without one return False."""
        ...

    def read(self, name: str) -> StoredManifest | None:
        """The stored manifest of `name`, or None; StoreError when unreadable."""
        ...

    def write(self, manifest: StoredManifest) -> None:
        """Store atomically: a reader sees the old or the new manifest, never a part."""
        ...

    def archive(self, name: str) -> str:
        """Move `name` out of the live set, keeping a copy; returns where it went."""
        ...

    def write_side(self, key: str, text: str) -> None:
        """Write a side document (e.g. `_intents/<name>.json`) beside the manifests."""
        ...

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of the side documents in `folder`: one listing."""
        ...

    def delete_side(self, key: str) -> None: ...

    def lock_backend(self) -> LockBackend:
        """Where this store's lock lives (see lock.py)."""
        ...


def read_each(
    store: ManifestStore, names: Iterable[str], max_workers: int
) -> dict[str, StoredManifest | None]:
    """`store.read` for every name, `max_workers` at a time; the first StoreError propagates."""
    names = list(dict.fromkeys(names))
    if max_workers <= 1 or len(names) <= 1:
        return {name: store.read(name) for name in names}
    with ThreadPoolExecutor(max_workers=min(max_workers, len(names))) as pool:
        return dict(zip(names, pool.map(store.read, names), strict=True))
