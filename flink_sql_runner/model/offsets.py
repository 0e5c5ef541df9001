"""Where each Kafka source of a new version starts: what the plan decided (`StartPlan`, one
`SourceStart` per Kafka source table, made in `decide/offsets.py`), the one rule that carries a
source's offsets from a batch of the previous version's checkpoint (`carry_from`, applied by the
plan to the latest batch and again once that version has stopped, to the batch it finished), and
what a run is given (`Starts`, resolved by `resolve_starts`).

The deploy writes the plan into the job's intent record before the old run stops, and the
resolved starts with the phase that submits the new run or gives it its go: every go, the first
or a later one (`decide/steps.py::AwaitRun`), gives the starts its record holds. A carry that is
not exact (two sources on one topic, a topic missing, removed or added, nothing committed) is
refused unless the job or the deploy declared where to start (read/kafka_start.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.read.kafka_start import AGO, KafkaStart

#: How a source starts: at the offsets the previous version finished with; as declared (by the
#: job or the deploy); as its table says (its own `startingOffsets`, or topics the previous
#: version did not read).
CARRIED, DECLARED, AS_TABLE = "carried", "declared", "as-table"
#: Spark's Kafka options that say where a new query starts, by their name in lower case.
START_OPTIONS = {
    name.lower(): name
    for name in (
        "startingOffsets",
        "startingTimestamp",
        "startingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
    )
}
#: Those of them that are a start of their own: the strategy alone only says what a timestamp
#: that finds no offset does, and a new query with it alone starts at `latest`.
OWN_START_OPTIONS = {k: v for k, v in START_OPTIONS.items() if not k.endswith("strategy")}
#: What a carried subscription's partitions not named in its offsets start at: Spark's own rule
#: for partitions it discovers while running (the runner asks the brokers which there are).
NEW_PARTITIONS = "earliest"


class CarryRefused(FsrError):
    """Where a source starts cannot be carried exactly, and the job did not declare it."""


@dataclass(frozen=True)
class SourceStart:
    """Where one Kafka source table of a new version starts, as the plan decided. `reads`:
    `subscribe`, or `assign <json>`; `from_topics`/`from_reads`: what the previous version's
    source it carries from read. `start`: the declared start (for a CARRIED source, a declared
    `carry`: a carry that is not exact is taken, the rest from the earliest offset); `by`: who
    declared it; `why`: why an AS_TABLE source carries nothing."""

    table: str
    kind: str
    topics: tuple[str, ...] = ()
    reads: str = "subscribe"
    from_topics: tuple[str, ...] = ()
    from_reads: str = "subscribe"
    start: KafkaStart | None = None
    by: str = ""
    why: str = ""

    @property
    def assigned(self) -> dict[str, list[int]] | None:
        """An `assign` source's partitions by topic; None for a subscription."""
        if not self.reads.startswith("assign "):
            return None
        doc = json.loads(self.reads.removeprefix("assign "))
        return {str(t): [int(p) for p in parts] for t, parts in doc.items()}

    def describe(self, version: int | None) -> str:
        if self.kind == DECLARED and self.start is not None:
            why = f"; {self.why}" if self.why else ""
            return f"{self.table} {self.start.describe()} ({self.by}{why})"
        if self.kind == AS_TABLE:
            return f"{self.table} {self.why}"
        if self.start is not None:
            return (
                f"{self.table} at v{version}'s committed offsets where it read them, the rest "
                f"from the earliest ({self.by} carry)"
            )
        return f"{self.table} at v{version}'s committed offsets"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"start": self.kind, "topics": list(self.topics), "reads": self.reads}
        if self.kind == CARRIED:
            doc.update({"from-topics": list(self.from_topics), "from-reads": self.from_reads})
        if self.start is not None:
            doc.update({"declared": self.start.to_dict(), "by": self.by})
        if self.why:
            doc["why"] = self.why
        return doc

    @classmethod
    def from_dict(cls, table: str, doc: dict[str, Any]) -> SourceStart:
        if doc.get("start") not in (CARRIED, DECLARED, AS_TABLE):
            raise ValueError(f"{table}: not a start: {doc.get('start')!r}")
        declared = doc.get("declared")
        return cls(
            table,
            doc["start"],
            tuple(str(t) for t in doc.get("topics") or ()),
            str(doc.get("reads") or "subscribe"),
            tuple(str(t) for t in doc.get("from-topics") or ()),
            str(doc.get("from-reads") or "subscribe"),
            KafkaStart.from_dict(declared) if declared is not None else None,
            str(doc.get("by") or ""),
            str(doc.get("why") or ""),
        )


