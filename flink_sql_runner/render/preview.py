"""A query change's preview (`preview NAME`, `plan --preview`) as text, JSON and Markdown: the
slice it ran on, rows in and out, the schema of each side and the contract's verdict, the rows
only one side writes and those changed by key, and the columns whose figures differ."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.preview import METADATA_COLUMNS
from flink_sql_runner.model.preview import ColumnStats, Preview, Side
from flink_sql_runner.read.secrets import MASK, is_secret_key
from flink_sql_runner.render.markdown import text

VALUE_LIMIT = 60
#: Spark's error class (`[CAST_INVALID_INPUT]`, `[UNRESOLVED_COLUMN.WITH_SUGGESTION]`) and its
#: SQLSTATE, all a Markdown without rows says of a query's error: the rest may quote rows.
ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")
SQLSTATE = re.compile(r"SQLSTATE:\s*([0-9A-Z]{5})")
#: A quoted literal in an error ('sk-live-1', "x"): masked where rows are not shown.
QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def _value(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    shown = " ".join(str(shown).split())
    return shown if len(shown) <= VALUE_LIMIT else shown[: VALUE_LIMIT - 3] + "..."


def _row(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in row.items())


def _schema(fields: tuple[dict[str, Any], ...]) -> str:
    """The query's own columns; the metadata columns the runner adds counted."""
    own = [f for f in fields if f["name"] not in METADATA_COLUMNS]
    shown = ", ".join(f"{f['name']} {f['type']}" for f in own)
    added = len(fields) - len(own)
    return f"{shown} + {added} metadata columns" if added else shown


def _stats(found: ColumnStats | None) -> str:
    if found is None:
        return "(no such column)"
    span = f", min {_value(found.min)}, max {_value(found.max)}" if found.min is not None else ""
    return f"{found.nulls} null, {found.distinct} distinct{span}"


def verdict_line(preview: Preview) -> str:
    verdict = preview.verdict or "unknown"
    line = f"{verdict} (on-schema-change: {preview.policy})"
    if verdict not in ("same", "unknown"):
        line += f": {preview.schema_summary}"
    if preview.refused:
        line += "; the plan refuses this change"
    return line


def headline(preview: Preview) -> str:
    """One line: what the new query writes differently."""
    if preview.unavailable:
        return f"not previewed: {preview.unavailable}"
    for side, name in ((preview.old, "old"), (preview.new, "new")):
        if side is not None and side.error:
            return f"the {name} query failed on the slice: {side.error}"
    if preview.old_version is None:
        return f"{preview.only_new} row(s) the new job writes"
    parts = [f"{preview.only_new} row(s) only the new query writes",
             f"{preview.only_old} only the old one wrote"]  # fmt: skip
    if preview.key:
        parts.append(f"{preview.changed} changed by {', '.join(preview.key)}")
    return "; ".join(parts)


def _writes(preview: Preview) -> str:
    return "the new job writes" if preview.old_version is None else "only the new query writes"


def preview_text(preview: Preview) -> str:
    versions = f"version {preview.old_version} -> {preview.new_version}"
    if preview.old_version is None:
        versions = f"a new job (version {preview.new_version})"
    lines = [f"preview of {preview.name}: {versions}"]
    if not preview.slice.missing:
        lines.append(f"  input: {preview.slice.describe()}")
    for part in preview.slice.parts:
        lines.append(f"    {part.describe()}")
    if preview.unavailable:
        lines.append(f"  {headline(preview)}")
        return "\n".join(lines)
    ins = ", ".join(f"{view} {rows}" for view, rows in preview.inputs.items())
    lines.append(f"  rows in: {ins or 'none'}")
    for side, label in ((preview.old, "old"), (preview.new, "new")):
        if side is None:
            continue
        if side.error:
            lines.append(f"  {label}: failed: {side.error}")
        else:
            lines.append(f"  {label}: {side.rows_out} row(s) out; {_schema(side.fields)}")
    if preview.verdict is not None:
        lines.append(f"  schema: {verdict_line(preview)}")
    lines.append(f"  {headline(preview)}")
    for title, sample in ((_writes(preview), preview.only_new_sample),
                          ("only the old query wrote", preview.only_old_sample)):  # fmt: skip
        if sample:
            lines.append(f"  {title} (sample):")
            lines += [f"    {_row(r)}" for r in sample]
    if preview.changed_sample:
        lines.append("  changed by key (sample):")
        for item in preview.changed_sample:
            cols = "; ".join(f"{n} {_value(a)} -> {_value(b)}" for n, (a, b) in
                             item["columns"].items())  # fmt: skip
            lines.append(f"    {_row(item['key'])}: {cols}")
    if preview.columns:
        lines.append("  columns that differ:")
        for col in preview.columns:
            lines.append(f"    {col.name}: old {_stats(col.old)}; new {_stats(col.new)}")
    lines += [f"  note: {n}" for n in preview.notes]
    lines.append("  nothing was written")
    return "\n".join(lines)


def preview_json(previews: list[Preview]) -> str:
    return json.dumps({"previews": [p.to_dict() for p in previews]}, indent=2, default=str)


def _md(value: Any) -> str:
    """A value in a Markdown table cell: a code span, `|` escaped."""
    shown = _value(value).replace("|", "\\|").replace("`", "'")
    return f"`{shown}`" if shown else "(empty)"


