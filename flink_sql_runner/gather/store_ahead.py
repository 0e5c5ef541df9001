"""The store read ahead, for a command that only reads (`plan`, `deploy --dry-run`).

A store's listing comes a page of 1,000 manifests at a time, one page after another: about 2 s
for 10,000 manifests on S3. Begun before the job files are read, it runs beside everything
else: meanwhile the store's index (one object, kept by every deploy) stands in for it while the
facts are gathered and the plan is made and rendered (`Deployment.plan_shown`). The plan, and
what was rendered of it, is kept only if the listing, once in, shows the same manifests under
the same ETags; otherwise it is made again from the listing (a manifest written by hand, by
another tool, or by a deploy since the index). A command that
writes takes its listing under the store's lock instead (`gather` without a snapshot).

The reads run on daemon threads: a command that ends early (invalid input, exit 2) does not
wait for them, and they change nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from flink_sql_runner.host import runtime
from flink_sql_runner.stores.base import ManifestStore, Snapshot

T = TypeVar("T")


class Pending(Generic[T]):
    """`fn()` begun now on a daemon thread; `result()` waits for it, raising what it raised."""

    def __init__(self, fn: Callable[[], T], name: str) -> None:
        self._done = runtime.event()
        self._value: T | None = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                self._error = exc
            finally:
                self._done.set()

        runtime.thread(run, name).start()

    def result(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class StoreAhead:
    """The store's index and its listing, read from now on. `open_store` makes the store, at
    once (its errors, e.g. a profile that does not exist, come out of `first()` and
    `listing()`, so that invalid input is still said first)."""

    def __init__(self, open_store: Callable[[], ManifestStore]) -> None:
        self._listing: Pending[Snapshot] | None = None
        try:
            # Here, before the files are read: making an S3 client is a tenth of a second of
            # CPU, which on a thread beside the loading waited for the GIL for a second,
            # and the listing, the longest read, waited for it.
            store: ManifestStore | BaseException = open_store()
        except Exception as exc:  # noqa: BLE001 - raised where the store is first needed
            store = exc

        def guess() -> Snapshot | None:
            if isinstance(store, BaseException):
                raise store
            self._listing = Pending(store.snapshot, "store-listing")
            return store.index_snapshot()

        self._guess = Pending(guess, "store-index")

    def first(self) -> Snapshot:
        """What to gather from: the index's snapshot, or the listing where the store has no
        usable index."""
        guess = self._guess.result()
        return guess if guess is not None else self.listing()

    def listing(self) -> Snapshot:
        self._guess.result()
        assert self._listing is not None
        return self._listing.result()

    def confirms(self, used: Snapshot) -> bool:
        """Whether the listing shows what `used` did: the same names under the same ETags."""
        listing = self.listing()
        return used is listing or (used.names == listing.names and used.etags == listing.etags)
