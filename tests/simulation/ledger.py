"""The ledger of records (issue 52): what each committed batch of each job read and wrote, so
that a record written twice or never is seen wherever it happens (a new version, a restart, a
rollback, an interrupted command's run settled later), not only at the version boundary the store
records (`kafka.boundary_violation`).

Per Kafka record (topic, partition, offset): the versions, their runs and batches that wrote it
into the job's sink (a batch's rows are written with its commit: the world's sinks have no log of
their own). Per (job, version, batch), for every job: the runs that committed it and the sink.

- `ledger-repeat`: a record written by two versions, or twice by one version.
- `ledger-gap`: a batch begins a partition past the furthest record the job had read there, so
  the records between were never written; a partition the job's first committed batch did not
  name (the topic gained it later) is the job's from its earliest offset (Spark's rule for
  partitions found while running, and the runner's for those a carried start does not name).
- Both unless the version that re-read or skipped them began at a declared start (`earliest`,
  `latest` or a `startingTimestamp`: `kafka.Start.declared`) and these are its first batch's:
  then the ledger keeps them as a declared re-read or skip of that version (a line of the
  history), not a violation.
- `rolled-back-over`: a run of an older version commits a batch after a newer version of the job
  committed one (for every job, Kafka or files).

Records that arrived but that no version has read yet are fine. `final` checks the whole ledger
once more at the end: from where the job began each partition to the end of its furthest batch,
every record written by exactly one version, or declared.

Pure: the world (world.py) calls `commit` for every committed batch and shows what it returns.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

#: A batch's records of one partition: [start, end).
Range = tuple[int, int]


@dataclass
class Writer:
    """Who wrote a stretch of a partition: one run of a version, its batches first..last."""

    version: int
    run: str  # "run 1a2b3c4d by deploy-4"
    first: int
    last: int

    def describe(self) -> str:
        if self.first == self.last:
            return f"v{self.version} batch {self.first} ({self.run})"
        return f"v{self.version} batches {self.first}-{self.last} ({self.run})"


@dataclass
class Segment:
    """Offsets [lo, hi) of a partition, written by each of `writers` (one, unless repeated)."""

    lo: int
    hi: int
    writers: list[Writer]


@dataclass(frozen=True)
class Declared:
    """Records a version re-read or skipped at its declared start (not a violation)."""

    partition: str
    lo: int
    hi: int
    version: int
    how: str
    kind: str  # "re-read" or "skip"


def _span(partition: str, lo: int, hi: int, topic: str) -> str:
    return f"{topic}/{partition} {lo}" if hi - lo == 1 else f"{topic}/{partition} {lo}..{hi - 1}"


def _spans(found: list[tuple[str, int, int]], topic: str) -> str:
    parts = [_span(p, lo, hi, topic) for p, lo, hi in found]
    count = sum(hi - lo for _, lo, hi in found)
    return f"{', '.join(parts)} ({count} record{'s' if count != 1 else ''})"


def _copies(writers: list[Writer]) -> list[Writer]:
    """Writers of a segment split in two: each piece's own (a run that goes on extends one)."""
    return [replace(w) for w in writers]


def _who(writers: list[Writer]) -> str:
    """Writers as a sentence names them: one per run, its batches first..last."""
    runs: dict[tuple[int, str], Writer] = {}
    for w in writers:
        found = runs.setdefault((w.version, w.run), replace(w))
        found.first, found.last = min(found.first, w.first), max(found.last, w.last)
    return ", ".join(w.describe() for w in sorted(runs.values(), key=lambda w: w.first))


