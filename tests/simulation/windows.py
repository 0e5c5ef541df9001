"""The stateful job: a windowed count per key over event time, its state in its checkpoint, and
the ledger of the windows it writes (state across a query change, docs/concepts/state.md).

The Kafka job of a stateful seed (scenario.py) counts the topic's records per key in fixed
windows of event time: a record's key is `(partition + offset) % KEYS`, its event time the
moment it was produced (kafka.Topic.event_time, the `timestamp` column). Its watermark is the
greatest event time read less the delay its source table declares; a window is written once,
with its count, in the batch after which the watermark passed its end; a record older than the
watermark is late and dropped, as Spark drops it. The open windows, the greatest event time and
the watermark are its state: the driver writes them at every commit into its checkpoint
(`state/0/0/windows.json`, with the batch they are the state after) and reads them back when a
run starts on a checkpoint, so a copy of the checkpoint folder (act/state_copy.py) carries
them; a run on an empty checkpoint starts with empty state.

The checks (`Windows.commit`, after every commit that writes windows):

- `window-wrong`: a window written with a count other than its truth: the records of its key and
  window that the version's query keeps, of every record produced (or every record from where
  the job began, kafka's `began`: the first window of a job started at `latest` counts from
  there) -- unless the plan that started the version declared its windows partial
  (`decision.state.how == "partial"`, accepted) and the window was open at that change (a
  record before where the version began reading may be in it).
- `window-twice`: a window written twice by one version, or again by another version that did
  not begin at a declared start (a version rebuilt from a declared start writes the windows
  again under its own `__query_version`: allowed; one that continues from the previous
  version's state must not write a window that version wrote).

The probe's answers (`probe`) come from the same query text: the plan's verdicts are those
Spark's analysis would give the scenario's queries (tests/support/stateful.py's shape).

Pure: the world (world.py) drives the state and calls `Windows.commit`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

#: Keys of the topic's records.
KEYS = 3
#: The watermark's delay where the source table declares none.
DELAY = 10.0
#: Where a checkpoint keeps the state (beside Spark's offsets and commits).
STATE_FILE = "state/0/0/windows.json"
#: Where a checkpoint keeps where its Kafka source began (Spark's initial offsets).
SOURCES_FILE = "sources/0/0"

#: (key, window start, window end): a window of a key, in event-time seconds.
Window = tuple[str, int, int]

#: The filters the scenario's queries use, and which keys each keeps.
FILTERS: dict[str, Callable[[str], bool]] = {"key IS NOT NULL": lambda key: True}

_SQL = re.compile(
    r"SELECT key, count\(\*\) AS c FROM src(?: WHERE (?P<filter>.+?))? "
    r"GROUP BY key, window\(timestamp, '(?P<size>\d+) seconds'\)"
)


def sql(size: int, where: str | None = None) -> str:
    """The stateful job's query: a count per key in windows of `size` seconds."""
    filtered = f" WHERE {where}" if where else ""
    return (
        f"SELECT key, count(*) AS c FROM src{filtered} GROUP BY key, "
        f"window(timestamp, '{size} seconds')"
    )


def key_of(partition: int, offset: int) -> str:
    return str((partition + offset) % KEYS)


