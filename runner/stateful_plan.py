"""What the state of each stateful operator of a streaming query means, read from Spark's own
analysed plan: the plan's answer to "may the new version keep the old version's state".

Spark checks a state's schema, not its meaning (a window of 20 s changed to 30 s, or `count(*)`
changed to `sum(k)` under the same name, restarts on the old state). So each stateful operator is
described by what decides its state's meaning, every expression followed down through the
query's projections to the source columns it is computed from:

- an aggregation: its grouping keys (a time window among them, with its size and slide) and its
  aggregate functions over their inputs, in order (the state's key and value);
- a deduplication: its columns; a stream-stream join: its type, condition and sides; a limit:
  its count; a function's own state (`flatMapGroupsWithState`, `transformWithState`): unknown;
- the watermarks below it (event-time column and delay) and the filters before it (these may
  change without changing what the state holds, but a window open at the change then mixes both).

Each is given twice: `canon`, exact (Spark's class names and every parameter, no expression ids;
two operators whose canons are equal mean the same state) and `text`, as people write SQL
(`window(ts, 20 seconds)`, `count(*)`, `sum(k)`). An expression the reading does not follow (a
user-defined function, an operator it does not know that makes new columns) makes the operator's
canon hold `?`: its verdict is unknown, never kept.

Pure Python over the plan's JSON (`TreeNode.toJSON`, the same on 3.5 to 4.3 by short class names)
and the watermarks' delays, which that JSON leaves out: both are read by runner/spark_internals.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: Fields of a JSON node that are not its meaning: ids, metadata, child indexes, nullability.
_NOT_MEANING = {
    "class", "num-children", "child", "left", "right", "children", "exprId", "resultId",
    "jvmId", "qualifier", "metadata", "explicitMetadata", "nonInheritableMetadataKeys",
    "nullable", "name", "nodeId", "origin", "isStreaming", "id",
}  # fmt: skip
#: Nodes whose output is their child's, column for column.
_PASS = {
    "SubqueryAlias", "View", "Filter", "EventTimeWatermark", "Sort", "Repartition",
    "RepartitionByExpression", "RebalancePartitions", "ResolvedHint", "Distinct", "Deduplicate",
    "DeduplicateWithinWatermark", "GlobalLimit", "LocalLimit", "Sample", "Offset", "Tail",
    "WithWatermark", "UnresolvedHint",
}  # fmt: skip
#: Nodes that only select or order what passes: a change of them is a change before the state.
_SELECTING = {"Filter", "Sample", "Sort", "Repartition", "RepartitionByExpression"}
_OPERATORS = {
    "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<", "LessThanOrEqual": "<=",
    "EqualTo": "=", "EqualNullSafe": "<=>", "Add": "+", "Subtract": "-", "Multiply": "*",
    "Divide": "/", "Remainder": "%", "And": "AND", "Or": "OR",
}  # fmt: skip
_FUNCTIONS = {"Average": "avg", "CollectList": "collect_list", "CollectSet": "collect_set",
              "ApproximatePercentile": "percentile_approx", "HyperLogLogPlusPlus":
              "approx_count_distinct"}  # fmt: skip
_UNFOLLOWED = ("PythonUDF", "ScalaUDF", "ScalaUDAF", "PythonUDAF", "PythonUDTF", "HiveGenericUDF")


#: Marks what cannot be followed; never in a canon otherwise (values are written as JSON with
#: ASCII escapes, so a literal holding it is written `\u2047`).
UNKNOWN = "\u2047"


def short(class_name: Any) -> str:
    return str(class_name).rsplit(".", 1)[-1].rstrip("$")


@dataclass
class Expr:
    cls: str
    fields: dict[str, Any]
    children: list[Expr]


@dataclass
class Node:
    cls: str
    fields: dict[str, Any]
    children: list[Node]
    alias: str | None = None  # the nearest view or alias above a source


@dataclass
class Rel:
    """What a node's output columns are, computed from the sources: exact and as text."""

    output: list[Any] = field(default_factory=list)  # expression ids, in order
    canon: dict[Any, str] = field(default_factory=dict)
    text: dict[Any, str] = field(default_factory=dict)
    streaming: bool = False
    before: list[tuple[str, str]] = field(default_factory=list)  # (canon, text) of selections
    watermarks: list[tuple[str, str, str]] = field(default_factory=list)  # (canon, text, delay)


