"""The lineage drawn as SVG on the server: no script, nothing fetched, each node a link.

Jobs and tables are boxes in columns, data flowing left to right: a table a job reads is to its
left, the table it writes to its right. Each column is a layer by the longest path from a node
nothing feeds (a cycle's closing edge is left out of that count, and drawn all the same);
within a column, nodes are ordered by the mean position of their neighbours, a few sweeps each
way, to keep edges short and few crossing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from flink_sql_runner.model.lineage import Lineage

WIDTH, HEIGHT = 200, 40
GAP_X, GAP_Y, MARGIN = 80, 18, 10
LABEL_LIMIT = 26
SWEEPS = 4


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # "job" or "table"
    name: str
    href: str
    #: A word shown under the name (a table's format, a job's health).
    note: str
    #: CSS classes beyond the kind (a job's health; the job the view is centred on).
    classes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drawing:
    nodes: dict[str, Node]
    edges: list[tuple[str, str]]

    @property
    def empty(self) -> bool:
        return not self.nodes


def lineage_drawing(
    lineage: Lineage,
    health: Mapping[str, str | None],
    href_job: str,
    href_table: str,
    focus: str | None = None,
    changed: frozenset[str] | set[str] = frozenset(),
) -> Drawing:
    """The jobs and tables to draw (with `focus`, a job: it, what feeds it and what it feeds,
    all the way, with the tables between); `href_job`/`href_table` are formats with `{}` for
    the URL-quoted name; `changed`: jobs outlined (a plan's, that act)."""
    names = set(lineage.jobs)
    if focus is not None:
        names = {focus, *lineage.upstream(focus), *lineage.downstream(focus)} & names
    nodes: dict[str, Node] = {}
    edges: list[tuple[str, str]] = []

    def table(name: str) -> str:
        key = f"t:{name}"
        if key not in nodes:
            found = lineage.tables.get(name)
            note = (found.format or "catalog table") if found is not None else ""
            nodes[key] = Node(key, "table", name, href_table.format(quote(name, safe="")), note)
        return key

    for name in sorted(names):
        job = lineage.jobs[name]
        state = health.get(name)
        marks = (
            f"health-{state}" if state else "",
            "focus" if name == focus else "",
            "changed" if name in changed else "",
        )
        classes = tuple(c for c in marks if c)
        key = f"j:{name}"
        nodes[key] = Node(
            key, "job", name, href_job.format(quote(name, safe="")), state or "not seen", classes
        )
        edges += [(table(t), key) for t in sorted(set(job.reads))]
        edges.append((key, table(job.writes)))
    for link in lineage.links:
        if link.table != link.read_as and {link.producer, link.consumer} <= names:
            edges.append((table(link.table), table(link.read_as)))
    return Drawing(nodes, sorted(set(edges)))


def _layers(drawing: Drawing) -> list[list[str]]:
    ids = sorted(drawing.nodes)
    succ: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in drawing.edges:
        succ[a].append(b)
    # Edges that close a cycle (back edges of a depth-first walk) do not count for layers.
    state: dict[str, int] = {}
    forward: dict[str, list[str]] = {n: [] for n in ids}
    for start in ids:
        if start in state:
            continue
        stack = [(start, iter(sorted(succ[start])))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                continue  # a back edge
            else:
                forward[node].append(child)
                if child not in state:
                    state[child] = 1
                    stack.append((child, iter(sorted(succ[child]))))
    into = {n: 0 for n in ids}
    for n in ids:
        for m in forward[n]:
            into[m] += 1
    layer = {n: 0 for n in ids}
    ready = [n for n in ids if into[n] == 0]
    while ready:
        n = ready.pop()
        for m in forward[n]:
            layer[m] = max(layer[m], layer[n] + 1)
            into[m] -= 1
            if into[m] == 0:
                ready.append(m)
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in ids:
        columns[layer[n]].append(n)
    return columns


def _order(columns: list[list[str]], edges: list[tuple[str, str]]) -> list[list[str]]:
    preds: dict[str, list[str]] = {}
    succs: dict[str, list[str]] = {}
    for a, b in edges:
        succs.setdefault(a, []).append(b)
        preds.setdefault(b, []).append(a)
    place = {n: i for column in columns for i, n in enumerate(column)}

    def sweep(column: list[str], neighbours: dict[str, list[str]]) -> list[str]:
        def key(n: str) -> tuple[float, str]:
            near = [place[m] for m in neighbours.get(n, []) if m in place]
            return (sum(near) / len(near) if near else place[n], n)

        ordered = sorted(column, key=key)
        for i, n in enumerate(ordered):
            place[n] = i
        return ordered

    for _ in range(SWEEPS):
        columns = [columns[0], *(sweep(c, preds) for c in columns[1:])] if columns else columns
        columns = [*(sweep(c, succs) for c in columns[:-1]), columns[-1]] if columns else columns
    return columns


def _label(text: str) -> str:
    return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "\u2026"


def lineage_svg(drawing: Drawing, title: str) -> str:
    """The drawing as an inline SVG element (every text escaped)."""
    columns = _order(_layers(drawing), drawing.edges)
    where: dict[str, tuple[int, int]] = {}
    for x, column in enumerate(columns):
        for y, node in enumerate(column):
            where[node] = (MARGIN + x * (WIDTH + GAP_X), MARGIN + y * (HEIGHT + GAP_Y))
    width = MARGIN * 2 + max(len(columns), 1) * (WIDTH + GAP_X) - GAP_X
    height = MARGIN * 2 + max((len(c) for c in columns), default=1) * (HEIGHT + GAP_Y) - GAP_Y
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lineage" '
        f'aria-labelledby="lineage-title" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f'<title id="lineage-title">{escape(title)}</title>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
        "</marker></defs>",
    ]
    for a, b in drawing.edges:
        (x1, y1), (x2, y2) = where[a], where[b]
        sx, sy, ex, ey = x1 + WIDTH, y1 + HEIGHT / 2, x2, y2 + HEIGHT / 2
        if ex <= sx:  # an edge back to the left (a cycle): around, from below
            out.append(
                f'<path class="edge back" d="M {sx} {sy} C {sx + 60} {sy + 80}, {ex - 60} '
                f'{ey + 80}, {ex} {ey}" marker-end="url(#arrow)"/>'
            )
        else:
            mid = (sx + ex) / 2
            out.append(
                f'<path class="edge" d="M {sx} {sy} C {mid} {sy}, {mid} {ey}, {ex} {ey}" '
                f'marker-end="url(#arrow)"/>'
            )
    for key in sorted(where):
        node = drawing.nodes[key]
        x, y = where[key]
        classes = " ".join(("node", node.kind, *node.classes))
        out.append(
            f'<a href="{escape(node.href)}" class="{escape(classes)}">'
            f"<title>{escape(node.kind)} {escape(node.name)}: {escape(node.note)}</title>"
            f'<rect x="{x}" y="{y}" width="{WIDTH}" height="{HEIGHT}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 17}" class="name">{escape(_label(node.name))}</text>'
            f'<text x="{x + 8}" y="{y + 33}" class="note">{escape(_label(node.note))}</text></a>'
        )
    out.append("</svg>")
    return "\n".join(out)
