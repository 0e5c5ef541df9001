"""The lineage diagrams render: Mermaid's own parser and Graphviz read them as the graph meant.

Mermaid is read by its parser under Node and drawn by it in a headless Chromium
(`tests/support/diagrams.py`), DOT read and drawn by Graphviz's `dot`; each diagram is checked
node by node and arrow by arrow against the lineage, labels included as they show on screen, so an
escape that went wrong (a name that ends a label, opens a Markdown string, looks like a keyword
or holds what Mermaid draws as a line break) shows up as an error or a label that reads
otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.model.lineage import Lineage, build_lineage
from flink_sql_runner.render.lineage import (
    MERMAID_MAX_EDGES,
    lineage_dot,
    lineage_mermaid,
    mermaid_diagram,
)
from tests.support.cli import run_cli
from tests.support.diagrams import (
    DRAWN,
    dot_nodes_and_edges,
    parse_dot,
    parse_mermaid,
    read_with_node,
)
from tests.support.examples import ALL_EXAMPLES
from tests.support.graphs import catalog, chain, folder, job, stored


def expected(lineage: Lineage) -> tuple[dict[str, list[str]], set[tuple[str, str, str]]]:
    """What a diagram of the whole lineage must show, by label: every node's label lines, and
    every arrow (from, to, its label)."""
    nodes: dict[str, list[str]] = {}
    for table in lineage.tables.values():
        second = table.format or ("catalog table" if not table.places else "")
        if table.name in lineage.unused_tables:
            second = f"{second}, unused" if second else "unused"
        nodes[f"table {table.name}"] = [table.name, *([second] if second else [])]
    for name, node in lineage.jobs.items():
        nodes[f"job {name}"] = [name, "stored only, not in git"] if node.stored_only else [name]
    edges = set()
    for node in lineage.jobs.values():
        edges |= {(f"table {t}", f"job {node.name}", "") for t in node.reads}
        edges.add((f"job {node.name}", f"table {node.writes}", ""))
    for link in lineage.links:
        if link.table != link.read_as:
            edges.add((f"table {link.table}", f"table {link.read_as}", link.via))
    return nodes, edges


def by_label(nodes: dict[str, list[str]], labels: dict[str, list[str]]) -> dict[str, str]:
    """Diagram node id -> the expected node it draws, matched by its label."""
    wanted = {tuple(lines): key for key, lines in nodes.items()}
    assert len(wanted) == len(nodes), "two nodes would read the same"
    return {node_id: wanted[tuple(lines)] for node_id, lines in labels.items()}


def assert_mermaid_draws(lineage: Lineage, result: dict[str, Any]) -> None:
    nodes, edges = expected(lineage)
    # As a person reads it: a zero-width space (after a backslash) is not seen.
    labels = {v["id"]: v["text"].replace("\u200b", "").split("<br>") for v in result["vertices"]}
    assert sorted(map(tuple, labels.values())) == sorted(map(tuple, nodes.values()))
    drawn = by_label(nodes, labels)
    shapes = {drawn[v["id"]].split()[0]: v["shape"] for v in result["vertices"]}
    assert shapes == {"table": "cylinder", "job": "square"} or not lineage.jobs
    arrows = {(drawn[e["start"]], drawn[e["end"]], e["text"]) for e in result["edges"]}
    assert arrows == edges
    assert len(result["edges"]) == len(edges)
    dotted = {
        (drawn[e["start"]], drawn[e["end"]]) for e in result["edges"] if e["stroke"] != "normal"
    }
    assert dotted == {(a, b) for a, b, label in edges if label}


def unescape_dot(label: str) -> list[str]:
    """A DOT label as Graphviz draws it: `\\n` ends a line, `\\\\` is a backslash."""
    text = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) in "nlr" else m.group(1), label)
    return text.split("\n")


def assert_dot_draws(lineage: Lineage, text: str, tmp: Path) -> None:
    nodes, edges = expected(lineage)
    labels, arrows = dot_nodes_and_edges(parse_dot(text, tmp))
    drawn = by_label(nodes, {name: unescape_dot(label) for name, label in labels.items()})
    assert {(drawn[a], drawn[b], *(rest or ("",))) for a, b, *rest in arrows} == edges
    assert len(arrows) == len(edges)


@pytest.mark.parametrize("draw", DRAWN)
def test_the_examples_lineage_renders_in_mermaid_and_graphviz(tmp_path: Path, draw: bool) -> None:
    state = ["--state-dir", str(tmp_path / "state")]
    outputs = {
        o: run_cli("lineage", *ALL_EXAMPLES, *state, "--output", o)
        for o in ("json", "mermaid", "dot")
    }
    assert all(r.returncode == 0 for r in outputs.values()), [r.stderr for r in outputs.values()]
    doc = json.loads(outputs["json"].stdout)
    (result,) = parse_mermaid(outputs["mermaid"].stdout, tmp=tmp_path, draw=draw)
    assert result["type"] == "flowchart-v2"
    # The expected graph, from the JSON the same command printed.
    labels = {v["text"] for v in result["vertices"]}
    assert {f"{t['name']}<br>{t['format']}" for t in doc["tables"]} <= labels
    assert {j["name"] for j in doc["jobs"]} <= labels
    assert len(result["vertices"]) == len(doc["jobs"]) + len(doc["tables"])
    names = {v["id"]: v["text"].split("<br>")[0] for v in result["vertices"]}
    arrows = {(names[e["start"]], names[e["end"]], e["text"]) for e in result["edges"]}
    wanted = {(t, j["name"], "") for j in doc["jobs"] for t in j["reads"]}
    wanted |= {(j["name"], j["writes"], "") for j in doc["jobs"]}
    wanted.add(("expensive_orders", "expensive_orders_stream", "same folder"))
    assert arrows == wanted
    if not draw:
        return
    labels_dot, arrows_dot = dot_nodes_and_edges(parse_dot(outputs["dot"].stdout, tmp_path))
    names_dot = {n: unescape_dot(label)[0] for n, label in labels_dot.items()}
    assert {(names_dot[a], names_dot[b], *(r or ("",))) for a, b, *r in arrows_dot} == wanted


HOSTILE_TABLES = [
    "kafka.`some-topic-table`",  # backticks: a Mermaid Markdown string starts with one
    'say "hi"',  # a quote ends a label
    "a#quot;b #35; c",  # Mermaid's own entity codes, as text
    "x; y --> z",  # a statement separator and an arrow
    "p|q",  # edge label delimiters
    "<b>bold</b> & <script>",  # HTML
    "%% not a comment",
    "back\\slash \\n",  # DOT escapes
    "café ✓",
    "end",
    "style",
]
HOSTILE_JOBS = ["end", "subgraph", "graph", "flowchart", "class", "classdef", "click", "default"]


def hostile_lineage() -> Lineage:
    jobs = []
    for i, name in enumerate(HOSTILE_JOBS):
        source = HOSTILE_TABLES[i % len(HOSTILE_TABLES)]
        jobs.append(job(name, {source: folder(f"/in/{i}")}, f"{name}-out {i}", folder(f"/o/{i}")))
    # One job reads another's sink folder under a hostile name: a dashed arrow between them.
    jobs.append(job("reader", {HOSTILE_TABLES[-2]: folder("/o/0")}, "r", folder("/o/r")))
    orphan = job("old", {"src": folder("/in/old")}, HOSTILE_TABLES[1], folder("/o/old"))
    # The catalog's names follow Spark's rules; the others come from manifests as stored.
    spare = catalog("kafka.`unused-topic`", "kafka.`some-topic-table`", "end", "style", "src")
    return build_lineage(jobs, stored=[stored(orphan)], catalog=spare)


@pytest.mark.parametrize("draw", DRAWN)
def test_hostile_names_render_as_written_in_mermaid_and_graphviz(
    tmp_path: Path, draw: bool
) -> None:
    lineage = hostile_lineage()
    assert lineage.unused_tables == ("kafka.`unused-topic`", "style")
    assert any(link.via == "same folder" for link in lineage.links)
    (result,) = parse_mermaid(lineage_mermaid(lineage), tmp=tmp_path, draw=draw)
    assert_mermaid_draws(lineage, result)
    if draw:
        assert_dot_draws(lineage, lineage_dot(lineage), tmp_path)


@pytest.mark.parametrize("draw", DRAWN)
def test_highlights_cycles_unused_and_stored_jobs_are_classes_mermaid_knows(
    tmp_path: Path, draw: bool
) -> None:
    jobs = [
        job("a", {"b_out": folder("/out/b")}, "a_out", folder("/out/a")),
        job("b", {"a_out": folder("/out/a")}, "b_out", folder("/out/b")),
        *chain("c", "d", "e"),
    ]
    orphan = job("gone", {"src": folder("/in")}, "g_out", folder("/out/g"))
    lineage = build_lineage(jobs, stored=[stored(orphan)], catalog=catalog("spare"))
    text = lineage_mermaid(lineage, changed=["c"], downstream=lineage.downstream("c"))
    (result,) = parse_mermaid(text, tmp=tmp_path, draw=draw)
    assert_mermaid_draws(lineage, result)
    classes = {v["text"]: v["classes"] for v in result["vertices"]}
    assert classes["c"] == ["changed"]
    assert classes["d"] == classes["e"] == ["downstream"]
    assert classes["a"] == classes["b"] == ["cycle"]
    assert classes["gone<br>stored only, not in git"] == ["stored"]
    assert classes["spare<br>parquet, unused"] == ["unused"]
    assert set(result["classes"]) == {"changed", "downstream", "cycle", "stored", "unused"}
    if draw:
        assert_dot_draws(lineage, lineage_dot(lineage), tmp_path)


def test_a_lineage_too_large_for_mermaid_is_drawn_smaller_and_says_so(tmp_path: Path) -> None:
    # 300 jobs on their own and one pair: 602 arrows with the tables, past Mermaid's 500.
    jobs = [
        job(f"solo-{i:03d}", {"src": folder("/in")}, f"s{i}", folder(f"/s/{i}")) for i in range(300)
    ]
    jobs += chain("first", "second")
    whole = build_lineage(jobs)
    drawn = mermaid_diagram(whole)
    text, note = drawn.text, drawn.note
    assert note == (
        "only jobs linked to another, no tables: the whole lineage is too large for one "
        "Mermaid diagram"
    )
    (result,) = parse_mermaid(text, tmp=tmp_path, draw=False)
    assert [v["text"] for v in result["vertices"]] == ["first", "second"]
    assert [(e["start"], e["end"]) for e in result["edges"]] == [("job1", "job2")]
    assert f"  %% {note}" in text.splitlines()

    # With changes: their jobs and everything downstream, with tables while that fits.
    long = build_lineage([*jobs, *chain(*(f"step-{i:03d}" for i in range(400)))])
    changed = ["step-100"]
    downstream = long.downstream("step-100")
    drawn = mermaid_diagram(long, changed, downstream)
    text, note = drawn.text, drawn.note
    assert note.startswith("only the changed jobs and those downstream linked to another")
    (result,) = parse_mermaid(text, tmp=tmp_path, draw=False)
    assert len(result["vertices"]) == 300 and len(result["edges"]) == 299
    few = build_lineage([*jobs, *chain(*(f"step-{i:03d}" for i in range(40)))])
    drawn = mermaid_diagram(few, ["step-030"], few.downstream("step-030"))
    text, note = drawn.text, drawn.note
    assert note == (
        "only the changed jobs and those downstream: the whole lineage is too large for one "
        "Mermaid diagram"
    )
    (result,) = parse_mermaid(text, tmp=tmp_path, draw=False)
    assert {v["text"].split("<br>")[0] for v in result["vertices"] if v["shape"] == "square"} == {
        f"step-{i:03d}" for i in range(30, 40)
    }


def test_the_limit_is_mermaids_own(tmp_path: Path) -> None:
    """Past the limit the fallback gives up and says so; Mermaid refuses such a diagram.
    (These large diagrams are parsed, not drawn: drawing hundreds of nodes takes Chromium
    long; the smaller ones above and below are drawn.)"""
    lineage = build_lineage(chain(*(f"j{i:04d}" for i in range(MERMAID_MAX_EDGES + 2))))
    drawn = mermaid_diagram(lineage)
    text, note = drawn.text, drawn.note
    assert note.endswith("still 501 arrows, more than Mermaid draws (use --output dot)")
    (refused,) = read_with_node([{"kind": "mermaid", "text": text}])
    assert not refused["ok"] and "Edge limit exceeded" in refused["error"]
    fitting = build_lineage(chain(*(f"j{i:04d}" for i in range(MERMAID_MAX_EDGES + 1))))
    drawn = mermaid_diagram(fitting)
    text, note = drawn.text, drawn.note
    assert note.startswith("only jobs linked to another")
    parse_mermaid(text, tmp=tmp_path, draw=False)


@pytest.mark.parametrize("draw", DRAWN)
def test_a_diagram_with_nothing_to_draw_still_parses(tmp_path: Path, draw: bool) -> None:
    empty = build_lineage([])
    parse_mermaid(lineage_mermaid(empty), tmp=tmp_path, draw=draw)
    if draw:
        assert parse_dot(lineage_dot(empty), tmp_path).get("objects", []) == []
