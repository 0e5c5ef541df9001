"""What every manifest store offers. Implementations: local folder, S3.

No store object remembers what it read. A read returns the manifest with its version token
(`model/stored.py`); a write passes the token back and succeeds only while the store still holds
that version. A listing is a `Snapshot` the caller holds and hands to `read_many`. A caller that
looks again and again (`watch`) may hand back what it read before (`known`): what the new listing
shows unchanged (same stamp: S3's ETag; a file's inode, modification time and size) is given
back unread, and everything else is read, so a look at unchanged jobs costs only the listings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from flink_sql_runner.errors import StoreError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.stored import (
    ABSENT,
    ANY,
    SideDoc,
    Stored,
    StoredManifest,
    Token,
    Unconditional,
)
from flink_sql_runner.stores.lock import LockBackend


class StoreConflict(StoreError):
    """A conditional write found the stored object changed since the caller read it."""


@dataclass(frozen=True)
class Snapshot:
    """One listing of the store, held by whoever listed: the names of the stored manifests
    (archived ones excluded), sorted, and each one's token where the listing tells it (S3's
    ETag; a folder's listing tells none); and each one's stamp, which changes whenever it is
    written (S3's ETag; a file's inode, modification time and size)."""

    names: tuple[str, ...]
    etags: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, str] = field(default_factory=dict)
    #: The manifests a snapshot taken from a store's index came with, each under the ETag it
    #: lists (`ManifestStore.index_snapshot`); None for a listing.
    held: dict[str, tuple[str, StoredManifest]] | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True)
class Reads:
    """Stored manifests by name (None: not stored) with their tokens, and the names that could
    not be read, with why: one unreadable manifest is its job's problem, not every job's.
    `stamps`: the snapshot's stamp each manifest was read under, where it told one."""

    manifests: dict[str, StoredManifest | None]
    problems: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)
    stamps: dict[str, str] = field(default_factory=dict)

    def stored(self, name: str) -> Stored:
        """What was read of `name` (absent if nothing was)."""
        return Stored(self.manifests.get(name), self.tokens.get(name, ABSENT))


class ManifestStore(Protocol):
    """Where deployed manifests live, one `<name>.yaml` per job."""

    #: Where the store is, for messages (e.g. "s3://bucket/prefix/").
    location: str

    def snapshot(self) -> Snapshot:
        """One listing of the stored jobs, for the caller to hold."""
        ...

    def index_snapshot(self) -> Snapshot | None:
        """What the store's index says it holds, in one read instead of a listing: a guess
        for a command that only reads to start from while a listing confirms it
        (gather/store_ahead.py). None when the store keeps no index, or it cannot be read."""
        ...

    def list_names(self) -> list[str]:
        """Names of all stored jobs (archived ones excluded), sorted: `snapshot().names`."""
        ...

    def read_many(
        self,
        names: Iterable[str],
        max_workers: int,
        snapshot: Snapshot | None = None,
        known: Reads | None = None,
    ) -> Reads:
        """`read` for every name, concurrently where it pays; a name that cannot be read is
        reported in `Reads.problems`. With the caller's `snapshot`, a name it does not list is
        absent, a manifest `known` (the caller's earlier reads) holds under the very stamp the
        snapshot lists is given back unread, and a store may serve a manifest from its index
        where the index holds it under the very token the snapshot lists."""
        ...

    def refresh_index(self, known: Reads | None = None) -> bool:
        """Bring a store's index up to date (call it holding the lock); True if it wrote
        anything. It lists afresh; `known` (reads the caller holds) saves reading again what
        is still stored under the token read. Stores without an index return False."""
        ...

    def read(self, name: str) -> Stored:
        """The stored manifest of `name` and its token (None, ABSENT if not stored);
        StoreError when unreadable."""
        ...

    def read_text(self, name: str) -> tuple[str | None, Token]:
        """The stored text of `<name>.yaml` (None if absent) and its token, unparsed (the
        migration reads the original tool's manifests)."""
        ...

    def write(self, manifest: StoredManifest, expected: Token) -> Token:
        """Store atomically (a reader sees the old or the new manifest, never a part), and only
        if the stored object is still at `expected` (ABSENT: there is none); StoreConflict
        otherwise, so a deployer that lost the lock cannot overwrite what another recorded.
        Returns the new token."""
        ...

    def archive(self, name: str, expected: Token) -> str:
        """Move `name` out of the live set, keeping a copy, only while it is at `expected`
        (StoreConflict otherwise); returns where it went. Its token afterwards is ABSENT."""
        ...

    def read_archived(self, name: str) -> list[StoredManifest]:
        """The archived copies of `name`, oldest first ([] when none): where a pruned or
        forgotten job kept its checkpoints. StoreError when one cannot be read."""
        ...

    def write_side(self, key: str, text: str, *, expected: Token | Unconditional = ANY) -> Token:
        """Write a side document (e.g. `_intents/<name>.json`) beside the manifests; with
        `expected`, only while it is at that token (ABSENT: there is none), StoreConflict
        otherwise. Returns the new token."""
        ...

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of the side documents in `folder`: one listing."""
        ...

    def read_side_docs(
        self, folder: str, known: dict[str, SideDoc] | None = None
    ) -> dict[str, SideDoc]:
        """`{file name: document}` of the side documents in `folder` (one listing), each with
        its token, its stamp and its age on the store's own clock. A document `known` (what
        the caller read before) holds under the stamp listed now is given back unread (its
        age as listed); every other one is read."""
        ...

    def delete_side(self, key: str, *, expected: Token | Unconditional = ANY) -> None:
        """Delete a side document; with `expected`, only while it is at that token
        (StoreConflict otherwise). A document already gone is deleted."""
        ...

    def clear_side_folder(self, folder: str) -> None:
        """What is left in `folder` once its documents were deleted: the temporary files of
        writes killed before their rename, and the folder itself. A store without folders
        or temporary files (S3) has nothing to do."""
        ...

    def lock_backend(self, name: str | None = None) -> LockBackend:
        """Where this store's lock lives (see lock.py); `name` another lock beside it (the
        watcher's leadership, `_watch/_leader.json`)."""
        ...

    def clock(self) -> float:
        """Now on the store's own clock, in seconds since the epoch (S3's `Date`; a folder's:
        this machine's), the clock the ages of its documents are measured on: where a
        deployer's own clock is off, times it makes (`now - 2 hours`) still agree with the
        other deployers'. StoreError when it cannot be read."""
        ...


