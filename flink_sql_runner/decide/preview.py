"""What a query change does to the rows it writes, from the preview probe's answer
(runner/preview_probe.py): pure computing, no Spark.

Rows are compared on the columns both queries write, the metadata columns left out (their
values differ by version, and the creation time by run; so are their copies the runner adds to a
Kafka sink's `headers`, the query's own headers kept): as multisets, so a row written twice
by one side and once by the other counts once as only that side's. A column whose type changed
is compared by its text (a BIGINT 9500 and a STRING "9500" are one value). Where the sink has a
key (a Kafka sink's `key`, or the columns given with `--key`), a row only one side writes whose
key the other side writes too is a changed row, not a new or a lost one.

What the preview shows of values (its samples, changed rows, each column's least and greatest
value) has every secret masked (read/secrets.py `mask`: a secret-named column or field at any
depth, a value assigning a secret), whatever it is shown as.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from flink_sql_runner._runner.schema_rules import compare, describe
from flink_sql_runner.model.preview import ColumnDiff, ColumnStats, Preview, PreviewFacts, Side
from flink_sql_runner.read.secrets import mask

#: The columns the runner adds after the query's own (runner/query.py), the creation time's
#: default name among them.
METADATA_COLUMNS = ("__create_timestamp", "__query_name", "__query_description", "__query_id",
                    "__query_version", "__query_create_timestamp")  # fmt: skip


def judge_preview(facts: PreviewFacts, rows: int) -> Preview:
    """The preview of `facts`: what went in, each side's output, the schema's verdict (by the
    job's `on-schema-change` policy, against what the old version writes), the rows only one
    side writes and those changed by key (`rows` of each as a sample), and the columns whose
    figures differ; or why there is none."""
    answer = facts.answer
    spark = str(answer["spark"]) if answer.get("spark") else None
    seconds = {str(k): float(v) for k, v in (answer.get("seconds") or {}).items()}
    preview = Preview(facts.name, facts.old_version, facts.new_version, facts.slice,
                      policy=facts.policy, key=facts.key, spark=spark, seconds=seconds)  # fmt: skip
    if facts.slice.missing or facts.skipped:
        return replace(preview, unavailable=facts.skipped or f"no slice: {facts.slice.missing}")
    if answer.get("too-many"):
        too = answer["too-many"]
        why = (f"{too.get('where')} holds more than {too.get('limit')} rows (--max-rows); "
               "nothing compared: ask for fewer --batches or a higher --max-rows")  # fmt: skip
        return replace(preview, unavailable=why)
    if answer.get("error"):
        return replace(preview, unavailable=f"the slice could not be read: {answer['error']}")
    watermarks = facts.watermarks
    sink_format, created_column = facts.sink_format, facts.created_column
    inputs = {str(k): int(v) for k, v in (answer.get("inputs") or {}).items()}
    skip = set(METADATA_COLUMNS) | {created_column}
    own = functools.partial(own_headers, sink_format=sink_format, runners=skip)
    if facts.old_version is None:
        return new_job(replace(preview, inputs=inputs), own(Side.from_dict(answer.get("new"))),
                       skip, rows, watermarks)  # fmt: skip
    old, new = own(Side.from_dict(answer.get("old"))), own(Side.from_dict(answer.get("new")))
    preview = replace(preview, inputs=inputs, old=old, new=new)
    notes = stateful_notes(old, new, watermarks)
    if old.error or new.error:
        return replace(preview, notes=tuple(notes))
    change = compare([list(old.fields)], list(new.fields), sink_format)
    refused = change["verdict"] == "breaking" and preview.policy != "allow"
    refused = refused or (preview.policy == "fail" and change["verdict"] == "additive")
    shared = [n for n in old.names if n in new.names and n not in skip]
    retyped = {str(r["name"]) for r in change["retyped"]}
    key = tuple(k for k in preview.key if k in shared)
    only_new, only_old = _only(new, old, shared, retyped), _only(old, new, shared, retyped)
    changed: list[dict[str, Any]] = []
    if key:
        only_new, only_old, changed = _by_key(only_new, only_old, key, new, old, retyped, skip)
    return replace(
        preview,
        verdict=change["verdict"],
        schema_change=change,
        schema_summary=describe(change) if change["verdict"] != "same" else "",
        refused=refused,
        key=key,
        only_new=len(only_new),
        only_old=len(only_old),
        changed=len(changed),
        only_new_sample=tuple(_shown(new, r, skip) for r in only_new[:rows]),
        only_old_sample=tuple(_shown(old, r, skip) for r in only_old[:rows]),
        changed_sample=tuple(changed[:rows]),
        columns=tuple(column_diffs(old, new, skip)),
        notes=tuple(notes),
    )


def new_job(
    preview: Preview, new: Side, skip: set[str], rows: int, watermarks: dict[str, tuple[str, str]]
) -> Preview:
    """A new job's preview: its query alone (no old side, no schema to judge against), every
    row it writes its own."""
    notes = tuple(stateful_notes(Side(), new, watermarks))
    preview = replace(preview, new=new, notes=notes)
    if new.error:
        return preview
    return replace(
        preview,
        only_new=len(new.rows),
        only_new_sample=tuple(_shown(new, r, skip) for r in new.rows[:rows]),
        columns=tuple(column_diffs(Side(), new, skip)),
    )


def own_headers(side: Side, sink_format: str | None, runners: set[str]) -> Side:
    """`side` with the headers the runner adds to a Kafka sink's records (a copy of each
    metadata column, named by it: runner/query.py `_as_headers`) taken out of its `headers`
    column, the query's own headers kept: they differ by version as the metadata columns do."""
    if sink_format != "kafka" or "headers" not in side.names or not side.rows:
        return side
    at = side.names.index("headers")

    def kept(headers: Any) -> Any:
        if not isinstance(headers, list):
            return headers
        return [h for h in headers if not (isinstance(h, dict) and h.get("key") in runners)]

    rows = tuple((*r[:at], kept(r[at]), *r[at + 1 :]) for r in side.rows)
    return replace(side, rows=rows)