def _subtract(lo: int, hi: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi) less the ranges `covered`."""
    left = [(lo, hi)]
    for c_lo, c_hi in covered:
        nxt = []
        for a, b in left:
            if c_hi <= a or c_lo >= b:
                nxt.append((a, b))
                continue
            if a < c_lo:
                nxt.append((a, c_lo))
            if c_hi < b:
                nxt.append((c_hi, b))
        left = nxt
    return left


@dataclass
class Records:
    """One job's records of one topic, partition by partition."""

    job: str
    topic: str
    #: Per partition: disjoint segments in order of their offsets.
    segments: dict[str, list[Segment]] = field(default_factory=dict)
    #: Per partition: the end of the furthest batch that read it, and who read it.
    frontier: dict[str, tuple[int, Writer]] = field(default_factory=dict)
    #: Where the job's first batch that wrote a record began each partition it read (None:
    #: none yet); the others are the job's from their earliest offset. Batches before it
    #: (empty ones: a start at `latest` reads only what arrives meanwhile) leave nothing a
    #: later start could skip.
    began: dict[str, int] | None = None
    declared: list[Declared] = field(default_factory=list)
    #: Per partition: what a violation already named (the final check names the rest).
    reported: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def commit(
        self, version: int, batch: int, run: str, ranges: dict[str, Range], declared: str = ""
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """A committed batch of `version` that read `ranges`; `declared`: how its version's start
        was declared, when this is its first batch and it was. (violations, notes)."""
        writer = Writer(version, run, batch, batch)
        who = f"{self.job} v{version} batch {batch} ({run})"
        first = self.began is None
        if first:
            if all(end <= start for start, end in ranges.values()):
                return [], []  # nothing written yet: nothing to skip past, nor to repeat
            self.began = {p: start for p, (start, _) in ranges.items()}
        gaps: list[tuple[str, int, int]] = []
        repeats: list[tuple[str, int, int]] = []
        before: list[Writer] = []  # who wrote what this batch skipped past or wrote again
        for partition, (start, end) in sorted(ranges.items(), key=lambda kv: int(kv[0])):
            reached = self.frontier.get(partition)
            expected = start if first else (reached[0] if reached is not None else 0)
            if start > expected:
                gaps.append((partition, expected, start))
                if reached is not None:
                    before.append(reached[1])
            if end > start:
                for lo, hi, writers in self._add(partition, start, end, writer):
                    repeats.append((partition, lo, hi))
                    before.extend(writers)
            if reached is None or end >= reached[0]:
                self.frontier[partition] = (end, writer)
        violations: list[tuple[str, str]] = []
        notes: list[str] = []
        earlier = _who(before)
        if declared:
            for partition, lo, hi in gaps:
                self.declared.append(Declared(partition, lo, hi, version, declared, "skip"))
            for partition, lo, hi in repeats:
                self.declared.append(Declared(partition, lo, hi, version, declared, "re-read"))
            if gaps:
                notes.append(f"ledger: {who} skips {_spans(gaps, self.topic)} as declared "
                             f"({declared})")  # fmt: skip
            if repeats:
                notes.append(f"ledger: {who} re-reads {_spans(repeats, self.topic)} as declared "
                             f"({declared}), written before by {earlier}")  # fmt: skip
            return violations, notes
        for partition, lo, hi in gaps + repeats:
            self.reported.setdefault(partition, []).append((lo, hi))
        if repeats:
            violations.append((
                "ledger-repeat",
                f"{who} wrote {_spans(repeats, self.topic)} again: {earlier} had written them",
            ))  # fmt: skip
        if gaps:
            violations.append((
                "ledger-gap",
                f"{who} began past {_spans(gaps, self.topic)}, which no version wrote "
                f"(the job had read up to there: {earlier})",
            ))  # fmt: skip
        return violations, notes

    def _add(
        self, partition: str, start: int, end: int, writer: Writer
    ) -> list[tuple[int, int, list[Writer]]]:
        """Write [start, end) by `writer`; the stretches others had written, with them."""
        segments = self.segments.setdefault(partition, [])
        if not segments or segments[-1].hi <= start:  # the common case: on from the end
            last = segments[-1] if segments else None
            if (
                last is not None
                and last.hi == start
                and len(last.writers) == 1
                and last.writers[0].version == writer.version
                and last.writers[0].run == writer.run
                and last.writers[0].last < writer.first
            ):
                last.hi, last.writers[0].last = end, writer.last
            else:
                segments.append(Segment(start, end, [writer]))
            return []
        found: list[tuple[int, int, list[Writer]]] = []
        out: list[Segment] = []
        at = start
        for seg in segments:
            if seg.hi <= start or seg.lo >= end:
                out.append(seg)
                continue
            if seg.lo < start:
                out.append(Segment(seg.lo, start, _copies(seg.writers)))
            lo, hi = max(seg.lo, start), min(seg.hi, end)
            if at < lo:
                out.append(Segment(at, lo, [replace(writer)]))
            found.append((lo, hi, _copies(seg.writers)))
            out.append(Segment(lo, hi, [*_copies(seg.writers), replace(writer)]))
            if seg.hi > end:
                out.append(Segment(end, seg.hi, _copies(seg.writers)))
            at = hi
        if at < end:
            out.append(Segment(at, end, [replace(writer)]))
        out.sort(key=lambda s: s.lo)
        self.segments[partition] = out
        return found

    def final(self) -> list[tuple[str, str]]:
        """What the ledger holds at the end that no violation named yet: records never written
        between where the job began each partition and its furthest batch, records written more
        than once; declared re-reads and skips excepted."""
        gaps: list[tuple[str, int, int]] = []
        repeats: list[tuple[str, int, int]] = []
        for partition, segments in sorted(self.segments.items(), key=lambda kv: int(kv[0])):
            known = self.reported.get(partition, []) + [
                (d.lo, d.hi) for d in self.declared if d.partition == partition
            ]
            at = (self.began or {}).get(partition, 0)
            for seg in segments:
                if seg.lo > at:
                    gaps += [(partition, a, b) for a, b in _subtract(at, seg.lo, known)]
                if len(seg.writers) > 1:
                    repeats += [(partition, a, b) for a, b in _subtract(seg.lo, seg.hi, known)]
                at = max(at, seg.hi)
        found = []
        if repeats:
            found.append(("ledger-repeat", f"at the end, {self.job}'s sink holds "
                          f"{_spans(repeats, self.topic)} more than once"))  # fmt: skip
        if gaps:
            found.append(("ledger-gap", f"at the end, no version of {self.job} wrote "
                          f"{_spans(gaps, self.topic)}, though later ones of those partitions "
                          "were written"))  # fmt: skip
        return found

    def holders(self, partition: str, offset: int) -> list[Writer]:
        """Who wrote one record (for tests and for people reading a seed)."""
        segments = self.segments.get(partition) or []
        index = bisect.bisect_right([s.lo for s in segments], offset) - 1
        if index >= 0 and segments[index].hi > offset:
            return list(segments[index].writers)
        return []


@dataclass
class Committed:
    """One (job, version, batch): the runs that committed it, into which sink, at which step."""

    runs: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass
class Ledger:
    """The world's ledger: Kafka records per job, batches per (job, version, batch), and the
    newest version of each job that committed a batch."""

    records: dict[str, Records] = field(default_factory=dict)
    batches: dict[tuple[str, int, int], Committed] = field(default_factory=dict)
    #: Per job: the newest version that committed a batch: (version, batch, run, step).
    newest: dict[str, tuple[int, int, str, int]] = field(default_factory=dict)
    #: (job, older version, newer version) already reported as rolled back over.
    told: set[tuple[str, int, int]] = field(default_factory=set)

    def commit(
        self,
        job: str,
        version: int,
        batch: int,
        run: str,
        sink: str,
        step: int,
        kafka: tuple[str, dict[str, Range]] | None = None,
        declared: str = "",
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """A batch committed (its rows in `sink`); `kafka`: (topic, the ranges it read).
        (violations, notes)."""
        self.batches.setdefault((job, version, batch), Committed()).runs.append((run, sink, step))
        violations: list[tuple[str, str]] = []
        newest = self.newest.get(job)
        if newest is not None and newest[0] > version:
            if (job, version, newest[0]) not in self.told:
                self.told.add((job, version, newest[0]))
                violations.append((
                    "rolled-back-over",
                    f"{job} v{version} batch {batch} ({run}) committed into {sink} after "
                    f"v{newest[0]} had committed batch {newest[1]} ({newest[2]}, step "
                    f"{newest[3]}): an older version writes again over a newer one's output",
                ))  # fmt: skip
        elif newest is None or newest[0] < version:
            self.newest[job] = (version, batch, run, step)
        notes: list[str] = []
        if kafka is not None:
            topic, ranges = kafka
            records = self.records.setdefault(job, Records(job, topic))
            found, notes = records.commit(version, batch, run, ranges, declared)
            violations += found
        return violations, notes

    def final(self) -> list[tuple[str, str]]:
        found = []
        for _, records in sorted(self.records.items()):
            found += records.final()
        return found
