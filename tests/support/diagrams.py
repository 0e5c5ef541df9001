"""Reading what the CLI draws with the renderers' own parsers, to prove that it renders.

- Mermaid and Markdown: `tests/mermaid/check.mjs`, Mermaid's parser and marked's GitHub-flavoured
  Markdown lexer under Node.js (20+); its packages are pinned in `tests/mermaid/package-lock.json`
  and installed by `npm ci --prefix tests/mermaid` (`.ci/run` does it). One reader per pytest
  worker, kept running between tests and stopped at the session's end (`stop_reader`).
- Mermaid, drawn: the same Mermaid (its browser bundle from `tests/mermaid/node_modules`) in a
  headless Chromium (Debian's `chromium`; `.ci/run` installs it), which reads back each node's
  and arrow's text as a person would see it.
- Graphviz DOT: the `dot` program (Debian's `graphviz`; `.ci/run` installs it).

Neither is optional where they are asked for: without them these tests fail, saying what to
install. A test that draws takes `draw` from DRAWN: its `parsed` case reads with Node only and runs
with the whole suite; its `drawn` case also draws, with Chromium and Graphviz, and carries the
`diagrams` marker: `.ci/run` runs those in a stage of their own, after installing both.
"""

from __future__ import annotations

import atexit
import html
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO

CHECKER = REPO / "tests" / "mermaid"
#: `draw` for a test that draws: read only (Node), and read and drawn (Chromium, Graphviz).
DRAWN = [
    pytest.param(False, id="parsed"),
    pytest.param(True, id="drawn", marks=pytest.mark.diagrams),
]


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js 20+ is needed to check Mermaid diagrams (`node` is not on PATH)")
    if not (CHECKER / "node_modules" / "mermaid").is_dir():
        pytest.fail(f"Mermaid's parser is not installed: run `npm ci --prefix {CHECKER}`")
    return node


