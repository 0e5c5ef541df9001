"""The lineage for people (text), machines (JSON) and diagrams (Mermaid, Graphviz DOT).

Diagrams draw jobs as boxes and tables as cylinders: an arrow from a table to each job that
reads it, from each job to the table it writes, and a dashed arrow from a table to another
catalog entry that holds the same data (a source declared on another job's sink folder).
Every name is escaped for the diagram's language; node ids are generated (`job1`, `table1`),
so no job or table name can be taken for a keyword.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass

from flink_sql_runner.model.lineage import FOLDER, Lineage, TableNode
from flink_sql_runner.read.sinks import SinkId

OUTPUTS = ("text", "json", "mermaid", "dot")


def render_lineage(lineage: Lineage, output: str, base: str | None = None) -> str:
    """`lineage` in one of `OUTPUTS`; folders under `base` are shown relative to it (not in
    JSON, which keeps them whole)."""
    if output == "json":
        return json.dumps(lineage.to_dict(), indent=2)
    if output == "mermaid":
        return lineage_mermaid(lineage)
    if output == "dot":
        return lineage_dot(lineage)
    return lineage_text(lineage, base)


def shown_place(place: SinkId, base: str | None = None) -> str:
    where = place.where
    if base and place.kind == FOLDER and where.startswith(base.rstrip("/") + "/"):
        where = where[len(base.rstrip("/")) + 1 :]
    return f"{place.kind} {where}"


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _names(names: Collection[str]) -> str:
    return ", ".join(names) if names else "-"


def lineage_text(lineage: Lineage, base: str | None = None) -> str:
    if not lineage.jobs and not lineage.tables:
        return "No jobs."
    lines: list[str] = []
    if lineage.jobs:
        rows = [("JOB", "READS", "WRITES", "FEEDS")]
        for job in lineage.jobs.values():
            feeds = sorted({lk.consumer for lk in lineage.links_from(job.name)})
            name = job.name + (" (stored only)" if job.stored_only else "")
            rows.append((name, _names(job.reads), job.writes, _names(feeds)))
        lines += _columns(rows) + [""]
    rows = [("TABLE", "FORMAT", "WHERE", "WRITTEN BY", "READ BY")]
    for table in lineage.tables.values():
        where = "; ".join(shown_place(p, base) for p in table.places) or "-"
        rows.append(
            (
                table.name,
                table.format or "-",
                where,
                _names(table.written_by),
                _names(table.read_by),
            )
        )
    lines += _columns(rows) + [""]
    if lineage.links:
        lines.append("Links (who feeds whom):")
        for link in lineage.links:
            how = "" if link.read_as == link.table else f", read as {link.read_as} ({link.via})"
            lines.append(f"  {link.producer} -> {link.consumer}: {link.table}{how}")
    else:
        lines.append("Links (who feeds whom): none")
    lines.append(f"Unused tables: {', '.join(lineage.unused_tables) or 'none'}")
    if lineage.cycles:
        for cycle in lineage.cycles:
            lines.append(f"Cycle: {' -> '.join((*cycle, cycle[0]))}")
    else:
        lines.append("Cycles: none")
    return "\n".join(lines)


# -- diagrams ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Graph:
    """What a diagram draws, with generated ids: the nodes, the edges and each node's class."""

    jobs: dict[str, str]  # name -> id
    tables: dict[str, str]
    edges: list[tuple[str, str, str]]  # from id, to id, label ("" for a plain arrow)
    classes: dict[str, str]  # id -> class


#: Node classes, strongest first: a node gets the first that applies.
JOB_CLASSES = ("changed", "downstream", "cycle", "stored")
STYLES = {
    "changed": ("fill:#ffebe9,stroke:#cf222e,stroke-width:3px", "#ffebe9", "#cf222e"),
    "downstream": ("fill:#fff8c5,stroke:#9a6700,stroke-width:2px", "#fff8c5", "#9a6700"),
    "cycle": ("stroke:#cf222e,stroke-width:2px,stroke-dasharray:6 3", None, "#cf222e"),
    "stored": ("stroke-dasharray:4 4", None, None),
    "unused": ("fill:#ffffff,stroke:#8c959f,stroke-dasharray:4 4,color:#57606a", None, "#8c959f"),
}