@dataclass(frozen=True)
class Query:
    """What a stateful query computes: windows of `size` s, its watermark's `delay`, the
    filter before the count."""

    size: int
    delay: float = DELAY
    where: str | None = None

    @classmethod
    def of(cls, text: Any, table: dict[str, Any] | None) -> Query | None:
        """The query of `text` on source `table`; None: not the stateful job's query."""
        found = _SQL.fullmatch(str(text or "").strip())
        if found is None:
            return None
        where = found["filter"]
        if where is not None and where not in FILTERS:
            raise ValueError(f"the simulation knows no filter {where!r}")
        delay = str(((table or {}).get("watermark") or {}).get("delay") or f"{DELAY:g} seconds")
        return cls(int(found["size"]), float(delay.split()[0]), where)

    def keeps(self, key: str) -> bool:
        return self.where is None or FILTERS[self.where](key)

    def describe(self) -> str:
        where = f" where {self.where}" if self.where else ""
        return f"a count per key in {self.size} s windows{where}"

    def has(self, window: Window) -> bool:
        """Whether `window` is one of this query's windows."""
        return window[2] - window[1] == self.size and window[1] % self.size == 0

    def operator(self) -> dict[str, Any]:
        """The query's one stateful operator as the probe answers it (runner/stateful_plan.py's
        shape): the aggregation by key and window, its watermark, the filter before it."""
        before = [self.where] if self.where else []
        return {
            "kind": "aggregation",
            "keys": ["src.key:binary", f"window[{self.size} seconds](src.timestamp)"],
            "key-text": ["key", f"window(timestamp, {self.size} seconds)"],
            "values": ["agg[count(*)]"],
            "value-text": ["count(*)"],
            "value-names": ["c"],
            "watermarks": [["src.timestamp", "timestamp", f"{self.delay:g} seconds"]],
            "before": [f"Filter:{b}" for b in before],
            "before-text": before,
        }


def probe(request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The plan's probe (gather/schemas.py's `ask`) in a world without Spark: no output schema
    is known (as when the probe fails: the run checks its sink), and each query's stateful
    operators are read from its text, as Spark's analysis would: the stateful job's
    aggregation, none for the other jobs' filters."""

    def operators(doc: dict[str, Any]) -> list[dict[str, Any]]:
        manifest = doc.get("manifest") or {}
        tables = manifest.get("tables") or {}
        query = Query.of(manifest.get("sql"), tables.get("src"))
        return [query.operator()] if query is not None else []

    found = {s["key"]: {"operators": operators(s)} for s in request.get("state", [])}
    return {"state": found}, "the simulation runs no Spark"


@dataclass
class State:
    """A run's state: the open windows' counts, the greatest event time read, the watermark."""

    open: dict[Window, int] = field(default_factory=dict)
    seen: float | None = None
    watermark: float | None = None

    def add(self, query: Query, records: Iterator[tuple[str, float]]) -> tuple[list, int]:
        """A batch's records, (key, event time) in order: ([(window, count)] written, in
        order, and the count of late records dropped)."""
        late = 0
        most = self.seen
        for key, at in records:
            most = at if most is None else max(most, at)
            if self.watermark is not None and at < self.watermark:
                late += 1
                continue
            if not query.keeps(key):
                continue
            start = math.floor(at / query.size) * query.size
            window = (key, start, start + query.size)
            self.open[window] = self.open.get(window, 0) + 1
        self.seen = most
        if most is None:
            return [], late
        mark = most - query.delay
        self.watermark = mark if self.watermark is None else max(self.watermark, mark)
        done = sorted(w for w in self.open if w[2] <= self.watermark)
        return [(w, self.open.pop(w)) for w in done], late

    def text(self, batch: int) -> str:
        return json.dumps({
            "batch": batch,
            "seen": self.seen,
            "watermark": self.watermark,
            "open": [[*w, n] for w, n in sorted(self.open.items())],
        })  # fmt: skip

    @classmethod
    def read(cls, text: str | bytes) -> tuple[int, State]:
        """(the batch it is the state after, the state)."""
        doc = json.loads(text)
        found = {(str(k), int(s), int(e)): int(n) for k, s, e, n in doc["open"]}
        return int(doc["batch"]), cls(found, doc["seen"], doc["watermark"])