def read_each(store: ManifestStore, names: Iterable[str], max_workers: int) -> Reads:
    """`store.read` for every name, `max_workers` at a time; a StoreError is that name's."""
    names = list(dict.fromkeys(names))

    def one(name: str) -> Stored | StoreError:
        try:
            return store.read(name)
        except StoreError as exc:
            return exc

    if max_workers <= 1 or len(names) <= 1:
        answers = [one(name) for name in names]
    else:
        with runtime.pool(min(max_workers, len(names)), "read") as pool:
            answers = runtime.results_of([pool.submit(one, name) for name in names])
    manifests: dict[str, StoredManifest | None] = {}
    tokens: dict[str, Token] = {}
    problems: dict[str, str] = {}
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, StoreError):
            problems[name] = str(answer)
        else:
            manifests[name], tokens[name] = answer.manifest, answer.token
    return Reads(manifests, problems, tokens)


def reused(names: list[str], snapshot: Snapshot, known: Reads | None) -> Reads:
    """What `known` holds of `names` under the very stamp `snapshot` lists (nothing else)."""
    if known is None:
        return Reads({})
    same = [
        n
        for n in names
        if (stamp := snapshot.stamps.get(n))
        and known.stamps.get(n) == stamp
        and known.manifests.get(n) is not None
        and n in known.tokens
    ]
    return Reads(
        {n: known.manifests[n] for n in same},
        {},
        {n: known.tokens[n] for n in same if n in known.tokens},
        {n: snapshot.stamps[n] for n in same},
    )


def archived_copies(store: ManifestStore, folder: str, name: str) -> list[StoredManifest]:
    """The archived copies of `name` in the side folder `folder/<name>/`, oldest first (their
    names are UTC times)."""
    docs = store.read_side_docs(f"{folder}/{name}")
    where = f"{store.location.rstrip('/')}/{folder}/{name}"
    return [
        StoredManifest.from_yaml(doc.text, f"{where}/{file_name}")
        for file_name, doc in sorted(docs.items())
        if file_name.endswith(".yaml")
    ]


def conflict(where: str, doing: str = "overwriting") -> StoreConflict:
    return StoreConflict(
        f"{where} changed since this deploy read it (another deployer?); not {doing}"
    )
