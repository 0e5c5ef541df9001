"""A plan given to the page (`ui --plan FILE`): a saved plan (`plan --out`) or a plan's JSON
(`plan --output json`), shown as the pull request's Markdown shows it (render/plan_doc.py).

The file is read again each time its page is asked for, and is taken as hostile: one that is
not a plan says why in one line naming the field, and nothing of it reaches the page unescaped
(render/markdown_html.py lets no tag of the document's own through). A saved plan's signature
or approval is not checked here (`deploy --plan` checks them): the page says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flink_sql_runner.host import runtime
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.render.markdown_html import MERMAID_CLASS, markdown_html
from flink_sql_runner.render.plan_doc import BadPlanDocument, ShownPlanDoc, read_plan_json
from flink_sql_runner.ui.graph_svg import lineage_drawing, lineage_svg

#: A plan file larger than this is not read (a plan of 10,000 jobs is about 20 MB).
MAX_BYTES = 64 * 1024 * 1024


#: Each plan file's page as last made, by path, under the file's size and modification time: a
#: file that did not change is not read, checked and rendered again (a plan of 10,000 jobs
#: costs seconds of CPU).
_made: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
_made_lock = runtime.lock()


def plan_page(path: Path) -> dict[str, Any]:
    """The page of the plan file at `path`: made again only when the file changed."""
    try:
        stat = path.stat()
    except OSError as exc:
        return {"path": str(path), "html": None, "note": None,
                "error": f"{path}: cannot be read: {exc.strerror or exc}"}  # fmt: skip
    key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _made_lock:
        kept = _made.get(str(path))
        if kept is not None and kept[0] == key:
            return kept[1]
        page = _page(path)
        _made[str(path)] = (key, page)
        return page


def _page(path: Path) -> dict[str, Any]:
    shown: dict[str, Any] = {"path": str(path), "html": None, "error": None, "note": None}
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        shown["error"] = f"{path}: cannot be read: {exc.strerror or exc}"
        return shown
    if len(data) > MAX_BYTES:
        shown["error"] = f"{path}: larger than {MAX_BYTES // 1024 // 1024} MiB: not read"
        return shown
    try:
        plan = read_plan_json(data)
    except BadPlanDocument as exc:
        shown["error"] = f"{path}: {redact_text(str(exc).splitlines()[0])}"
        return shown
    shown["html"] = _drawn(markdown_html(plan.markdown), plan)
    shown["note"] = redact_text(plan.note)
    return shown


def _drawn(html: str, plan: ShownPlanDoc) -> str:
    """The Markdown's Mermaid lineage drawn as the lineage page draws it (GitHub draws the
    Mermaid block; the page has no script to): each job's note its action in the plan, the jobs
    that act outlined."""
    block = re.compile(rf'<pre><code class="{MERMAID_CLASS}">.*?</code></pre>', re.S)
    if plan.lineage is None or not block.search(html):
        return html
    acting = {name for name, action in plan.actions.items() if action != "noop"}
    drawing = lineage_drawing(plan.lineage, plan.actions, "/jobs/{}", "/tables/{}", changed=acting)
    svg = lineage_svg(drawing, "The plan's lineage")
    label = 'class="graph" tabindex="0" role="region" aria-label="The plan&#39;s lineage"'
    figure = f"<div {label}>{svg}</div>"
    return block.sub(lambda _: figure, html, count=1)
