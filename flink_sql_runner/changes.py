"""What changed between the deployed manifest and the desired one, and how much it matters.

The rules live in one place: `JOB_RULES` for the job's own fields, `SOURCE_TABLE_RULES` and
`TARGET_TABLE_RULES` for the definitions of the tables a job uses. A QUERY change makes the old
checkpoint unusable (start clean, version + 1); a CONFIG change reaches the running job but keeps
its state (restart from the checkpoint). A field with no rule counts as QUERY: when in doubt, the
deployer prefers a clean start to restoring state that may not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from flink_sql_runner.sqlinfo import code_fingerprint, sql_fingerprint


class ChangeKind(IntEnum):
    """Ordered by severity: the most severe change of a job decides."""

    NONE = 0
    CONFIG = 1
    QUERY = 2

    @property
    def label(self) -> str:
        return self.name.lower()


#: Spark settings a checkpoint pins: on restart Spark silently keeps the old value (SPEC).
PINNED_SPARK_SETTINGS = frozenset(
    {
        "spark.sql.shuffle.partitions",
        "spark.sql.streaming.stateStore.providerClass",
        "spark.sql.streaming.stateStore.rocksdb.formatVersion",
        "spark.sql.streaming.stateStore.encodingFormat",
        "spark.sql.streaming.stateStore.compression.codec",
        "spark.sql.streaming.statefulOperator.useStrictDistribution",
        "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
        "spark.sql.streaming.aggregation.stateFormatVersion",
        "spark.sql.streaming.join.stateFormatVersion",
        "spark.sql.streaming.multipleWatermarkPolicy",
        "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan",
    }
)


@dataclass(frozen=True)
class Rule:
    kind: ChangeKind
    why: str
    #: Compared instead of the raw value (e.g. SQL without whitespace and comments).
    normalize: Callable[[Any], Any] | None = None


JOB_RULES: dict[str, Rule] = {
    "sql": Rule(ChangeKind.QUERY, "the query changed", sql_fingerprint),
    "code": Rule(ChangeKind.QUERY, "the code changed", code_fingerprint),
    "target-table": Rule(ChangeKind.QUERY, "it writes another table"),
    "outputMode": Rule(ChangeKind.QUERY, "the output mode shapes the state"),
    "source-tables": Rule(ChangeKind.QUERY, "it reads other tables"),
    "checkpoint-root": Rule(ChangeKind.QUERY, "its state would live elsewhere"),
    "description": Rule(ChangeKind.CONFIG, "metadata only"),
    "trigger": Rule(ChangeKind.CONFIG, "the checkpoint survives a new trigger"),
    "desired-state": Rule(ChangeKind.CONFIG, "running or stopped"),
    "metadata-columns": Rule(ChangeKind.CONFIG, "columns appended after the query"),
    "sparkProperties": Rule(ChangeKind.CONFIG, "a Spark setting the checkpoint does not pin"),
    "migrated-from": Rule(
        ChangeKind.QUERY, "the original tool's (Flink) state cannot be restored by Spark"
    ),
}
PINNED_RULE = Rule(ChangeKind.QUERY, "the checkpoint pins this Spark setting")
UNKNOWN_RULE = Rule(ChangeKind.QUERY, "no rule for this field; treated as a query change")

SOURCE_TABLE_RULES: dict[str, Rule] = {
    "format": Rule(ChangeKind.QUERY, "a source of another format has other offsets"),
    "table": Rule(ChangeKind.QUERY, "it reads another catalog table"),
    "schema": Rule(ChangeKind.QUERY, "the source schema shapes the plan and its state"),
    "watermark": Rule(ChangeKind.QUERY, "the watermark shapes the state"),
    "options": Rule(ChangeKind.CONFIG, "source options"),
}
TARGET_TABLE_RULES: dict[str, Rule] = {
    "format": Rule(ChangeKind.QUERY, "the sink changed format"),
    "table": Rule(ChangeKind.QUERY, "it writes another catalog table"),
    "schema": Rule(ChangeKind.CONFIG, "not used when writing"),
    "watermark": Rule(ChangeKind.CONFIG, "not used when writing"),
    "options": Rule(ChangeKind.CONFIG, "sink options"),
}


@dataclass(frozen=True)
class Change:
    field: str
    kind: ChangeKind
    old: Any
    new: Any
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind.label, "old": self.old, "new": self.new}


MISSING = "<unset>"


def _rule_for(path: list[Any], target: str | None) -> tuple[str, Rule]:
    """The rule that governs a DeepDiff path into the comparable document."""
    head = path[0]
    if head == "tables" and len(path) >= 2:
        table = path[1]
        rules = TARGET_TABLE_RULES if table == target else SOURCE_TABLE_RULES
        field = path[2] if len(path) >= 3 else None
        rule = rules.get(field, UNKNOWN_RULE) if field else SOURCE_TABLE_RULES["table"]
        return "tables." + ".".join(str(p) for p in path[1:3]), rule
    if head == "sparkProperties" and len(path) >= 2:
        key = str(path[1])
        rule = PINNED_RULE if key in PINNED_SPARK_SETTINGS else JOB_RULES["sparkProperties"]
        return f"sparkProperties.{key}", rule
    return str(head), JOB_RULES.get(str(head), UNKNOWN_RULE)


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down, as DeepDiff sees them: `1`, `1.0` and
    `True` differ (Spark would get other text), the order of a mapping's keys does not."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _document(spec: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
    return {"sparkProperties": {}, **spec, "tables": tables}


def _comparable(doc: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """Those fields of the document, normalized where a rule says so."""
    out = {}
    for key in fields:
        if key in doc:
            rule = JOB_RULES.get(key)
            out[key] = rule.normalize(doc[key]) if rule and rule.normalize else doc[key]
    return out


def diff(
    old_spec: dict[str, Any],
    old_tables: dict[str, Any],
    new_spec: dict[str, Any],
    new_tables: dict[str, Any],
) -> list[Change]:
    """Every changed field, old -> new, each with its kind; most severe first, then by field."""
    old, new = _document(old_spec, old_tables), _document(new_spec, new_tables)
    # Most jobs are unchanged: only fields whose raw values differ are normalized and walked.
    fields = [k for k in {**old, **new} if not (k in old and k in new and same(old[k], new[k]))]
    if not fields:
        return []
    from deepdiff import DeepDiff  # slow to import; not needed when nothing changed

    before, after = _comparable(old, fields), _comparable(new, fields)
    target = new_spec.get("target-table")
    found: dict[str, Change] = {}
    tree = DeepDiff(before, after, view="tree", ignore_order=False)
    for levels in tree.values():
        for level in levels:
            path = level.path(output_format="list")
            field, rule = _rule_for(path, target)
            if field in found:
                continue
            old = _raw(old_spec, old_tables, field, path)
            new = _raw(new_spec, new_tables, field, path)
            if field == "sparkProperties" and _pins(old, new):
                rule = PINNED_RULE  # all properties set or dropped at once: no key in the path
            found[field] = Change(field, rule.kind, old, new, rule.why)
    return sorted(found.values(), key=lambda c: (-c.kind, c.field))


def _raw(spec: dict[str, Any], tables: dict[str, Any], field: str, path: list[Any]) -> Any:
    """The value as the user wrote it, for showing old -> new."""
    head = path[0]
    if head == "tables":
        value: Any = tables
        for part in path[1:3]:  # a table's name may hold dots (db.orders)
            if not isinstance(value, dict) or part not in value:
                return MISSING
            value = value[part]
        return value
    if head == "sparkProperties" and "." in field:
        return spec.get("sparkProperties", {}).get(field.split(".", 1)[1], MISSING)
    return spec.get(field, MISSING)


def _pins(*properties: Any) -> bool:
    return any(isinstance(p, dict) and PINNED_SPARK_SETTINGS & p.keys() for p in properties)


def severity(changes: list[Change]) -> ChangeKind:
    return max((c.kind for c in changes), default=ChangeKind.NONE)
