"""What `preview NAME` shows: the slice of input the old and the new query ran on, and what each
wrote of it, compared (decide/preview.py compares; gather/preview.py reads the slice and runs
the runner's preview probe; render/preview.py shows it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SlicePart:
    """The input of one source view: `files` (exactly those files), `kafka` (offset ranges,
    `{"start": {topic: {partition: offset}}, "end": ...}`) or `sample` (a file of rows the
    user gave)."""

    view: str
    kind: str  # files, kafka, sample
    files: tuple[str, ...] = ()
    start: dict[str, dict[str, int]] | None = None
    end: dict[str, dict[str, int]] | None = None
    sample: str | None = None

    def request(self) -> dict[str, Any]:
        """The part as the preview probe reads it (runner/preview_probe.py)."""
        if self.kind == "files":
            return {"files": list(self.files)}
        if self.kind == "kafka":
            return {"kafka": {"start": self.start, "end": self.end}}
        return {"sample": self.sample}

    def describe(self) -> str:
        if self.kind == "files":
            return f"{self.view}: {len(self.files)} file(s)"
        if self.kind == "kafka":
            ranges = []
            for topic, parts in sorted((self.end or {}).items()):
                for part, end in sorted(parts.items(), key=lambda i: int(i[0])):
                    begin = ((self.start or {}).get(topic) or {}).get(part, end)
                    said = "earliest" if int(begin) < 0 else begin
                    ranges.append(f"{topic}-{part} [{said}, {end})")
            return f"{self.view}: " + (", ".join(ranges) or "no offsets")
        return f"{self.view}: rows of {self.sample}"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"view": self.view, "kind": self.kind}
        if self.kind == "files":
            doc["files"] = list(self.files)
        elif self.kind == "kafka":
            doc["start"], doc["end"] = self.start, self.end
        else:
            doc["sample"] = self.sample
        return doc


@dataclass(frozen=True)
class Slice:
    """The input both queries run on: the old version's committed batches `first`..`last`
    (None for rows the user gave), one part per source view; or none, and why (`missing`)."""

    version: int | None
    first: int | None = None
    last: int | None = None
    parts: tuple[SlicePart, ...] = ()
    missing: str | None = None

    def describe(self) -> str:
        if self.missing:
            return f"no slice: {self.missing}"
        if self.first is None:
            return "rows given with --sample-from"
        return f"batches {self.first}..{self.last} of version {self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "first-batch": self.first,
            "last-batch": self.last,
            "parts": [p.to_dict() for p in self.parts],
            "missing": self.missing,
        }


@dataclass(frozen=True)
class ColumnStats:
    nulls: int
    distinct: int
    min: Any = None
    max: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"nulls": self.nulls, "distinct": self.distinct, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class ColumnDiff:
    """A column whose figures differ between the old and the new output (None: that side has
    no such column)."""

    name: str
    old: ColumnStats | None
    new: ColumnStats | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "old": self.old.to_dict() if self.old else None,
            "new": self.new.to_dict() if self.new else None,
        }


@dataclass(frozen=True)
class Side:
    """What one query wrote of the slice: its schema, its rows (as JSON values, in its
    columns' order), the stateful operators it has, or Spark's error."""

    fields: tuple[dict[str, Any], ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    stateful: tuple[str, ...] = ()
    error: str | None = None

    @classmethod
    def from_dict(cls, doc: Any) -> Side:
        if not isinstance(doc, dict):
            return cls(error="the probe gave no answer")
        if doc.get("error"):
            return cls(error=str(doc["error"]))
        return cls(
            tuple(doc.get("fields") or ()),
            tuple(tuple(r) for r in doc.get("rows") or ()),
            tuple(str(s) for s in doc.get("stateful") or ()),
        )

    @property
    def names(self) -> list[str]:
        return [str(f["name"]) for f in self.fields]


@dataclass(frozen=True)
class Preview:
    """One job's preview: the slice, what went in, what each side wrote, and the comparison.
    `unavailable`: why nothing was run (no slice, too many rows, the probe failed)."""

    name: str
    old_version: int | None
    new_version: int
    slice: Slice
    inputs: dict[str, int] = field(default_factory=dict)
    old: Side | None = None
    new: Side | None = None
    verdict: str | None = None  # schema_rules.compare: same, additive, breaking
    schema_change: dict[str, Any] = field(default_factory=dict)
    #: The change in one line (schema_rules.describe), for people.
    schema_summary: str = ""
    refused: bool = False
    policy: str = "additive"
    key: tuple[str, ...] = ()
    only_new: int = 0
    only_old: int = 0
    changed: int = 0
    only_new_sample: tuple[dict[str, Any], ...] = ()
    only_old_sample: tuple[dict[str, Any], ...] = ()
    changed_sample: tuple[dict[str, Any], ...] = ()
    columns: tuple[ColumnDiff, ...] = ()
    notes: tuple[str, ...] = ()
    unavailable: str | None = None
    spark: str | None = None
    #: Where the probe's time went: its session's start, reading the input, each query.
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def side(s: Side | None) -> dict[str, Any] | None:
            if s is None:
                return None
            if s.error:
                return {"error": s.error}
            return {"fields": list(s.fields), "rows-out": len(s.rows),
                    "stateful": list(s.stateful)}  # fmt: skip

        return {
            "name": self.name,
            "old-version": self.old_version,
            "new-version": self.new_version,
            "slice": self.slice.to_dict(),
            "unavailable": self.unavailable,
            "spark": self.spark,
            "rows-in": dict(self.inputs),
            "old": side(self.old),
            "new": side(self.new),
            "schema": {
                "verdict": self.verdict,
                "policy": self.policy,
                "refused": self.refused,
                **{k: v for k, v in self.schema_change.items() if k != "verdict"},
            },  # fmt: skip
            "key": list(self.key),
            "only-new": {"rows": self.only_new, "sample": list(self.only_new_sample)},
            "only-old": {"rows": self.only_old, "sample": list(self.only_old_sample)},
            "changed": {"rows": self.changed, "sample": list(self.changed_sample)},
            "columns": [c.to_dict() for c in self.columns],
            "notes": list(self.notes),
            "probe-seconds": dict(self.seconds),
        }


@dataclass(frozen=True)
class PreviewFacts:
    """What `preview` gathered of one job before comparing: its versions, the slice, the
    probe's answer (empty: not run, `slice.missing` or `skipped` says why), and what of the
    job shapes the comparison."""

    name: str
    old_version: int | None
    new_version: int
    slice: Slice
    answer: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    policy: str = "additive"
    key: tuple[str, ...] = ()
    sink_format: str | None = None
    created_column: str = "__create_timestamp"
    #: Each source view's watermark: (column, delay).
    watermarks: dict[str, tuple[str, str]] = field(default_factory=dict)