def _tree(items: list[dict[str, Any]], at: int, make: Any) -> tuple[Any, int]:
    item = items[at]
    children, nxt = [], at + 1
    for _ in range(int(item.get("num-children", 0))):
        child, nxt = _tree(items, nxt, make)
        children.append(child)
    return make(short(item.get("class")), item, children), nxt


def _expr(dump: Any) -> Expr | None:
    if not (isinstance(dump, list) and dump and isinstance(dump[0], dict) and "class" in dump[0]):
        return None
    return _tree(dump, 0, Expr)[0]


def _exprs(dump: Any) -> list[Expr]:
    if not isinstance(dump, list):
        return []
    found = [_expr(item) for item in dump]
    return [e for e in found if e is not None]


def _key(expr: Expr) -> Any:
    eid = expr.fields.get("exprId") or {}
    return (eid.get("id"), eid.get("jvmId")) if isinstance(eid, dict) else None


def _simple(fields: dict[str, Any]) -> str:
    """A node's own parameters (not its children, ids or nested expression dumps)."""

    def plain(value: Any) -> bool:
        if isinstance(value, dict):
            return "class" not in value and all(plain(v) for v in value.values())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return True

    kept = {k: v for k, v in sorted(fields.items()) if k not in _NOT_MEANING and plain(v)}
    return ",".join(f"{k}={_plain_text(v)}" for k, v in kept.items())