def _table(rows: tuple[dict[str, Any], ...]) -> list[str]:
    names = list(dict.fromkeys(n for r in rows for n in r))
    lines = ["| " + " | ".join(_md(n) for n in names) + " |",
             "|" + "---|" * len(names)]  # fmt: skip
    lines += ["| " + " | ".join(_md(r.get(n)) for n in names) + " |" for r in rows]
    return lines


def _masked(row: dict[str, Any]) -> dict[str, Any]:
    """A row with the values of the columns a secret's name names masked (read/secrets.py)."""
    return {n: MASK if is_secret_key(n) else v for n, v in row.items()}


def _counts(found: ColumnStats | None) -> str:
    return "(no such column)" if found is None else f"{found.nulls} null, {found.distinct} distinct"


def without_values(error: str) -> str:
    """An error as a Markdown without rows shows it: the first line, quoted literals masked."""
    first = error.strip().splitlines()[0] if error.strip() else error
    return QUOTED.sub(lambda m: m.group(0)[0] + MASK + m.group(0)[0], first)


def error_class(error: str, name: str) -> str:
    """A query's error as a Markdown without rows shows it: Spark's error class and SQLSTATE
    (or, without a class, its first line with quoted literals masked), and where to read it
    whole."""
    found, state = ERROR_CLASS.search(error), SQLSTATE.search(error)
    said = f"[{found.group(1)}]" if found else without_values(error)
    said += f" SQLSTATE: {state.group(1)}" if found and state else ""
    return f"{said} (`flink-sql-runner preview {name}` shows the whole error)"


def _without_rows(preview: Preview) -> Preview:
    """`preview` with what its errors could quote of rows left out (see `error_class`)."""

    def side(s: Side | None) -> Side | None:
        return replace(s, error=error_class(s.error, preview.name)) if s and s.error else s

    unavailable = without_values(preview.unavailable) if preview.unavailable else None
    return replace(preview, old=side(preview.old), new=side(preview.new), unavailable=unavailable)


def preview_markdown(preview: Preview, rows: bool = False) -> list[str]:
    """A collapsed section for one job, its headline as the summary (escaped as HTML: it is
    in a block of HTML, where Markdown's escapes are not read): for a pull request, so
    counts only unless `rows` (`--preview-rows`): then samples of rows and each column's min
    and max, secrets masked (decide/preview.py masks them for every format; a secret-named
    column's figures here are its counts). Without `rows` a query's error is shown
    by its class (`error_class`), the other errors with their quoted literals masked."""
    preview = preview if rows else _without_rows(preview)
    # Inside a block of HTML Markdown's escapes are not read: the summary is escaped as HTML.
    summary = html.escape(
        " ".join(f"Preview of {preview.name}: {headline(preview)}".split()), False
    )
    lines = ["", f"<details><summary>{summary}</summary>", ""]
    parts = "; ".join(p.describe() for p in preview.slice.parts)
    lines.append(f"Input: {text(preview.slice.describe() + (f' ({parts})' if parts else ''))}")
    if preview.unavailable is None:
        ins = ", ".join(f"{view} {rows}" for view, rows in preview.inputs.items())
        outs = [f"{label} {s.rows_out}" for s, label in ((preview.old, "old"),
                (preview.new, "new")) if s is not None and not s.error]  # fmt: skip
        lines += ["", f"Rows in: {text(ins or 'none')}; rows out: {text(', '.join(outs))}"]
        if preview.verdict is not None:
            lines += ["", f"Schema: {text(verdict_line(preview))}"]
        lines += _samples_markdown(preview) if rows else [
            "", "_Rows are not shown here (`--preview-rows` shows them)._"]  # fmt: skip
        if preview.columns:
            lines += ["", "| column | old | new |", "|---|---|---|"]
            for c in preview.columns:
                if rows and not is_secret_key(c.name):
                    old, new = _stats(c.old), _stats(c.new)
                else:
                    old, new = _counts(c.old), _counts(c.new)
                lines.append(f"| {_md(c.name)} | {text(old)} | {text(new)} |")
        lines += [f"\n_{text(n)}_" for n in preview.notes]
    lines += ["", "</details>"]
    return lines


def _samples_markdown(preview: Preview) -> list[str]:
    lines: list[str] = []
    for title, sample in ((_writes(preview).capitalize(), preview.only_new_sample),
                          ("Only the old query wrote", preview.only_old_sample)):  # fmt: skip
        if sample:
            lines += ["", f"{title} (sample):", "", *_table(tuple(_masked(r) for r in sample))]
    if preview.changed_sample:
        shown = tuple(
            _masked({**i["key"], **{n: f"{_value(a)} -> {_value(b)}"
                                    for n, (a, b) in i["columns"].items()}})
            for i in preview.changed_sample
        )  # fmt: skip
        lines += ["", "Changed by key (sample):", "", *_table(shown)]
    return lines


def previews_markdown(previews: list[Preview], rows: bool = False) -> list[str]:
    """The previews of a plan's changed queries, for its Markdown (`plan --preview`; rows
    only with `--preview-rows`)."""
    if not previews:
        return []
    lines = ["", "#### Previews", "", "What each changed query writes of the input its running "
             "version read last (nothing written; `flink-sql-runner preview NAME`)."]  # fmt: skip
    for preview in previews:
        lines += preview_markdown(preview, rows)
    return lines
