"""One deploy (or stop, or prune) at a time per manifest store: a lease with fencing.

On S3 the lock is an object `<prefix>_lock.json` created with a conditional put
(`If-None-Match: *`) and renewed or taken over with `If-Match: <etag>`; on a local folder it is a
`.lock` file, each create, renewal, take-over and release one compare-and-swap under an `flock`
of the folder (the backends: s3_lock.py, local_lock.py). Either way:

- **Expiry never compares two machines' clocks.** The holder writes how long its lease lasts
  (`ttl`) and renews it every third of that, which changes the lock's version. A waiter takes the
  lock over only after it has itself seen the lock unchanged for `ttl` seconds on its own
  monotonic clock. A holder on the same machine and in the same pid namespace whose process is
  gone (pid and process start time) is taken over at once; a hostname and a pid alone are never
  enough (containers share both).
- **The holder stops before it could be overtaken.** A failed renewal is retried; the lease
  counts as held only until three quarters of `ttl` after the last renewal that succeeded, a
  quarter before any waiter may take over. `check()` raises `LeaseLost` once it is not held, and
  the deployer calls it before each side effect. A step that may outlast that trust (a stop, a
  submit, a health wait) renews the lease first, or is not begun (`renewed_for_step`).
- **The lease is never given up while a worker may still act.** A deploy interrupted twice
  `abandon()`s it: no new side effect, the lock still held and renewed until the calls in flight
  have returned; one that must leave at once leaves it to expire (`keep_until_expiry`).
- **Writes are fenced besides.** Manifest writes are conditional on what the deployer read
  (stores/), so even a holder that lost its lease between `check()` and a write cannot overwrite
  what the next holder recorded.
- **An S3 endpoint that ignores conditional writes is refused**: on acquiring, a second
  `If-None-Match: *` put, a put and a delete with a wrong `If-Match` must each fail.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import EXIT_LOCKED, FsrError, LockTimeout
from flink_sql_runner.host import processes as procs
from flink_sql_runner.host import runtime

#: A holder renews every third of this; a crashed deploy blocks others at most this long.
DEFAULT_TTL = 120.0
#: The lease is trusted for this share of `ttl` after the last renewal that was sent.
VALID_SHARE = 0.75
#: Seconds between attempts when a renewal failed.
RETRY_SECONDS = 5.0
#: Renewals tried before a long step; the step is not begun when none succeeds.
RENEW_TRIES = 2
#: A waiter says who holds the lock when it starts waiting, then every this many seconds.
WAIT_REPORT_SECONDS = 10.0


class LeaseLost(FsrError):
    """This deployer no longer holds the store's lock: it must not act any more."""

    exit_code = EXIT_LOCKED


