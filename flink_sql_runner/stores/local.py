"""Manifest store in a local folder: the embedded default under --state-dir."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from flink_sql_runner.errors import StoreError
from flink_sql_runner.host.atomic import write_atomically
from flink_sql_runner.model.intents import SideDoc
from flink_sql_runner.model.stored import StoredManifest, utc_now_iso
from flink_sql_runner.stores.base import Reads, StoreConflict, read_each
from flink_sql_runner.stores.local_lock import FileLockBackend

ARCHIVE_DIR = "_archive"
LOCK_FILE = ".lock"


class LocalStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self.location = str(folder)
        #: What this store object last read or wrote of each name: a digest, None if absent.
        self._seen: dict[str, str | None] = {}

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.yaml"

    def list_names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem for p in self.folder.glob("*.yaml") if p.is_file())

    def read(self, name: str) -> StoredManifest | None:
        path = self._path(name)
        data = self._bytes(path)
        self._seen[name] = _digest(data)
        if data is None:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"stored manifest {path}: not UTF-8 text") from None
        return StoredManifest.from_yaml(text, str(path))

    @staticmethod
    def _bytes(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from None

    def _expect_unchanged(self, name: str) -> None:
        """The compare half of a compare-and-swap (the store's lock serialises deployers on one
        machine; this catches one that lost it)."""
        path = self._path(name)
        if _digest(self._bytes(path)) != self._seen.get(name):
            raise StoreConflict(
                f"{path} changed since this deploy read it (another deployer?); not overwriting"
            )

    def read_many(self, names: Iterable[str], max_workers: int) -> Reads:
        return read_each(self, names, max_workers)

    def refresh_index(self) -> bool:
        return False  # reading local files needs no cache

    def write(self, manifest: StoredManifest) -> None:
        self._expect_unchanged(manifest.name)
        text = manifest.to_yaml()
        write_atomically(self._path(manifest.name), text)
        self._seen[manifest.name] = _digest(text.encode("utf-8"))

    def archive(self, name: str) -> str:
        self._expect_unchanged(name)
        source = self._path(name)
        stamp = utc_now_iso().replace(":", "")
        target = self.folder / ARCHIVE_DIR / name / f"{stamp}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, target)
        except OSError as exc:
            raise StoreError(f"cannot archive {source}: {exc.strerror}") from None
        self._seen[name] = None
        return str(target)

    # -- side documents (intents) and the lock, beside the manifests ---------------------------
    def write_side(self, key: str, text: str) -> None:
        write_atomically(self.folder / key, text)

    def read_side_docs(self, folder: str) -> dict[str, SideDoc]:
        """`{file name: document}` of every file in the side folder `folder`, each with its
        age (this machine's clock against the file's modification time)."""
        path = self.folder / folder
        if not path.is_dir():
            return {}
        found = {}
        for item in sorted(path.iterdir()):
            if item.is_file() and not item.name.startswith("."):
                try:
                    text = item.read_text(encoding="utf-8")
                    age = max(0.0, time.time() - item.stat().st_mtime)
                except FileNotFoundError:
                    continue  # deleted since the listing
                except (OSError, UnicodeDecodeError) as exc:
                    raise StoreError(f"cannot read {item}: {exc}") from None
                found[item.name] = SideDoc(text, age)
        return found

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of every file in the side folder `folder`."""
        return {name: doc.text for name, doc in self.read_side_docs(folder).items()}

    def delete_side(self, key: str) -> None:
        try:
            (self.folder / key).unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot delete {self.folder / key}: {exc.strerror}") from None

    def lock_backend(self, name: str | None = None) -> FileLockBackend:
        return FileLockBackend(self.folder / (name or LOCK_FILE))


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()