def _graph(
    lineage: Lineage,
    changed: Collection[str] = (),
    downstream: Collection[str] = (),
    only: Collection[str] | None = None,
    tables_too: bool = True,
) -> _Graph:
    """What to draw: with `only`, just those jobs (and the tables they use); without
    `tables_too`, jobs alone, those linked to another, an arrow from producer to consumer."""
    only = None if only is None else set(only)  # sets: each job is looked up, not searched for
    changed, downstream, unused = set(changed), set(downstream), set(lineage.unused_tables)
    jobs = [j for j in lineage.jobs.values() if only is None or j.name in only]
    links = [lk for lk in lineage.links if only is None or {lk.producer, lk.consumer} <= only]
    if not tables_too:
        linked = {name for lk in links for name in (lk.producer, lk.consumer)}
        jobs = [j for j in jobs if j.name in linked]
    used = {t for j in jobs for t in (*j.reads, j.writes)} if tables_too else set()
    tables = [
        t
        for t in lineage.tables.values()
        if t.name in used or (tables_too and only is None and t.name in unused)
    ]
    job_ids = {job.name: f"job{i}" for i, job in enumerate(jobs, 1)}
    table_ids = {table.name: f"table{i}" for i, table in enumerate(tables, 1)}
    edges: list[tuple[str, str, str]] = []
    if tables_too:
        for job in jobs:
            edges += [(table_ids[t], job_ids[job.name], "") for t in job.reads]
            edges.append((job_ids[job.name], table_ids[job.writes], ""))
        aliases = sorted({(lk.table, lk.read_as, lk.via) for lk in links if lk.table != lk.read_as})
        edges += [(table_ids[a], table_ids[b], via) for a, b, via in aliases]
    else:
        pairs = sorted({(lk.producer, lk.consumer) for lk in links})
        edges += [(job_ids[a], job_ids[b], "") for a, b in pairs]
    classes: dict[str, str] = {}
    for job in jobs:
        found = {
            "changed": job.name in changed,
            "downstream": job.name in downstream,
            "cycle": lineage.in_cycle(job.name),
            "stored": job.stored_only,
        }
        chosen = next((c for c in JOB_CLASSES if found[c]), None)
        if chosen:
            classes[job_ids[job.name]] = chosen
    for name in lineage.unused_tables:
        if name in table_ids:
            classes[table_ids[name]] = "unused"
    return _Graph(job_ids, table_ids, edges, classes)


def _table_label(table: TableNode, unused: bool) -> list[str]:
    kind = table.format or ("catalog table" if not table.places else "")
    lines = [table.name]
    if kind:
        lines.append(kind + (", unused" if unused else ""))
    elif unused:
        lines.append("unused")
    return lines


def _job_label(lineage: Lineage, name: str) -> list[str]:
    return [name, "stored only, not in git"] if lineage.jobs[name].stored_only else [name]


#: Characters written as HTML entities inside a quoted Mermaid label: `"` would end the label,
#: a leading backtick open a Markdown string, `<`/`&` start HTML, and `#...;` is Mermaid's own
#: entity syntax (which Mermaid 11.17 leaves undecoded in what it draws). Named entities hold no
#: `#`, so Mermaid passes them on and the browser shows the character.
MERMAID_ENTITIES = {
    '"': "&quot;",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "`": "&grave;",
    "#": "&num;",
    # Mermaid draws `\n` as a line break, even from entities: a zero-width space keeps a
    # backslash from reaching the next character.
    "\\": "&bsol;\u200b",
    "\n": " ",
    "\r": " ",
}


def mermaid_text(text: str) -> str:
    """`text` safe inside a quoted Mermaid label, shown as written."""
    return "".join(MERMAID_ENTITIES.get(c, c) for c in text)


#: Mermaid's defaults (`maxEdges`, `maxTextSize`), which the renderers of GitHub and GitLab
#: keep: a diagram past either is not drawn.
MERMAID_MAX_EDGES = 500
MERMAID_MAX_TEXT = 50_000


@dataclass(frozen=True)
class Diagram:
    text: str
    note: str  # what the diagram leaves out, "" when nothing
    nodes: int