@dataclass(frozen=True)
class Began:
    """How a version's state began: on an empty checkpoint, its first batch reading from
    `offsets` (`at`: the event time of the last record before them, None: there is none), or
    on a checkpoint copied from an older version (`offsets` None; `before`: how that version's
    state began); `how`: what the plan that started it said of its state (decision.state.how:
    partial, `continued from v1`, rebuilt; "" where it said nothing); `declared`: its Kafka
    start was declared (a re-read or skip)."""

    how: str
    offsets: dict[str, int] | None = None
    at: float | None = None
    declared: bool = False
    before: Began | None = None

    def describe(self, version: int, topic: str) -> str:
        said = f"its plan said: {self.how}" if self.how else "no plan said how"
        if self.offsets is None:
            return f"v{version} began on a checkpoint copied from another version's ({said})"
        where = ", ".join(f"{topic}/{p} {o}" for p, o in sorted(self.offsets.items()))
        return f"v{version} began with empty state at {where} ({said})"

    def partial(self, window: Window) -> bool:
        """Whether `window` may be written partial: the plan declared it (accepted), and the
        window was open at the change (a record before the version's start may be in it)."""
        if self.before is not None and self.before.partial(window):
            return True  # declared so when the state it continues from began
        return self.how == "partial" and self.at is not None and window[1] <= self.at


@dataclass
class Written:
    version: int
    batch: int
    run: str
    count: int

    def describe(self) -> str:
        return f"v{self.version} batch {self.batch} ({self.run}) as {self.count}"


@dataclass
class Windows:
    """One job's windows written: by whom, with which count."""

    job: str
    topic: str
    written: dict[Window, list[Written]] = field(default_factory=dict)

    def commit(
        self,
        version: int,
        batch: int,
        run: str,
        query: Query,
        emitted: list[tuple[Window, int]],
        truth: Callable[[Window], tuple[int, int]],
        began: Began | None,
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """Windows written by a committed batch of `query`; `truth(window)`: its count over
        every record produced, and over every record from where the job began. (violations,
        notes)."""
        found: list[tuple[str, str]] = []
        notes: list[str] = []
        who = f"{self.job} v{version} batch {batch} ({run})"
        how = (
            began.describe(version, self.topic)
            if began is not None
            else f"v{version}'s start unknown"
        )
        partial: list[str] = []
        for window, count in emitted:
            key, start, end = window
            name = f"key {key} window [{start}, {end})"
            before = self.written.setdefault(window, [])
            again = [w for w in before if (w.version, w.batch) != (version, batch)]
            mine = [w for w in again if w.version == version]
            others = [w for w in again if w.version != version]
            if mine or (others and not (began is not None and began.declared)):
                prior = "; ".join(w.describe() for w in (mine or others))
                found.append(("window-twice", f"{who} wrote {name} again ({count}): {prior} had "
                              "written it"))  # fmt: skip
            before.append(Written(version, batch, run, count))
            if not query.has(window):
                found.append(("window-wrong", f"{who} wrote {name} as {count}, which is no window "
                              f"of v{version}'s query ({query.describe()}): {how}"))  # fmt: skip
                continue
            full, since = truth(window)
            if count in (full, since):
                continue
            if began is not None and began.partial(window):
                partial.append(f"{name} {count} of {full}")
                continue
            truer = f" ({since} from where the job began)" if since != full else ""
            found.append(("window-wrong", f"{who} wrote {name} as {count}, not its truth "
                          f"{full}{truer}: {how}"))  # fmt: skip
        if partial:
            notes.append(f"windows: {who} wrote partial, as its plan declared: "
                         + ", ".join(partial))  # fmt: skip
        return found, notes


def truth(
    created: list[float],
    rate: float,
    query: Query,
    window: Window,
    began: dict[str, int] | None = None,
) -> int:
    """The count of `window`: the records of its key and window that `query` keeps, of every
    record produced on partitions created at `created` (`rate` a second each), or of those from
    the offsets `began` (a partition it does not name: from its earliest)."""
    key, start, end = window
    if not query.keeps(key):
        return 0
    count = 0
    for partition, at in enumerate(created):
        offset = max(0, math.floor((start - at) * rate) - 1, (began or {}).get(str(partition), 0))
        while (when := at + offset / rate) < end:
            if when >= start and key_of(partition, offset) == key:
                count += 1
            offset += 1
    return count
