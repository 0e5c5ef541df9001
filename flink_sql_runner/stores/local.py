"""Manifest store in a local folder: the embedded default under --state-dir.

A file's token is a digest of its bytes. `_index.json` (kept by deploys, as on S3) holds every
manifest parsed, under its token: a read whose file still has that digest takes the parsed
manifest from it instead of parsing the YAML again (the bytes are read and hashed every time).
A conditional write compares and replaces while holding an exclusive `flock` on the store's
folder itself (no extra file in it): deployers on this machine that lost the store's lock still
cannot overwrite each other's writes unseen.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from flink_sql_runner.errors import StoreError
from flink_sql_runner.host import runtime
from flink_sql_runner.host.atomic import write_atomically
from flink_sql_runner.model.stored import (
    ABSENT,
    ANY,
    SideDoc,
    Stored,
    StoredManifest,
    Token,
    Unconditional,
)
from flink_sql_runner.stores.base import (
    Reads,
    Snapshot,
    archived_copies,
    conflict,
    read_each,
    reused,
)
from flink_sql_runner.stores.local_lock import FileLockBackend

ARCHIVE_DIR = "_archive"
LOCK_FILE = ".lock"
INDEX_FILE = "_index.json"
INDEX_SCHEMA_VERSION = 1


class LocalStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self.location = str(folder)

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.yaml"

    def snapshot(self) -> Snapshot:
        """The `*.yaml` files of the folder, each with its stamp (inode, modification time and
        size: an atomic replace always makes a new inode)."""
        if not self.folder.is_dir():
            return Snapshot(())
        stamps = {}
        for entry in _entries(self.folder):
            if entry.name.endswith(".yaml") and not entry.name.startswith("."):
                stamp = _stamp(entry)
                if stamp is not None:
                    stamps[entry.name[: -len(".yaml")]] = stamp
        return Snapshot(tuple(sorted(stamps)), stamps=stamps)

    def index_snapshot(self) -> Snapshot | None:
        """None: a folder's listing is cheap, and its index holds no file stamps."""
        return None

    def list_names(self) -> list[str]:
        return list(self.snapshot().names)

    def read(self, name: str) -> Stored:
        text, token = self.read_text(name)
        if text is None:
            return Stored(None, ABSENT)
        return Stored(StoredManifest.from_yaml(text, str(self._path(name))), token)

    def read_text(self, name: str) -> tuple[str | None, Token]:
        path = self._path(name)
        data = _bytes(path)
        if data is None:
            return None, ABSENT
        try:
            return data.decode("utf-8"), token_of(data)
        except UnicodeDecodeError:
            raise StoreError(f"stored manifest {path}: not UTF-8 text") from None

    def read_many(
        self,
        names: Iterable[str],
        max_workers: int,
        snapshot: Snapshot | None = None,
        known: Reads | None = None,
    ) -> Reads:
        """Every named manifest. With the caller's `snapshot`: a name it does not list is
        absent; one `known` holds under the stamp the listing shows is taken from it unread;
        each other listed file is read in turn (threads would only queue for the parser), its
        manifest taken from the index where the index holds it under the digest of the bytes
        just read."""
        names = list(dict.fromkeys(names))
        if snapshot is None:
            return read_each(self, names, max_workers)
        listed = set(snapshot.names)
        kept = reused(names, snapshot, known)
        wanted = [n for n in names if n in listed and n not in kept.manifests]
        index = self._read_index() if wanted else {}
        manifests: dict[str, StoredManifest | None] = {}
        tokens: dict[str, Token] = {}
        problems: dict[str, str] = {}
        for name in wanted:
            try:
                stored = self._read_indexed(name, index)
            except StoreError as exc:
                problems[name] = str(exc)
                continue
            manifests[name], tokens[name] = stored.manifest, stored.token
        absent = [n for n in names if n not in listed]
        # Read after the listing's stat: a file changed since has another stamp next time.
        stamps = {n: snapshot.stamps[n] for n in tokens if n in snapshot.stamps}
        return Reads(
            {**kept.manifests, **manifests, **dict.fromkeys(absent)},
            problems,
            {**kept.tokens, **tokens, **dict.fromkeys(absent, ABSENT)},
            {**kept.stamps, **stamps},
        )

    def _read_indexed(self, name: str, index: dict[str, tuple[str, StoredManifest]]) -> Stored:
        """`read`, but the manifest from `index` when it holds it under the file's token."""
        text, token = self.read_text(name)
        if text is None:
            return Stored(None, ABSENT)
        if name in index and index[name][0] == token:
            return Stored(index[name][1], token)
        return Stored(StoredManifest.from_yaml(text, str(self._path(name))), token)

    def _read_index(self) -> dict[str, tuple[str, StoredManifest]]:
        """`{name: (token, manifest)}` from the index; none when missing or unusable (it is
        only a cache: every entry is checked against the digest of its file before use)."""
        path = self.folder / INDEX_FILE
        try:
            doc = json.loads(path.read_bytes().decode("utf-8"))
            if doc.get("schema-version") != INDEX_SCHEMA_VERSION:
                return {}
            return {
                str(name): (
                    str(entry["token"]),
                    StoredManifest.from_dict(entry["manifest"], str(path)),
                )
                for name, entry in doc["entries"].items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError, StoreError):
            return {}

    def refresh_index(self, known: Reads | None = None) -> bool:
        """Rewrite the index from the folder: each manifest under the digest of its file,
        parsed again only where neither `known` nor the index holds it under that digest; a
        manifest whose JSON form would read back otherwise is left out (read from its YAML).
        True if written. Call it holding the store's lock."""
        snapshot = self.snapshot()
        index = self._read_index()
        if not snapshot.names and not index:
            return False
        entries: dict[str, tuple[str, StoredManifest]] = {}
        for name in snapshot.names:
            try:
                text, token = self.read_text(name)
                if text is None:
                    continue  # gone since the listing
                manifest = known.manifests.get(name) if known is not None else None
                if manifest is None or known is None or known.tokens.get(name) != token:
                    manifest = self._read_indexed(name, index).manifest
            except StoreError:
                continue  # an unreadable manifest is its job's problem, read each time
            if manifest is not None:
                entries[name] = (token, manifest)
        if entries == index:
            return False
        doc = {}
        for name, (token, manifest) in sorted(entries.items()):
            form = manifest.to_dict()
            if json.loads(json.dumps(form)) == form:
                doc[name] = {"token": token, "manifest": form}
        body = json.dumps({"schema-version": INDEX_SCHEMA_VERSION, "entries": doc})
        with self._guard():
            write_atomically(self.folder / INDEX_FILE, body, mode=0o600)
        return True

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """An exclusive flock on the store's folder for one compare-and-swap."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise StoreError(f"cannot use {self.folder}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _swap(self, path: Path, text: str, expected: Token | Unconditional) -> Token:
        with self._guard():
            if expected is not ANY and token_of(_bytes(path)) != expected:
                raise conflict(str(path))
            write_atomically(path, text)
        return token_of(text.encode("utf-8"))

    def write(self, manifest: StoredManifest, expected: Token) -> Token:
        return self._swap(self._path(manifest.name), manifest.to_yaml(), expected)

    def archive(self, name: str, expected: Token) -> str:
        source = self._path(name)
        # To the microsecond, as on S3: a second archive within a second keeps the first.
        stamp = datetime.fromtimestamp(runtime.wall(), timezone.utc).strftime("%Y-%m-%dT%H%M%S.%fZ")
        target = self.folder / ARCHIVE_DIR / name / f"{stamp}.yaml"
        with self._guard():
            current = token_of(_bytes(source))
            if current != expected:
                raise conflict(str(source), "archiving")
            if current is ABSENT:
                raise StoreError(f"cannot archive {source}: it does not exist")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            except OSError as exc:
                raise StoreError(f"cannot archive {source}: {exc.strerror}") from None
        return str(target)

    # -- side documents (intents) and the lock, beside the manifests ---------------------------
    def read_archived(self, name: str) -> list[StoredManifest]:
        return archived_copies(self, ARCHIVE_DIR, name)

    def write_side(self, key: str, text: str, *, expected: Token | Unconditional = ANY) -> Token:
        return self._swap(self.folder / key, text, expected)

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of every file in the side folder `folder`."""
        return {name: doc.text for name, doc in self.read_side_docs(folder).items()}

    def read_side_docs(
        self, folder: str, known: dict[str, SideDoc] | None = None
    ) -> dict[str, SideDoc]:
        """`{file name: document}` of every file in the side folder `folder`, each with its
        token, its stamp and its age (this machine's clock against the file's modification
        time); a file `known` holds under its stamp now is given back unread."""
        path = self.folder / folder
        if not path.is_dir():
            return {}
        found = {}
        for entry in sorted(_entries(path), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            try:
                if not entry.is_file():
                    continue
                stat = entry.stat()
            except FileNotFoundError:
                continue  # deleted since the listing
            except OSError as exc:
                raise StoreError(f"cannot read {entry.path}: {exc.strerror}") from None
            stamp, age = _stamp_of(stat), max(0.0, runtime.wall() - stat.st_mtime)
            before = (known or {}).get(entry.name)
            if before is not None and before.stamp == stamp:
                found[entry.name] = replace(before, age=age)
                continue
            data = _bytes(Path(entry.path))  # read after the stat: a later change restamps
            if data is None:
                continue
            try:
                found[entry.name] = SideDoc(
                    data.decode("utf-8", errors="replace"), token_of(data), age, stamp
                )
            except UnicodeDecodeError as exc:
                raise StoreError(f"cannot read {entry.path}: {exc}") from None
        return found

    def clock(self) -> float:
        """This machine's clock: the one the folder's document ages are measured on."""
        return runtime.wall()

    def delete_side(self, key: str, *, expected: Token | Unconditional = ANY) -> None:
        path = self.folder / key
        if not self.folder.is_dir():
            return  # no store yet, so no such document
        with self._guard():
            current = token_of(_bytes(path))
            if expected is not ANY and current not in (expected, ABSENT):
                raise conflict(str(path), "deleting")
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot delete {path}: {exc.strerror}") from None

    def clear_side_folder(self, folder: str) -> None:
        path = self.folder / folder
        if not path.is_dir() or path.resolve().parent == self.folder.resolve():
            return  # nothing left; a top side folder (`_history`, `_watch`) is kept
        with self._guard():
            try:
                shutil.rmtree(path)
            except OSError as exc:
                raise StoreError(f"cannot delete {path}: {exc.strerror}") from None

    def lock_backend(self, name: str | None = None) -> FileLockBackend:
        return FileLockBackend(self.folder / (name or LOCK_FILE))


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot list {folder}: {exc.strerror}") from None


def _stamp_of(stat: os.stat_result) -> str:
    """What changes whenever a file is written: its inode (an atomic replace makes a new one),
    modification time and size."""
    return f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}"


def _stamp(entry: os.DirEntry[str]) -> str | None:
    """A regular file's stamp (None: not a file, or gone since the listing)."""
    try:
        return _stamp_of(entry.stat()) if entry.is_file() else None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {entry.path}: {exc.strerror}") from None


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None


def token_of(data: bytes | None) -> Token:
    """A file's token: the SHA-256 of its bytes (ABSENT: no file)."""
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()