def lineage_mermaid(
    lineage: Lineage, changed: Collection[str] = (), downstream: Collection[str] = ()
) -> str:
    """A Mermaid flowchart; `changed` and `downstream` jobs are highlighted. A lineage too
    large for one diagram is drawn smaller (`mermaid_diagram`), saying so in a comment."""
    return mermaid_diagram(lineage, changed, downstream).text


def mermaid_diagram(
    lineage: Lineage, changed: Collection[str] = (), downstream: Collection[str] = ()
) -> Diagram:
    """Jobs and tables when they fit in Mermaid's limits; else only the changed jobs and those
    downstream of them (when there are such); else jobs alone, those linked to another."""
    focus = {*changed, *downstream} or None
    too_large = "the whole lineage is too large for one Mermaid diagram"
    tries: list[tuple[Collection[str] | None, bool, str]] = [(None, True, "")]
    if focus:
        tries.append((focus, True, f"only the changed jobs and those downstream: {too_large}"))
    who = "the changed jobs and those downstream" if focus else "jobs"
    tries.append((focus, False, f"only {who} linked to another, no tables: {too_large}"))
    for only, tables_too, note in tries:
        graph = _graph(lineage, changed, downstream, only, tables_too)
        text = _mermaid(lineage, graph, note)
        if len(graph.edges) <= MERMAID_MAX_EDGES and len(text) <= MERMAID_MAX_TEXT:
            return Diagram(text, note, len(graph.jobs) + len(graph.tables))
    note += f"; still {len(graph.edges)} arrows, more than Mermaid draws (use --output dot)"
    return Diagram(_mermaid(lineage, graph, note), note, len(graph.jobs) + len(graph.tables))


def _mermaid(lineage: Lineage, graph: _Graph, note: str = "") -> str:
    lines = ["flowchart LR"]
    if note:
        lines.append(f"  %% {note}")
    for name, node in graph.tables.items():
        label = "<br/>".join(
            mermaid_text(t)
            for t in _table_label(lineage.tables[name], name in lineage.unused_tables)
        )
        lines.append(f'  {node}[("{label}")]')
    for name, node in graph.jobs.items():
        label = "<br/>".join(mermaid_text(t) for t in _job_label(lineage, name))
        lines.append(f'  {node}["{label}"]')
    for start, end, label in graph.edges:
        arrow = f"-.->|{mermaid_text(label)}|" if label else "-->"
        lines.append(f"  {start} {arrow} {end}")
    used = sorted(set(graph.classes.values()), key=list(STYLES).index)
    for name in used:
        lines.append(f"  classDef {name} {STYLES[name][0]}")
        members = sorted((n for n, c in graph.classes.items() if c == name), key=_id_order)
        lines.append(f"  class {','.join(members)} {name}")
    return "\n".join(lines)


def _id_order(node: str) -> tuple[str, int]:
    kind = node.rstrip("0123456789")
    return kind, int(node[len(kind) :])


def dot_text(text: str) -> str:
    """`text` inside a double-quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def lineage_dot(lineage: Lineage) -> str:
    """A Graphviz digraph (`dot -Tsvg` draws it)."""
    graph = _graph(lineage)
    lines = [
        "digraph lineage {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for name, node in graph.tables.items():
        label = "\\n".join(
            dot_text(t) for t in _table_label(lineage.tables[name], name in lineage.unused_tables)
        )
        lines.append(f'  {node} [label="{label}", shape=cylinder{_dot_style(graph, node)}];')
    for name, node in graph.jobs.items():
        label = "\\n".join(dot_text(t) for t in _job_label(lineage, name))
        lines.append(f'  {node} [label="{label}", shape=box{_dot_style(graph, node)}];')
    for start, end, label in graph.edges:
        extra = f' [style=dashed, label="{dot_text(label)}"]' if label else ""
        lines.append(f"  {start} -> {end}{extra};")
    lines.append("}")
    return "\n".join(lines)


def _dot_style(graph: _Graph, node: str) -> str:
    kind = graph.classes.get(node)
    if kind is None:
        return ""
    _, fill, color = STYLES[kind]
    styles = ["filled"] if fill else []
    if kind in ("cycle", "stored", "unused"):
        styles.append("dashed")
    out = f', style="{",".join(styles)}"' if styles else ""
    out += f', fillcolor="{fill}"' if fill else ""
    out += f', color="{color}"' if color else ""
    return out
