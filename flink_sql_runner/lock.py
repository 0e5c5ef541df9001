"""One deploy (or stop, or prune) at a time per manifest store.

On S3 the lock is an object `<prefix>_lock.json` created with a conditional put
(`If-None-Match: *`), renewed and taken over with `If-Match: <etag>`; on a local folder it is a
`.lock` file created exclusively. Both hold owner, host, pid and an expiry; an expired lock can be
taken over. A heartbeat renews the lock while a long deploy runs.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import LockTimeout, StoreError

#: A holder renews every third of this; a crashed deploy blocks others at most this long.
DEFAULT_TTL = 120.0


@dataclass(frozen=True)
class Holder:
    owner: str
    host: str
    pid: int
    command: str
    acquired: float
    expires: float

    @classmethod
    def me(cls, command: str, ttl: float, now: float) -> Holder:
        return cls(str(uuid.uuid4()), socket.gethostname(), os.getpid(), command, now, now + ttl)

    def renewed(self, ttl: float, now: float) -> Holder:
        return Holder(self.owner, self.host, self.pid, self.command, self.acquired, now + ttl)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
            return cls(
                str(data["owner"]),
                str(data["host"]),
                int(data["pid"]),
                str(data.get("command", "")),
                float(data["acquired"]),
                float(data["expires"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def is_dead_here(self) -> bool:
        """Held by a process of this machine that no longer exists (a killed deploy)."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.acquired, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{self.command} by pid {self.pid} on {self.host} since {since}"


class LockBackend(Protocol):
    location: str

    def create(self, holder: Holder) -> bool:
        """Create the lock if absent; False if it exists."""
        ...

    def read(self) -> tuple[Holder | None, Any]:
        """The current holder (None if absent or unreadable) and a version token."""
        ...

    def replace(self, holder: Holder, token: Any) -> bool:
        """Overwrite the lock only if it is still at `token`; False if it moved on."""
        ...

    def delete(self, token: Any) -> None: ...


class FileLockBackend:
    def __init__(self, path: Path):
        self.path = path
        self.location = str(path)

    def create(self, holder: Holder) -> bool:
        """Write the holder to a temporary file, then hard-link it into place: the lock file
        appears complete or not at all, and only if it did not exist."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(holder.to_json())
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return False
            return True
        finally:
            os.unlink(tmp)

    def read(self) -> tuple[Holder | None, Any]:
        try:
            text = self.path.read_text()
            token = self.path.stat().st_mtime_ns, text
        except FileNotFoundError:
            return None, None
        return Holder.from_json(text), token

    def replace(self, holder: Holder, token: Any) -> bool:
        # Take the old file away atomically; whoever renames it first wins.
        claim = self.path.with_name(f"{self.path.name}.{holder.owner}")
        try:
            os.rename(self.path, claim)
        except FileNotFoundError:
            return False
        if (claim.stat().st_mtime_ns, claim.read_text()) != token:
            os.rename(claim, self.path)  # not the version we judged; put it back
            return False
        claim.unlink()
        return self.create(holder)

    def delete(self, token: Any) -> None:
        _, current = self.read()
        if current == token:
            self.path.unlink(missing_ok=True)


class S3LockBackend:
    def __init__(self, client: Any, bucket: str, key: str):
        self.client, self.bucket, self.key = client, bucket, key
        self.location = f"s3://{bucket}/{key}"

    def _error(self, exc: Exception) -> str:
        return getattr(exc, "response", {}).get("Error", {}).get("Code", "")

    def create(self, holder: Holder) -> bool:
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=holder.to_json(), IfNoneMatch="*"
            )
        except Exception as exc:  # botocore ClientError
            if self._error(exc) in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise StoreError(
                f"cannot create lock {self.location}: {self._error(exc) or exc}"
            ) from None
        return True

    def read(self) -> tuple[Holder | None, Any]:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            if self._error(exc) in ("NoSuchKey", "404"):
                return None, None
            raise StoreError(
                f"cannot read lock {self.location}: {self._error(exc) or exc}"
            ) from None
        return Holder.from_json(answer["Body"].read().decode()), answer["ETag"]

    def replace(self, holder: Holder, token: Any) -> bool:
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=holder.to_json(), IfMatch=token
            )
        except Exception as exc:
            if self._error(exc) in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
                "NoSuchKey",
            ):
                return False
            raise StoreError(
                f"cannot renew lock {self.location}: {self._error(exc) or exc}"
            ) from None
        return True

    def delete(self, token: Any) -> None:
        holder, current = self.read()
        if current == token:
            self.client.delete_object(Bucket=self.bucket, Key=self.key)


class StoreLock:
    """Acquire with a timeout; renew in the background; release on every way out."""

    def __init__(
        self,
        backend: LockBackend,
        command: str,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.backend, self.command, self.ttl = backend, command, ttl
        self.clock, self.sleep = clock, sleep
        self.holder: Holder | None = None
        self._token: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.took_over: Holder | None = None

    def try_acquire(self) -> Holder | None:
        """Take the lock; None on success, else who holds it."""
        now = self.clock()
        mine = Holder.me(self.command, self.ttl, now)
        if self.backend.create(mine):
            self.holder, self._token = mine, self.backend.read()[1]
            return None
        current, token = self.backend.read()
        if current is None and token is None:
            return self.try_acquire()  # released meanwhile
        if current is None or current.expires < now or current.is_dead_here():
            if self.backend.replace(mine, token):
                self.holder, self._token = mine, self.backend.read()[1]
                self.took_over = current
                return None
            current = self.backend.read()[0] or current
        return current

    def acquire(self, timeout: float, poll: float = 1.0) -> None:
        deadline = self.clock() + timeout
        while True:
            holder = self.try_acquire()
            if holder is None:
                self._start_heartbeat()
                return
            if self.clock() >= deadline:
                raise LockTimeout(
                    f"the manifest store is locked by {holder.describe()} "
                    f"({self.backend.location}); waited {timeout:.0f} s"
                )
            self.sleep(min(poll, max(0.0, deadline - self.clock())))

    def _start_heartbeat(self) -> None:
        def beat() -> None:
            while not self._stop.wait(self.ttl / 3):
                assert self.holder is not None
                renewed = self.holder.renewed(self.ttl, self.clock())
                if self.backend.replace(renewed, self._token):
                    self.holder, self._token = renewed, self.backend.read()[1]

        self._thread = threading.Thread(target=beat, name="lock-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        if self.holder is not None:
            self.backend.delete(self._token)
            self.holder = None


@contextmanager
def locked(lock: StoreLock | None, timeout: float) -> Iterator[StoreLock | None]:
    if lock is None:
        yield None
        return
    lock.acquire(timeout)
    try:
        yield lock
    finally:
        lock.release()