def _plain_text(value: Any) -> str:
    if isinstance(value, dict):
        if "object" in value and len(value) == 1:
            return short(value["object"])
        return "{" + ",".join(f"{k}:{_plain_text(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_plain_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=True)


def canon(expr: Expr, rel: Rel) -> str:
    """The exact meaning of `expr` over the sources; `?` where it cannot be followed."""
    if expr.cls == "AttributeReference":
        return rel.canon.get(_key(expr), f"{UNKNOWN}{expr.fields.get('name')}")
    if expr.cls == "Alias":
        return canon(expr.children[0], rel)
    if expr.cls == "NamedLambdaVariable":  # its name is what tells `acc` from `x`
        return f"lambda:{_plain_text(expr.fields.get('name'))}"
    binary = expr.cls == "Literal" and expr.fields.get("dataType") == "binary"
    # A parameter Spark's JSON writes as null and the adapter could not read (its value is
    # not known: two such are not the same).
    unread = expr.cls != "Literal" and any(
        v is None and k not in _NOT_MEANING for k, v in expr.fields.items()
    )
    mark = UNKNOWN if expr.cls in _UNFOLLOWED or binary or unread else ""  # a binary: `[B@hash`
    args = ",".join(canon(child, rel) for child in expr.children)
    return f"{mark}{expr.cls}[{_simple(expr.fields)}]({args})"


def text(expr: Expr, rel: Rel) -> str:
    """`expr` as people write it in SQL."""
    kids = expr.children
    if expr.cls == "AttributeReference":
        return rel.text.get(_key(expr), str(expr.fields.get("name")))
    if expr.cls in ("Alias", "Cast", "KnownNullable", "KnownNotNull", "AggregateExpression"):
        inner = text(kids[0], rel) if kids else ""
        distinct = expr.cls == "AggregateExpression" and expr.fields.get("isDistinct") is True
        return f"DISTINCT {inner}" if distinct else inner
    if expr.cls == "Literal":
        value = expr.fields.get("value")
        return (
            "NULL"
            if value is None
            else (repr(value) if expr.fields.get("dataType") == "string" else str(value))
        )
    if expr.cls == "CreateNamedStruct" and _is_window(expr):
        return window_text([expr], rel)
    if expr.cls == "With" and kids:
        return text(kids[0], rel)
    if expr.cls in _OPERATORS and len(kids) == 2:
        return f"{text(kids[0], rel)} {_OPERATORS[expr.cls]} {text(kids[1], rel)}"
    if expr.cls == "Not" and kids:
        return f"NOT {text(kids[0], rel)}"
    if expr.cls in ("IsNotNull", "IsNull") and kids:
        return f"{text(kids[0], rel)} IS {'NOT ' if expr.cls == 'IsNotNull' else ''}NULL"
    if expr.cls == "Count" and len(kids) == 1 and kids[0].cls == "Literal":
        return "count(*)"
    name = _FUNCTIONS.get(expr.cls) or re.sub(r"(?<!^)(?=[A-Z])", "_", expr.cls).lower()
    return f"{name}({', '.join(text(k, rel) for k in kids)})"


def _is_window(expr: Expr) -> bool:
    names = [k.fields.get("value") for k in expr.children[::2] if k.cls == "Literal"]
    return names[:2] == ["start", "end"]


def _walk(expr: Expr) -> list[Expr]:
    found = [expr]
    for child in expr.children:
        found.extend(_walk(child))
    return found


def window_text(exprs: list[Expr], rel: Rel) -> str:
    """`window(ts, 20 seconds)` from the arithmetic Spark's analyser makes of `window()` (one
    expression per slide, under an Expand, where it slides: `window(ts, 30 seconds, 10
    seconds)`): its size is its largest non-zero long literal in microseconds, a sliding one's
    slide the least; a tumbling window's other literal is where its windows start."""
    parts = [p for e in exprs for p in _walk(e)]
    column = next((text(p, rel) for p in parts if p.cls == "AttributeReference"), "?")
    micros = {
        int(p.fields["value"])
        for p in parts
        if p.cls == "Literal" and p.fields.get("dataType") == "long"
        and str(p.fields.get("value", "")).lstrip("-").isdigit() and int(p.fields["value"]) > 0
    }  # fmt: skip
    if not micros:
        return f"window({column})"
    size = max(micros)
    if len(exprs) > 1:
        return f"window({column}, {duration(size)}, {duration(min(micros))})"
    rest = sorted(micros - {size})
    start = f", starting {', '.join(duration(m) for m in rest)} in" if rest else ""
    return f"window({column}, {duration(size)}{start})"


def duration(micros: int) -> str:
    for unit, size in (("day", 86_400_000_000), ("hour", 3_600_000_000), ("minute", 60_000_000),
                       ("second", 1_000_000), ("millisecond", 1_000)):  # fmt: skip
        if micros % size == 0:
            count = micros // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{micros} microseconds"


class _Reader:
    def __init__(self, sources: dict[str, str]) -> None:
        self.operators: list[dict[str, Any]] = []
        self.sources = sources  # by view: what it reads (format, path, topics)
        self.seen: dict[str, int] = {}  # by label: how many of its leaves were read

    def read(self, node: Node) -> Rel:
        rels = [self.read(child) for child in node.children]
        handler = getattr(self, f"_{node.cls}", None)
        if handler is not None:
            return handler(node, rels)
        if not node.children:
            return self._source(node)
        return self._unknown(node, rels)

    def _merged(self, rels: list[Rel]) -> Rel:
        rel = Rel(streaming=any(r.streaming for r in rels))
        for r in rels:
            rel.output += r.output
            rel.canon.update(r.canon)
            rel.text.update(r.text)
            rel.before += r.before
            rel.watermarks += r.watermarks
        return rel

    def _source(self, node: Node) -> Rel:
        rel = Rel(streaming="Streaming" in node.cls or bool(node.fields.get("isStreaming")))
        label = node.alias or node.cls
        label += self.sources.get(label, "")
        # The same source read twice (a self-join): each read is its own.
        count = self.seen.get(label, 0)
        self.seen[label] = count + 1
        label += f"#{count}" if count else ""
        for attr in _exprs(node.fields.get("output")):
            key, name = _key(attr), attr.fields.get("name")
            kind = _plain_text(attr.fields.get("dataType"))
            rel.output.append(key)
            rel.canon[key] = f"{label}.{name}:{kind}"
            rel.text[key] = str(name)
        return rel

    def _unknown(self, node: Node, rels: list[Rel]) -> Rel:
        """An operator the reading does not know: columns it makes cannot be followed; its own
        parameters count as a change before any state above it."""
        rel = self._merged(rels)
        mark = f"{UNKNOWN}{node.cls}[{_simple(node.fields)}]"
        rel.before.append((mark, node.cls))
        if node.cls.startswith(("FlatMapGroups", "MapGroups", "TransformWithState")):
            self._add(node, "function state", rel, unknown="a function's own state: what it "
                      "means cannot be compared")  # fmt: skip
        outputs = _exprs(node.fields.get("output")) or _exprs(node.fields.get("generatorOutput"))
        for attr in outputs:
            key = _key(attr)
            if key not in rel.canon:
                rel.canon[key] = f"{UNKNOWN}{node.cls}.{attr.fields.get('name')}"
                rel.text[key] = str(attr.fields.get("name"))
                rel.output.append(key)
        return rel

    def _pass(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        if node.cls in _SELECTING:
            for name in ("condition", "fraction", "order", "partitionExpressions"):
                value = node.fields.get(name)
                exprs = [_expr(value)] if _expr(value) else _exprs(value)
                for e in exprs:
                    if e is not None:
                        rel.before.append((f"{node.cls}:{canon(e, rel)}", text(e, rel)))
            if node.cls == "Sample":
                rel.before.append((f"Sample[{_simple(node.fields)}]", "a sample"))
        return rel

    def _SubqueryAlias(self, node: Node, rels: list[Rel]) -> Rel:
        return self._pass(node, rels)

    _View = _Filter = _Sort = _Repartition = _RepartitionByExpression = _SubqueryAlias
    _RebalancePartitions = _ResolvedHint = _Sample = _SubqueryAlias

    def _EventTimeWatermark(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        delay = node.fields.get("delay")
        column = _expr(node.fields.get("eventTime"))
        if column is not None:
            rel.watermarks.append(
                (canon(column, rel), text(column, rel), str(delay) if delay else UNKNOWN)
            )
        return rel

    def _Project(self, node: Node, rels: list[Rel]) -> Rel:
        child = self._merged(rels)
        rel = Rel(streaming=child.streaming, before=child.before, watermarks=child.watermarks)
        rel.canon, rel.text = dict(child.canon), dict(child.text)
        for e in _exprs(node.fields.get("projectList")):
            key = _key(e)
            rel.canon[key], rel.text[key] = canon(e, child), text(e, child)
            rel.output.append(key)
        return rel

    def _Aggregate(self, node: Node, rels: list[Rel]) -> Rel:
        child = self._merged(rels)
        keys = _exprs(node.fields.get("groupingExpressions"))
        outputs = _exprs(node.fields.get("aggregateExpressions"))
        values: list[tuple[str, str, str]] = []  # (canon, text, the column it is written in)
        for out in outputs:
            for part in _walk(out):
                if part.cls == "AggregateExpression":
                    found = (canon(part, child), text(part, child), str(out.fields.get("name")))
                    if found[0] not in [v[0] for v in values]:
                        values.append(found)
        index = len(self.operators)
        if child.streaming:
            self._add(node, "aggregation", child, keys=keys, values=values)
        rel = Rel(streaming=child.streaming, before=[] if child.streaming else child.before,
                  watermarks=child.watermarks)  # fmt: skip
        rel.canon, rel.text = dict(child.canon), dict(child.text)
        for out in outputs:
            key = _key(out)
            made = canon(out, child)
            rel.canon[key] = f"op{index}:{made}" if child.streaming else made
            rel.text[key] = text(out, child)
            rel.output.append(key)
        return rel

    def _Deduplicate(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        if rel.streaming:
            kind = "deduplication within watermark" if "Within" in node.cls else "deduplication"
            self._add(node, kind, rel, keys=_exprs(node.fields.get("keys")))
        rel.before = []
        return rel

    _DeduplicateWithinWatermark = _Deduplicate

    def _Distinct(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        if rel.streaming:
            keys = [Expr("AttributeReference", {"exprId": {"id": k[0], "jvmId": k[1]}}, [])
                    for k in rel.output if isinstance(k, tuple)]  # fmt: skip
            self._add(node, "deduplication", rel, keys=keys)
            rel.before = []
        return rel

    def _GlobalLimit(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        if rel.streaming:
            limit = _expr(node.fields.get("limitExpr"))
            self._add(node, "limit", rel, keys=[limit] if limit is not None else [])
            rel.before = []
        return rel

    def _LocalLimit(self, node: Node, rels: list[Rel]) -> Rel:
        return self._merged(rels)

    def _Join(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        join_type = _plain_text(node.fields.get("joinType"))
        condition = _expr(node.fields.get("condition"))
        if len(rels) == 2 and rels[0].streaming and rels[1].streaming:
            self._add(node, "join", rel, keys=[condition] if condition is not None else [],
                      join=join_type, sides=[rels[0].output, rels[1].output])  # fmt: skip
            rel.before = []
        if join_type in ("LeftSemi", "LeftAnti") and rels:
            rel.output = list(rels[0].output)
        return rel

    def _Union(self, node: Node, rels: list[Rel]) -> Rel:
        rel = self._merged(rels)
        if not rels:
            return rel
        rel.output = list(rels[0].output)
        for j, key in enumerate(rels[0].output):
            parts = [r.canon.get(r.output[j], UNKNOWN) if j < len(r.output) else UNKNOWN
                     for r in rels]  # fmt: skip
            rel.canon[key] = f"Union({','.join(parts)})"
        return rel

    def _Expand(self, node: Node, rels: list[Rel]) -> Rel:
        child = self._merged(rels)
        rel = Rel(streaming=child.streaming, before=child.before, watermarks=child.watermarks)
        rel.canon, rel.text = dict(child.canon), dict(child.text)
        rows = node.fields.get("projections") or []
        rows = [_exprs(row) for row in rows] if isinstance(rows, list) else []
        for j, attr in enumerate(_exprs(node.fields.get("output"))):
            key = _key(attr)
            parts = [canon(row[j], child) if j < len(row) else UNKNOWN for row in rows]
            rel.canon[key] = f"Expand({','.join(parts)})"
            column = [row[j] for row in rows if j < len(row)]
            windows = column and all(e.cls == "CreateNamedStruct" and _is_window(e) for e in column)
            rel.text[key] = (
                window_text(column, child)
                if windows
                else text(column[0], child)
                if column
                else str(attr.fields.get("name"))
            )
            rel.output.append(key)
        return rel

    def _add(self, node: Node, kind: str, rel: Rel, keys: list[Expr] | None = None,
             values: list[tuple[str, str, str]] | None = None, join: str | None = None,
             sides: Any = None, unknown: str | None = None) -> None:  # fmt: skip
        keys = [k for k in keys or [] if k is not None]
        op: dict[str, Any] = {
            "kind": kind,
            "keys": [canon(k, rel) for k in keys],
            "key-text": [text(k, rel) for k in keys],
            "key-names": [str(k.fields.get("name") or text(k, rel)) for k in keys],
            "values": [v[0] for v in values or []],
            "value-text": [v[1] for v in values or []],
            "value-names": [v[2] for v in values or []],
            "watermarks": [list(w) for w in rel.watermarks],
            "before": [b[0] for b in rel.before],
            "before-text": [b[1] for b in rel.before],
        }
        if join is not None:
            op["join"] = join
            op["sides"] = [[rel.canon.get(k, UNKNOWN) for k in side] for side in sides or []]
        sides_canon = [c for side in op.get("sides", []) for c in side]
        marks = [w[0] + w[2] for w in rel.watermarks]
        meaning = [*op["keys"], *op["values"], *marks, *sides_canon]
        if unknown is None and any(UNKNOWN in part for part in meaning):
            unknown = (
                "it is computed by something whose meaning cannot be compared (a "
                "user-defined function, or an operator this reading does not follow)"
            )
        if unknown is not None:
            op["unknown"] = unknown
        self.operators.append(op)


def _aliased(node: Node, alias: str | None) -> None:
    if node.cls == "SubqueryAlias":
        ident = node.fields.get("identifier")
        alias = str(ident.get("name")) if isinstance(ident, dict) else alias
    node.alias = alias
    for child in node.children:
        _aliased(child, alias)


def stateful_operators(
    plan: list[dict[str, Any]], delays: list[str], sources: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The stateful operators of an analysed plan (its `toJSON`), bottom up, each with what its
    state means; `delays`: its watermarks' delays, in the plan's pre-order; `sources`: by view
    name, what each source reads (its format, path or topics), so that a source that reads
    something else under the same name is another source."""
    root = _tree(plan, 0, Node)[0]
    _aliased(root, None)
    watermarks = [n for n in _preorder(root) if n.cls == "EventTimeWatermark"]
    for node, delay in zip(watermarks, delays, strict=False):
        node.fields["delay"] = delay  # the JSON leaves it out (a CalendarInterval)
    reader = _Reader(sources or {})
    reader.read(root)
    return reader.operators


def _preorder(node: Node) -> list[Node]:
    found = [node]
    for child in node.children:
        found.extend(_preorder(child))
    return found
