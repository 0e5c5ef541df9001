"""What the state of a query's stateful operators means, as the runner's probe read it from
Spark's analysed plan (runner/stateful_plan.py), for the old and the new query of a change.

An operator's `canon` parts are exact (two equal mean the same state); its `text` parts are for
people. The verdicts made of them are decide/state.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flink_sql_runner.model.stored import StoredManifest


def _watermark(value: Any) -> tuple[str, str, str]:
    """`(column, column as text, delay)`."""
    if not (isinstance(value, list) and len(value) == 3):
        raise ValueError(f"not a watermark: {value!r}")
    return str(value[0]), str(value[1]), str(value[2])


def _strings(doc: dict[str, Any], key: str) -> tuple[str, ...]:
    value = doc.get(key) or []
    if not isinstance(value, list):
        raise ValueError(f"{key}: not a list")
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class Operator:
    """One stateful operator: `kind` (aggregation, deduplication, join, limit, function state,
    ...), its keys and values (exact and as text, with the columns they are written in), the
    watermarks below it `(column, column as text, delay)`, the selections before it, its join
    type and sides, and why its meaning cannot be read (`unknown`)."""

    kind: str
    keys: tuple[str, ...] = ()
    key_text: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    value_text: tuple[str, ...] = ()
    value_names: tuple[str, ...] = ()
    watermarks: tuple[tuple[str, str, str], ...] = ()
    before: tuple[str, ...] = ()
    before_text: tuple[str, ...] = ()
    join: str | None = None
    sides: tuple[tuple[str, ...], ...] = ()
    unknown: str | None = None

    @classmethod
    def from_dict(cls, doc: Any) -> Operator:
        if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
            raise ValueError(f"not a stateful operator: {doc!r}")
        marks = doc.get("watermarks") or []
        sides = doc.get("sides") or []
        return cls(
            doc["kind"],
            _strings(doc, "keys"),
            _strings(doc, "key-text"),
            _strings(doc, "values"),
            _strings(doc, "value-text"),
            _strings(doc, "value-names"),
            tuple(_watermark(m) for m in marks),
            _strings(doc, "before"),
            _strings(doc, "before-text"),
            str(doc["join"]) if doc.get("join") is not None else None,
            tuple(tuple(str(c) for c in side) for side in sides),
            str(doc["unknown"]) if doc.get("unknown") else None,
        )

    def describe(self) -> str:
        """`aggregation by k, window(ts, 20 seconds): count(*)`."""
        what = self.kind if self.join is None else f"{join_words(self.join)} join"
        keys = f" by {', '.join(self.key_text)}" if self.key_text and self.kind != "join" else ""
        on = f" on {self.key_text[0]}" if self.kind == "join" and self.key_text else ""
        values = f": {', '.join(self.value_text)}" if self.value_text else ""
        return f"{what}{keys}{on}{values}"


def join_words(join: str) -> str:
    return {"Inner": "inner", "LeftOuter": "left outer", "RightOuter": "right outer",
            "FullOuter": "full outer", "LeftSemi": "left semi", "LeftAnti": "left anti"}.get(
        join, join)  # fmt: skip


@dataclass(frozen=True)
class Analysed:
    """A query's stateful operators, bottom up, or why they are not known."""

    operators: tuple[Operator, ...] = ()
    unknown: str | None = None

    @classmethod
    def from_dict(cls, doc: Any) -> Analysed:
        if not isinstance(doc, dict):
            return cls(unknown="Spark's analysis did not answer")
        if "operators" in doc:
            try:
                return cls(tuple(Operator.from_dict(op) for op in doc["operators"] or []))
            except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
                return cls(unknown=f"Spark's analysis answered what cannot be read ({exc})")
        if doc.get("error"):
            return cls(unknown=f"its query does not analyse: {doc['error']}")
        return cls(unknown=str(doc.get("unknown") or "Spark's analysis did not answer"))


@dataclass(frozen=True)
class StateFacts:
    """The stateful operators of the version whose state a new version would start without
    (`old`, of manifest `base`) and of the change (`new`), and the size of `base`'s checkpoint."""

    old: Analysed
    new: Analysed
    base: StoredManifest | None = None
    #: The files and bytes of `base`'s checkpoint, what continuing from its state copies;
    #: None where it cannot be read.
    checkpoint: tuple[int, int] | None = None
