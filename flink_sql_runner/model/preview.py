"""What `preview NAME` shows: the slice of input the old and the new query ran on, and what each
wrote of it, compared (decide/preview.py compares; gather/preview.py reads the slice and runs
the runner's preview probe; render/preview.py shows it)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from flink_sql_runner.read.schemas import shape_problem, shape_validator


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
    #: How many rows it wrote, where the rows themselves are not kept (a preview read back from
    #: its JSON, `Preview.from_dict`); None: `len(rows)`.
    counted: int | None = None

    @property
    def rows_out(self) -> int:
        return len(self.rows) if self.counted is None else self.counted

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
            return {"fields": list(s.fields), "rows-out": s.rows_out,
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
                "summary": self.schema_summary,
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

    @classmethod
    def from_dict(cls, doc: Any) -> Preview:
        """The preview `to_dict` wrote, read back (a plan's document carries its previews):
        ValueError naming the field when `doc` is not of its shape. Its sides keep their row
        counts, not their rows (`to_dict` holds only samples)."""
        found = shape_problem(doc, _shape_checker())
        if found is not None:
            raise ValueError(f"{found[0]}: {found[1]}")
        got = doc["slice"]
        parts = tuple(
            SlicePart(p["view"], p["kind"], tuple(p.get("files") or ()), p.get("start"),
                      p.get("end"), p.get("sample"))
            for p in got["parts"]
        )  # fmt: skip
        schema = doc["schema"]
        change = {k: v for k, v in schema.items() if k not in ("policy", "refused", "summary")}
        return cls(
            name=doc["name"],
            old_version=doc["old-version"],
            new_version=doc["new-version"],
            slice=Slice(
                got["version"], got["first-batch"], got["last-batch"], parts, got["missing"]
            ),  # fmt: skip
            inputs=dict(doc["rows-in"]),
            old=_side_of(doc["old"]),
            new=_side_of(doc["new"]),
            verdict=schema["verdict"],
            schema_change=change if schema["verdict"] is not None else {},
            schema_summary=schema["summary"],
            refused=schema["refused"],
            policy=schema["policy"],
            key=tuple(doc["key"]),
            only_new=doc["only-new"]["rows"],
            only_old=doc["only-old"]["rows"],
            changed=doc["changed"]["rows"],
            only_new_sample=tuple(doc["only-new"]["sample"]),
            only_old_sample=tuple(doc["only-old"]["sample"]),
            changed_sample=tuple(doc["changed"]["sample"]),
            columns=tuple(
                ColumnDiff(c["name"], _stats_of(c["old"]), _stats_of(c["new"]))
                for c in doc["columns"]
            ),
            notes=tuple(doc["notes"]),
            unavailable=doc["unavailable"],
            spark=doc["spark"],
            seconds=dict(doc["probe-seconds"]),
        )


def _side_of(doc: dict[str, Any] | None) -> Side | None:
    if doc is None:
        return None
    if "error" in doc:
        return Side(error=doc["error"])
    return Side(tuple(doc["fields"]), (), tuple(doc["stateful"]), counted=doc["rows-out"])


def _stats_of(doc: dict[str, Any] | None) -> ColumnStats | None:
    if doc is None:
        return None
    return ColumnStats(doc["nulls"], doc["distinct"], doc["min"], doc["max"])


_TEXT = {"type": "string"}
_TEXT_OR_NONE = {"type": ["string", "null"]}
_INT_OR_NONE = {"type": ["integer", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_TEXTS = {"type": "array", "items": _TEXT}
#: Kafka offsets by topic and partition (`{"t": {"0": 12}}`).
_OFFSETS = {
    "type": ["object", "null"],
    "additionalProperties": {
        "type": "object",
        "propertyNames": {"pattern": "^-?[0-9]{1,10}$"},
        "additionalProperties": {"type": "integer"},
    },
}
_STATS = {
    "oneOf": [
        {"type": "null"},
        {"type": "object", "required": ["nulls", "distinct", "min", "max"],
         "properties": {"nulls": _COUNT, "distinct": _COUNT}},
    ]
}  # fmt: skip
_SIDE = {
    "oneOf": [
        {"type": "null"},
        {"type": "object", "required": ["error"], "properties": {"error": _TEXT}},
        {"type": "object", "required": ["fields", "rows-out", "stateful"],
         "not": {"required": ["error"]},
         "properties": {"fields": {"type": "array", "items": {"type": "object"}},
                        "rows-out": _COUNT, "stateful": _TEXTS}},
    ]
}  # fmt: skip
_ROWS = {"type": "array", "items": {"type": "object"}}


def _found(sample: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["rows", "sample"],
            "properties": {"rows": _COUNT, "sample": sample}}  # fmt: skip


#: The shape of `Preview.to_dict()`'s document, as `Preview.from_dict` reads it.
SHAPE: dict[str, Any] = {
    "type": "object",
    "required": [
        "name", "old-version", "new-version", "slice", "unavailable", "spark", "rows-in", "old",
        "new", "schema", "key", "only-new", "only-old", "changed", "columns", "notes",
        "probe-seconds",
    ],
    "properties": {
        "name": _TEXT,
        "old-version": _INT_OR_NONE,
        "new-version": {"type": "integer"},
        "slice": {
            "type": "object",
            "required": ["version", "first-batch", "last-batch", "parts", "missing"],
            "properties": {
                "version": _INT_OR_NONE,
                "first-batch": _INT_OR_NONE,
                "last-batch": _INT_OR_NONE,
                "missing": _TEXT_OR_NONE,
                "parts": {"type": "array", "items": {
                    "type": "object",
                    "required": ["view", "kind"],
                    "properties": {
                        "view": _TEXT,
                        "kind": {"enum": ["files", "kafka", "sample"]},
                        "files": _TEXTS,
                        "start": _OFFSETS,
                        "end": _OFFSETS,
                        "sample": _TEXT_OR_NONE,
                    },
                }},
            },
        },
        "unavailable": _TEXT_OR_NONE,
        "spark": _TEXT_OR_NONE,
        "rows-in": {"type": "object", "additionalProperties": _COUNT},
        "old": _SIDE,
        "new": _SIDE,
        "schema": {
            "type": "object",
            "required": ["verdict", "policy", "refused", "summary"],
            "properties": {"verdict": _TEXT_OR_NONE, "policy": _TEXT,
                           "refused": {"type": "boolean"}, "summary": _TEXT},
        },
        "key": _TEXTS,
        "only-new": _found(_ROWS),
        "only-old": _found(_ROWS),
        "changed": _found({"type": "array", "items": {
            "type": "object",
            "required": ["key", "columns"],
            "properties": {
                "key": {"type": "object"},
                "columns": {"type": "object", "additionalProperties": {
                    "type": "array", "minItems": 2, "maxItems": 2}},
            },
        }}),
        "columns": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "old", "new"],
            "properties": {"name": _TEXT, "old": _STATS, "new": _STATS},
        }},
        "notes": _TEXTS,
        "probe-seconds": {"type": "object", "additionalProperties": {"type": "number"}},
    },
}  # fmt: skip


@functools.cache
def _shape_checker() -> Any:
    return shape_validator(SHAPE)


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