def this_machine() -> str | None:
    """What makes a pid meaningful: the boot and the pid namespace (Linux); None elsewhere."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot}/{namespace}"


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Holder:
    owner: str  # one acquisition
    host: str
    pid: int
    command: str
    since: str  # UTC, for people only: never compared
    ttl: float
    machine: str | None = None
    started: str | None = None  # the holder process's start marker (procs.start_marker)
    renewals: int = 0

    @classmethod
    def me(cls, command: str, ttl: float) -> Holder:
        pid = os.getpid()
        return cls(
            str(uuid.uuid4()),
            socket.gethostname(),
            pid,
            command,
            _utc(runtime.wall()),
            ttl,
            this_machine(),
            procs.start_marker(pid),
        )

    def renewed(self) -> Holder:
        return replace(self, renewals=self.renewals + 1)

    def to_json(self) -> str:
        # Its fields as they are (plain values): asdict's deep copy of each took three times as
        # long as the JSON itself, at every attempt to take the lock and every renewal.
        return json.dumps({name: getattr(self, name) for name in _HOLDER_FIELDS})

    @classmethod
    def from_json(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
            since = data.get("since") or _utc(float(data["acquired"]))  # version 1 locks
            return cls(
                str(data["owner"]),
                str(data["host"]),
                int(data["pid"]),
                str(data.get("command", "")),
                str(since),
                float(data.get("ttl", DEFAULT_TTL)),
                data.get("machine"),
                data.get("started"),
                int(data.get("renewals", 0)),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def is_dead_here(self) -> bool:
        """Held by a process of this machine and pid namespace that is gone (a killed deploy)."""
        if not self.machine or self.machine != this_machine() or not self.started:
            return False
        return not procs.is_same_process(self.pid, self.started)

    def describe(self) -> str:
        return f"{self.command} by pid {self.pid} on {self.host} since {self.since}"


#: Holder's fields, in the order its JSON has them.
_HOLDER_FIELDS = tuple(f.name for f in fields(Holder))


def waiting_line(holder: Holder | None, location: str, waited: float, left: float) -> str:
    """What a waiting command says about the lock, at once and then every few seconds."""
    who = holder.describe() if holder else "an unreadable lock"
    return (
        f"waiting for the manifest store's lock ({location}): held by {who}; "
        f"waited {waited:.0f} s, giving up in {left:.0f} s (--lock-timeout)"
    )


class LockBackend(Protocol):
    location: str

    def create(self, holder: Holder) -> Any:
        """Create the lock if absent: its version token; None if it exists."""
        ...

    def read(self) -> tuple[Holder | None, Any]:
        """The current holder (None if unreadable) and a version token (None if absent)."""
        ...

    def replace(self, holder: Holder, token: Any) -> Any:
        """Overwrite the lock only if it is still at `token`: the new token; None if it moved
        on (or went)."""
        ...

    def delete(self, token: Any) -> None:
        """Remove the lock if it is still at `token`."""
        ...


class StoreLock:
    """Acquire with a timeout; renew in the background; release on every way out."""

    def __init__(
        self,
        backend: LockBackend,
        command: str,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = runtime.monotonic,
        sleep: Callable[[float], None] = runtime.sleep,
        on_wait: Callable[[Holder | None, float, float], None] | None = None,
    ):
        """`on_wait(holder, waited, left)` is told who holds the lock when this waiter starts
        waiting and every WAIT_REPORT_SECONDS while it waits (seconds on its own clock)."""
        self.backend, self.command, self.ttl = backend, command, ttl
        self.clock, self.sleep, self.on_wait = clock, sleep, on_wait
        self.holder: Holder | None = None
        self._token: Any = None
        self._valid_until = 0.0
        self._lost: str | None = None
        self._abandoned: str | None = None  # no new side effects; the lock still held
        self._keep = False  # left to expire rather than deleted
        self._stop = runtime.event()
        self._thread: runtime.Thread | None = None
        self._renewing = runtime.lock()  # the heartbeat thread and the owner may both renew
        self.took_over: Holder | None = None
        # What this waiter saw of another's lock, and since when (its own clock).
        self._seen: Any = None
        self._seen_at = 0.0

    # -- acquiring ---------------------------------------------------------------------------
    def try_acquire(self) -> Holder | None:
        """Take the lock; None on success, else who holds it."""
        mine = Holder.me(self.command, self.ttl)
        sent = self.clock()
        token = self.backend.create(mine)
        if token is not None:
            self._held(mine, token, sent)
            return None
        current, token = self.backend.read()
        if token is None:
            return self.try_acquire()  # released meanwhile
        now = self.clock()
        if token != self._seen:
            self._seen, self._seen_at = token, now
        ttl = current.ttl if current else DEFAULT_TTL
        if current is None or current.is_dead_here() or now - self._seen_at >= ttl:
            sent = self.clock()
            replaced = self.backend.replace(mine, token)
            if replaced is not None:
                self._held(mine, replaced, sent)
                self.took_over = current
                return None
            current = self.backend.read()[0] or current
        return current

    def _held(self, holder: Holder, token: Any, sent: float) -> None:
        self.holder, self._token = holder, token
        self._valid_until = sent + self.ttl * VALID_SHARE
        self._lost = None

    def acquire(self, timeout: float, poll: float = 1.0, heartbeat: bool = True) -> None:
        began = self.clock()
        deadline = began + timeout
        reported: float | None = None
        while True:
            holder = self.try_acquire()
            if holder is None:
                if heartbeat:
                    self.start_heartbeat()
                return
            left = deadline - self.clock()
            if left <= 0:
                who = holder.describe() if holder else "an unreadable lock"
                raise LockTimeout(
                    f"the manifest store is locked by {who} ({self.backend.location}); "
                    f"waited {timeout:.0f} s"
                )
            now = self.clock()
            if self.on_wait is not None and (
                reported is None or now - reported >= WAIT_REPORT_SECONDS
            ):
                reported = now
                self.on_wait(holder, now - began, left)
            self.sleep(min(poll, max(0.0, left)))

    # -- holding ------------------------------------------------------------------------------
    def renew_once(self) -> bool:
        """One renewal: True if it succeeded. A failure is remembered; the lease is lost once
        another holder replaced the lock, or no renewal succeeded for long enough."""
        with self._renewing:
            return self._renew()

    def _renew(self) -> bool:
        if self.holder is None or self._lost:
            return False
        renewed = self.holder.renewed()
        sent = self.clock()
        try:
            token = self.backend.replace(renewed, self._token)
        except FsrError as exc:
            if self.clock() >= self._valid_until:
                self._lost = f"it could not be renewed ({exc})"
            return False
        if token is None:
            self._lost = "another deploy took it over"
            return False
        self._held(renewed, token, sent)
        return True

    def check(self, evidence: bool = False) -> None:
        """Raise LeaseLost unless this deployer still holds the lock: call before each side
        effect. `evidence`: the write records what already happened (an intent's phase after a
        submit), which an abandoned command still holding the lock may do."""
        if self.holder is None:
            return
        if self._lost is None and self.clock() >= self._valid_until:
            self._lost = f"it was not renewed within {self.ttl * VALID_SHARE:.0f} s"
        if self._lost:
            raise LeaseLost(
                f"stopped acting: this {self.command} lost the manifest store's lock "
                f"({self.backend.location}): {self._lost}"
            )
        if self._abandoned and not evidence:
            raise LeaseLost(f"stopped acting: {self._abandoned}")

    def start_heartbeat(self) -> None:
        def beat() -> None:
            wait = self.ttl / 3
            while not self._stop.wait(wait):
                if self.renew_once():
                    wait = self.ttl / 3
                elif self._lost:
                    return
                else:
                    wait = min(RETRY_SECONDS, self.ttl / 12)

        self._stop.clear()
        self._thread = runtime.thread(beat, "lock-heartbeat")
        self._thread.start()

    def renewed_for_step(self, what: str) -> None:
        """Renew now, before a step that may outlast the lease's trust (a submit, a stop, a
        health wait): LeaseLost, and the step is not begun, when the lease cannot be renewed.
        The heartbeat keeps renewing it while the step runs."""
        if self.holder is None:
            return
        for _ in range(RENEW_TRIES):
            if self.renew_once():
                return
            self.check()
        raise LeaseLost(
            f"not beginning to {what}: this {self.command} could not renew the manifest "
            f"store's lock ({self.backend.location})"
        )

    def abandon(self, why: str) -> None:
        """Begin no other side effect (a deploy interrupted twice): `check()` raises from now
        on, in every thread. The lock stays held, and renewed, until `release()`: the caller
        releases it only once no worker can still act."""
        with self._renewing:
            if self.holder is None or self._lost:
                return
            self._abandoned = why

    @property
    def abandoned(self) -> bool:
        """Whether `abandon()` was called: no new side effect begins."""
        return self._abandoned is not None

    def keep_until_expiry(self) -> None:
        """Leave the lock to expire by itself (a process leaving while a worker may still be
        acting): `release()` stops renewing it but does not delete it."""
        self._keep = True

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        if self.holder is not None:
            if not self._lost and not self._keep:
                try:
                    self.backend.delete(self._token)
                except FsrError:
                    pass  # it expires by itself
            self.holder = None


def telling_lock(backend: LockBackend, command: str, say: Callable[[str], None]) -> StoreLock:
    """The store's lock for a command that changes it: while another holds it, `say` is told
    who and since when, at once and every WAIT_REPORT_SECONDS."""

    def waiting(holder: Holder | None, waited: float, left: float) -> None:
        say(waiting_line(holder, backend.location, waited, left))

    return StoreLock(backend, command, on_wait=waiting)


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