def _identity(side: Side, row: Sequence[Any], shared: list[str], retyped: set[str]) -> str:
    at = {n: i for i, n in enumerate(side.names)}
    values = [_text(row[at[n]]) if n in retyped else row[at[n]] for n in shared]
    return json.dumps(values, sort_keys=True, default=str)


def _text(value: Any) -> Any:
    """A value as the text a cast to STRING gives (near enough to tell one value from another
    across a type change)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _only(side: Side, other: Side, shared: list[str], retyped: set[str]) -> list[tuple[Any, ...]]:
    """The rows of `side` that `other` does not write (as multisets, on the shared columns)."""
    left = Counter(_identity(other, r, shared, retyped) for r in other.rows)
    found = []
    for row in side.rows:
        ident = _identity(side, row, shared, retyped)
        if left[ident] > 0:
            left[ident] -= 1
        else:
            found.append(row)
    return found


def _by_key(
    only_new: list[tuple[Any, ...]],
    only_old: list[tuple[Any, ...]],
    key: tuple[str, ...],
    new: Side,
    old: Side,
    retyped: set[str],
    skip: set[str],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[dict[str, Any]]]:
    """Rows of one side only whose key the other side's only rows have too: changed, in the
    columns other than `skip` (the metadata columns, the job's creation time's among them)."""
    key_list = list(key)
    olds: dict[str, tuple[Any, ...]] = {}
    for row in only_old:
        olds.setdefault(_identity(old, row, key_list, retyped), row)
    changed, kept_new, matched = [], [], set()
    for row in only_new:
        ident = _identity(new, row, key_list, retyped)
        if ident in olds and ident not in matched:
            matched.add(ident)
            before = dict(zip(old.names, olds[ident], strict=True))
            after = dict(zip(new.names, row, strict=True))
            differ = sorted(
                n
                for n in set(before) | set(after)
                if n not in skip and before.get(n) != after.get(n)
            )  # fmt: skip
            columns = {n: [mask(before.get(n), n), mask(after.get(n), n)] for n in differ}
            changed.append({"key": mask({k: after[k] for k in key}), "columns": columns})
        else:
            kept_new.append(row)
    kept_old = [r for r in only_old if _identity(old, r, key_list, retyped) not in matched]
    return kept_new, kept_old, changed


def _shown(side: Side, row: Sequence[Any], skip: set[str]) -> dict[str, Any]:
    """A row as the preview shows it: by column, metadata left out, secrets masked."""
    return mask({n: v for n, v in zip(side.names, row, strict=True) if n not in skip})


def stats(values: Iterable[Any]) -> ColumnStats:
    """Nulls, distinct values, least and greatest value (JSON values; mixed kinds ordered by
    kind first)."""
    seen = [v for v in values]
    present = [v for v in seen if v is not None]
    keys = {json.dumps(v, sort_keys=True, default=str) for v in present}
    ordered = sorted(
        (v for v in present if not isinstance(v, (dict, list))), key=lambda v: (_rank(v), v)
    )
    return ColumnStats(
        len(seen) - len(present),
        len(keys),
        ordered[0] if ordered else None,
        ordered[-1] if ordered else None,
    )


def _rank(value: Any) -> int:
    return 0 if isinstance(value, (bool, int, float)) else 1


def column_diffs(old: Side, new: Side, skip: set[str]) -> list[ColumnDiff]:
    """The columns (of either side, metadata left out) whose figures differ, or that only one
    side writes."""
    found = []
    names = [n for n in new.names if n not in skip]
    names += [n for n in old.names if n not in skip and n not in names]
    for name in names:
        before = stats(_column(old, name)) if name in old.names else None
        after = stats(_column(new, name)) if name in new.names else None
        if before != after:
            found.append(ColumnDiff(name, _masked(before, name), _masked(after, name)))
    return found


def _masked(found: ColumnStats | None, name: str) -> ColumnStats | None:
    """Figures as shown: the least and greatest value masked where secret (compared before)."""
    if found is None:
        return None
    least, most = (None if v is None else mask(v, name) for v in (found.min, found.max))
    return replace(found, min=least, max=most)


def _column(side: Side, name: str) -> list[Any]:
    at = side.names.index(name)
    return [row[at] for row in side.rows]


def stateful_notes(old: Side, new: Side, watermarks: dict[str, tuple[str, str]]) -> list[str]:
    """What running a stateful query as a batch query on the slice means, said where a side
    has a stateful operator."""
    operators = list(dict.fromkeys([*old.stateful, *new.stateful]))
    if not operators:
        return []
    notes = [
        f"stateful ({', '.join(operators)}): run as a batch query on the slice, so windows and "
        "groups are cut at its edges: rows before its first batch, and the state the running "
        "version keeps from them, are not counted, and a window still open at its end is shown "
        "as if it had closed"
    ]
    for view, (column, delay) in sorted(watermarks.items()):
        notes.append(
            f"the watermark of {view} ({column}, delay {delay}) is not applied: a batch query "
            "keeps the late rows a stream drops, and in append mode writes windows the stream "
            "would write only once the watermark passes their end"
        )
    if "Join" in operators:
        notes.append("a join matches only rows that are both in the slice")
    return notes
