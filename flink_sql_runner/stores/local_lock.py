"""The store lock on a local folder: a `.lock` file (lock.py has the lease).

Every create, renewal, take-over and release is one compare-and-swap across processes: it holds
an exclusive `flock` on the lock's folder while it compares the lock with what its caller read
and writes the new one with an atomic rename. A reader needs no flock: it sees the old lock or
the new one, whole. (Before, a renewal renamed the lock away, compared, unlinked and recreated
it: a waiter could create the lock in that gap, and putting a lock back could overwrite one
another process had just made.)
"""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import EXIT_FAILED, EXIT_INVALID, FsrError
from flink_sql_runner.stores.lock import Holder

#: What a folder given on the command line cannot be (the user's input: exit 2).
_NOT_USABLE = (
    errno.ENOTDIR, errno.EEXIST, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG,
    errno.ELOOP,
)  # fmt: skip


class FolderUnusable(FsrError):
    """The lock's folder cannot be made, read or written."""

    exit_code = EXIT_INVALID

    def __init__(self, message: str, exit_code: int = EXIT_INVALID):
        super().__init__(message)
        self.exit_code = exit_code


class FileLockBackend:
    def __init__(self, path: Path):
        self.path = path
        self.location = str(path)

    # -- the contract of LockBackend (stores/lock.py) --------------------------------------
    def create(self, holder: Holder) -> Any:
        """Write the lock if there is none: its token; None if one exists."""
        with self._flocked():
            if self._current() is not None:
                return None
            return self._write(holder)

    def read(self) -> tuple[Holder | None, Any]:
        token = self._unusable_as_error(self._current)
        if token is None:
            return None, None
        return Holder.from_json(token[1]), token

    def replace(self, holder: Holder, token: Any) -> Any:
        """Write the lock only if it is still at `token`: the new token; None if it moved on
        or went."""
        with self._flocked():
            if token is None or self._current() != token:
                return None
            return self._write(holder)

    def delete(self, token: Any) -> None:
        self.removed(token)

    def removed(self, token: Any) -> bool:
        """Remove the lock if it is still at `token`; whether it did."""
        with self._flocked():
            if token is None or self._current() != token:
                return False
            self.path.unlink()
            return True

    # -- under the folder's flock ------------------------------------------------------------------
    def _current(self) -> tuple[int, str] | None:
        """The lock's version token (its mtime and text), None if absent."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                return os.fstat(handle.fileno()).st_mtime_ns, handle.read()
        except FileNotFoundError:
            return None

    def _write(self, holder: Holder) -> tuple[int, str]:
        """The new lock, written whole beside it and renamed into place."""
        text = holder.to_json()
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                mtime = os.fstat(handle.fileno()).st_mtime_ns
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return mtime, text

    @contextmanager
    def _flocked(self) -> Iterator[None]:
        def open_folder() -> int:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)

        fd = self._unusable_as_error(open_folder)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            except OSError as exc:
                raise self._unusable(exc) from None
        finally:
            os.close(fd)  # closing releases the flock

    def _unusable_as_error(self, call: Any) -> Any:
        try:
            return call()
        except OSError as exc:
            raise self._unusable(exc) from None

    def _unusable(self, exc: OSError) -> FolderUnusable:
        folder = self.path.parent
        where = exc.strerror or str(exc)
        if exc.errno in (errno.ENOTDIR, errno.EEXIST):
            blocking = next((p for p in [folder, *folder.parents] if p.is_file()), None)
            if blocking is not None:
                where = f"{blocking} is not a folder"
        code = EXIT_INVALID if exc.errno in _NOT_USABLE else EXIT_FAILED
        return FolderUnusable(
            f"the folder {folder} cannot hold the manifest store's lock: {where}", code
        )