@dataclass(frozen=True)
class StartPlan:
    """Where every Kafka source of a new version starts, as the plan decided: `version` is the
    previous version (None: the job's first version, none carried), `checkpoint` its checkpoint
    location, `sink_folder` its file sink's folder (whose log may hold a batch its checkpoint
    did not commit; None for other sinks)."""

    version: int | None
    checkpoint: str
    sources: tuple[SourceStart, ...]
    sink_folder: str | None = None

    @property
    def carried(self) -> tuple[SourceStart, ...]:
        return tuple(s for s in self.sources if s.kind == CARRIED)

    @property
    def relative(self) -> bool:
        """Whether a source starts at now minus an interval, not yet made a time."""
        return any(s.start is not None and s.start.how == AGO for s in self.sources)

    def at(self, now_ms: int) -> StartPlan:
        """Now minus an interval made a timestamp (`now_ms`: now on the store's clock), once:
        when the plan is made, or (a plan made without that clock) before the old run
        stops."""
        sources = tuple(
            replace(s, start=s.start.at(now_ms)) if s.start is not None else s for s in self.sources
        )
        return replace(self, sources=sources)

    def describe(self) -> str:
        exact = [s.table for s in self.sources if s.kind == CARRIED and s.start is None]
        parts = [f"{', '.join(exact)} at v{self.version}'s committed offsets"] if exact else []
        parts += [
            s.describe(self.version)
            for s in self.sources
            if not (s.kind == CARRIED and s.start is None)
        ]
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from-version": self.version,
            "checkpoint": self.checkpoint,
            "tables": [s.table for s in self.carried],
            "not-carried": {
                s.table: s.describe(self.version).removeprefix(f"{s.table} ")
                for s in self.sources
                if s.kind != CARRIED
            },
            "sources": {s.table: s.to_dict() for s in self.sources},
            "sink-folder": self.sink_folder,
        }

    @classmethod
    def from_dict(cls, doc: Any) -> StartPlan:
        if not isinstance(doc, dict) or not isinstance(doc.get("sources"), dict):
            raise ValueError(f"not a plan of Kafka starts: {doc!r}")
        version = doc["from-version"]
        return cls(
            int(version) if version is not None else None,
            str(doc["checkpoint"]),
            tuple(SourceStart.from_dict(t, s) for t, s in doc["sources"].items()),
            doc.get("sink-folder"),
        )


@dataclass(frozen=True)
class Carried:
    """What a batch of the previous version gives one source: its offsets by topic (partition
    -> next offset), the gaps that make the carry not exact (refused unless `carry` was
    declared), or why nothing can be carried at all (`refusal`)."""

    offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    gaps: tuple[str, ...] = ()
    refusal: str | None = None


def is_kafka_offsets(line: Any) -> bool:
    """Whether a source's offset is a Kafka source's: `{"topic": {"partition": offset}}`."""
    return (
        isinstance(line, dict)
        and bool(line)
        and all(
            isinstance(parts, dict)
            and all(str(p).isdigit() and isinstance(o, int) for p, o in parts.items())
            for parts in line.values()
        )
    )


def _topics(topics: tuple[str, ...] | set[str]) -> str:
    return ", ".join(sorted(topics))