class _Reader:
    """check.mjs kept running (`--serve`) by one pytest worker: Node starting and loading Mermaid
    costs 2 to 3 s, a read a few milliseconds."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [_node(), str(CHECKER / "check.mjs"), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
        )
        atexit.register(self.stop)

    def read(self, docs: list[dict[str, str]], timeout: float) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(docs) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            self.errors.seek(0)
            raise AssertionError(f"check.mjs gave no answer: {self.errors.read().decode()}")
        return line

    def stop(self) -> None:
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # its end of input: it exits
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.errors.close()


_reader: _Reader | None = None


def read_with_node(docs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """`docs` ({"kind": "mermaid" | "markdown", "text"}) read by check.mjs, one result each."""
    global _reader
    if _reader is None or _reader.owner != os.getpid() or _reader.process.poll() is not None:
        _reader = _Reader()
    results: list[dict[str, Any]] = json.loads(_reader.read(docs, timeout=300))
    assert len(results) == len(docs)
    return results


def stop_reader() -> None:
    """Stop this worker's check.mjs, if it started one (the session's end)."""
    global _reader
    if _reader is not None and _reader.owner == os.getpid():
        _reader.stop()
    _reader = None


def parse_mermaid(*texts: str, tmp: Path, draw: bool = True) -> list[dict[str, Any]]:
    """Each diagram as Mermaid's parser reads it, then (`draw`) drawn in Chromium: fails the
    test on the first that does not parse, or that the screen shows otherwise than the parser
    read it (each node's text, each arrow's label)."""
    results = read_with_node([{"kind": "mermaid", "text": text} for text in texts])
    for text, result in zip(texts, results, strict=True):
        assert result["ok"], f"Mermaid refuses the diagram: {result['error']}\n{text}"
    if not draw:
        return results
    for text, parsed, shown in zip(texts, results, draw_mermaid(list(texts), tmp), strict=True):
        assert shown["ok"], f"Mermaid cannot draw the diagram: {shown['error']}\n{text}"
        on_screen = {node["id"]: node["text"] for node in shown["nodes"]}
        read = {v["id"]: v["text"].replace("<br>", "\n") for v in parsed["vertices"]}
        assert on_screen == read
        assert sorted(shown["edges"]) == sorted(e["text"] for e in parsed["edges"] if e["text"])
    return results


def parse_markdown(text: str) -> list[dict[str, Any]]:
    """The blocks of `text` as GitHub-flavoured Markdown (headings, tables, code, ...)."""
    (result,) = read_with_node([{"kind": "markdown", "text": text}])
    blocks: list[dict[str, Any]] = result["blocks"]
    return blocks


def _dot() -> str:
    dot = shutil.which("dot")
    if dot is None:
        pytest.fail("Graphviz's `dot` is needed to check DOT output: apt-get install graphviz")
    return dot


def parse_dot(text: str, tmp: Path) -> dict[str, Any]:
    """The graph as Graphviz reads it (`dot -Tjson`), after `dot -Tsvg` drew it without a
    word on stderr (a warning is a failure too)."""
    source = tmp / "graph.dot"
    source.write_text(text)
    drawn = subprocess.run(
        [_dot(), "-Tsvg", str(source)], capture_output=True, text=True, timeout=120, check=False
    )
    assert drawn.returncode == 0 and drawn.stderr == "", drawn.stderr
    assert drawn.stdout.lstrip().startswith("<?xml") and "</svg>" in drawn.stdout
    read = subprocess.run(
        [_dot(), "-Tjson", str(source)], capture_output=True, text=True, timeout=120, check=False
    )
    assert read.returncode == 0 and read.stderr == "", read.stderr
    graph: dict[str, Any] = json.loads(read.stdout)
    return graph


def dot_nodes_and_edges(graph: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """Node name -> label, and each edge as (tail, head) or (tail, head, label)."""
    objects = graph.get("objects", [])
    nodes = {o["name"]: o.get("label", o["name"]) for o in objects}
    names = [o["name"] for o in objects]
    edges = []
    for edge in graph.get("edges", []):
        ends = (names[edge["tail"]], names[edge["head"]])
        edges.append((*ends, edge["label"]) if "label" in edge else ends)
    return nodes, edges


_PAGE = """<!doctype html>
<meta charset="utf-8">
<body>
<script src="%(mermaid)s"></script>
<script>
mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
const diagrams = %(diagrams)s;
// A label as it reads on screen: each line break a newline.
const read = (element) => {
  const copy = element.cloneNode(true);
  copy.querySelectorAll("br").forEach((br) => br.replaceWith("\\n"));
  return copy.textContent;
};
(async () => {
  const results = [];
  for (const [index, text] of diagrams.entries()) {
    try {
      const { svg } = await mermaid.render(`diagram${index}`, text);
      const holder = document.createElement("div");
      holder.innerHTML = svg;
      document.body.appendChild(holder);
      results.push({
        ok: true,
        nodes: [...holder.querySelectorAll("g.node")].map((n) => ({ id: n.id, text: read(n) })),
        edges: [...holder.querySelectorAll("g.edgeLabel")].map(read).filter((t) => t),
      });
    } catch (error) {
      results.push({ ok: false, error: String(error?.message ?? error) });
    }
  }
  const out = document.createElement("pre");
  out.id = "results";
  out.textContent = JSON.stringify(results);
  document.body.appendChild(out);
})();
</script>
"""


def draw_mermaid(texts: list[str], tmp: Path) -> list[dict[str, Any]]:
    """Each diagram drawn by Mermaid in a headless Chromium: {"ok", "nodes": [{"id" (ours:
    `job1`), "text"}], "edges": [label, ...]} or {"ok": false, "error"}."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Chromium is needed to draw Mermaid diagrams: apt-get install chromium")
    bundle = CHECKER / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not bundle.is_file():
        pytest.fail(f"Mermaid is not installed: run `npm ci --prefix {CHECKER}`")
    page = tmp / "draw.html"
    diagrams = json.dumps(texts).replace("</", "<\\/")
    page.write_text(_PAGE % {"mermaid": bundle.as_uri(), "diagrams": diagrams})
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-profile'}",
            "--virtual-time-budget=30000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = re.search(r'<pre id="results">(.*?)</pre>', result.stdout, re.S)
    assert found, f"Chromium did not draw the page ({result.returncode}): {result.stderr[-2000:]}"
    drawn: list[dict[str, Any]] = json.loads(html.unescape(found.group(1)))
    for entry in drawn:
        for node in entry.get("nodes", []):
            # Mermaid names a node's element `<diagram>-flowchart-<our id>-<n>`.
            node["id"] = re.sub(r"^.*?-flowchart-(.+)-\d+$", r"\1", node["id"])
    return drawn