def carry_from(
    source: SourceStart, lines: tuple[Any, ...] | None, version: int, batch: int | None
) -> Carried:
    """What `lines` (the source offsets of the previous `version`'s batch `batch`, one per
    source; None: it has no batch; `batch` None: its latest, as a plan reads it) give
    `source`."""
    if lines is None:
        return Carried(refusal=f"v{version} committed no batch: there is nothing to carry")
    at = f"v{version}'s batch {batch}" if batch is not None else f"v{version}'s latest batch"
    mine = set(source.from_topics)
    matching = [line for line in lines if is_kafka_offsets(line) and set(line) & mine]
    if not matching:
        return Carried(refusal=f"{at} has no offsets for {_topics(mine)}")
    if len(matching) > 1:
        return Carried(
            refusal=f"{at} has {len(matching)} offsets for {_topics(mine)} (two sources read "
            "them, or one is joined with itself): which is whose cannot be told"
        )
    line, wanted = matching[0], set(source.topics)
    gaps = [f"{t} is not in {at}'s offsets" for t in sorted((wanted & mine) - set(line))]
    gaps += [f"{t} is no longer read" for t in sorted(mine - wanted)]
    gaps += [f"{t} was not read by the previous version" for t in sorted(wanted - mine)]
    if source.reads != source.from_reads:
        gaps.append("its partitions are read otherwise (subscribe or assign) than before")
    offsets = {
        topic: dict(sorted(((str(p), o) for p, o in line[topic].items()), key=lambda i: int(i[0])))
        for topic in sorted(wanted)
        if topic in line
    }
    assigned = source.assigned
    if assigned is not None:  # every assigned partition named: those not read from the earliest
        offsets = {
            topic: {str(p): offsets.get(topic, {}).get(str(p), -2) for p in sorted(parts)}
            for topic, parts in sorted(assigned.items())
        }
    return Carried(offsets, tuple(gaps))


@dataclass(frozen=True)
class Starts:
    """What each Kafka source of a run starts at, by table: `{"options": {...}}`, the Kafka
    options it starts with, and for a carried subscription `"new-partitions": "earliest"`
    (partitions its offsets do not name start at their earliest). A table not named starts as
    its table says; `notes` say what was decided, one line per source."""

    by_table: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"tables": self.by_table, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, doc: Any) -> Starts:
        if not isinstance(doc, dict) or not isinstance(doc.get("tables"), dict):
            raise ValueError(f"not the starts of a run: {doc!r}")
        return cls(dict(doc["tables"]), tuple(str(n) for n in doc.get("notes") or ()))


#: A run whose job reads no Kafka source, or one restarted from its checkpoint.
NO_STARTS = Starts()


def resolve_starts(plan: StartPlan, lines: tuple[Any, ...] | None, batch: int | None) -> Starts:
    """Each source's start, from the batch the previous version finished (`lines`, None: it
    finished none): CarryRefused where a carry the plan made is not exact now and the job did
    not declare `carry`."""
    at = f"v{plan.version}'s batch {batch}"
    by_table: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for source in plan.sources:
        if source.kind == AS_TABLE:
            notes.append(f"{source.table} {source.why}")
            continue
        if source.kind == DECLARED and source.start is not None:
            by_table[source.table] = {"options": source.start.options()}
            notes.append(source.describe(plan.version).replace(" from ", " starts from ", 1))
            continue
        assert plan.version is not None  # a first version carries nothing
        carried = carry_from(source, lines, plan.version, batch)
        if carried.refusal is not None or (carried.gaps and source.start is None):
            why = carried.refusal or "; ".join(carried.gaps)
            raise CarryRefused(
                f"{source.table} cannot start where v{plan.version} stopped: {why}; say where "
                "it starts (the job's kafka-start, or deploy --kafka-start)"
            )
        spec: dict[str, Any] = {"options": {"startingOffsets": json.dumps(carried.offsets)}}
        if source.assigned is None:
            spec["new-partitions"] = NEW_PARTITIONS
        by_table[source.table] = spec
        where = " ".join(
            f"{t}[{','.join(f'{p}:{o}' for p, o in parts.items())}]"
            for t, parts in carried.offsets.items()
        )
        notes.append(f"{source.table} starts at {at}: {where}")
        notes += [f"{source.table}: {gap}: from its earliest offset" for gap in carried.gaps]
    return Starts(by_table, tuple(notes))
