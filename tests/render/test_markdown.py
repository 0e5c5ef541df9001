"""`plan --output markdown`: the plan as a pull-request comment, read back as GitHub would.

The plans are made by the real decision code on fakes; the Markdown is read with marked's
GitHub-flavoured lexer and its Mermaid diagram parsed and drawn (`tests/support/diagrams.py`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.render.markdown import MARKER, MAX_LENGTH, code, plan_markdown, text
from tests.support.diagrams import DRAWN, parse_markdown, parse_mermaid
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.graphs import pipeline_job
from tests.support.plans import SECRET, scenario


def blocks_of(markdown: str) -> list[dict[str, Any]]:
    return parse_markdown(markdown)


@pytest.mark.parametrize("draw", DRAWN)
def test_the_plan_reads_as_tables_diffs_steps_and_a_lineage_diagram(
    tmp_path: Path, draw: bool
) -> None:
    plan, lineage = scenario()
    markdown = plan_markdown(plan, lineage)
    assert markdown.startswith(MARKER + "\n")
    assert SECRET not in markdown
    blocks = blocks_of(markdown)
    headings = [(b["depth"], b["text"]) for b in blocks if b["type"] == "heading"]
    assert headings == [
        (
            3,
            "flink-sql-runner plan: 6 jobs (1 error, 2 noop, 1 start-clean, 1 "
            "stop-and-restart-from-checkpoint, 1 stop-and-start-clean); changes pending",
        ),
        (4, "`fresh`: start-clean"),
        (4, "`producer`: stop-and-start-clean"),
        (4, "`tuned`: stop-and-restart-from-checkpoint"),
        (3, "Lineage"),
    ]
    tables = [b for b in blocks if b["type"] == "table"]
    jobs, idle, producer_changes, tuned_changes = tables
    assert jobs["header"] == ["job", "action", "version", "reason"]
    assert [row[:3] for row in jobs["rows"]] == [
        ["`fresh`", "**start-clean**", "v1"],
        ["`lost`", "**error**", "v1"],
        ["`producer`", "**stop-and-start-clean**", "v2"],
        ["`tuned`", "**stop-and-restart-from-checkpoint**", "v1"],
    ]
    assert jobs["read"][2] == [
        "producer",
        "stop-and-start-clean",
        "v2",
        "query changed (sql): stop, start clean as version 2",
    ]
    assert jobs["read"][1][3].startswith("not running and no valid checkpoint at /ckpt/lost/1")
    # The jobs with nothing to do, folded away.
    assert idle["read"] == [
        ["consumer", "noop", "v1", "running, nothing changed"],
        ["last", "noop", "v1", "running, nothing changed"],
    ]
    html = [b["text"] for b in blocks if b["type"] == "html"]
    assert any("<details><summary>2 jobs with nothing to do</summary>" in h for h in html)
    # Each change as old -> new; SQL as a diff below; secrets masked.
    assert producer_changes["header"] == ["field", "old -> new", "kind", "why"]
    assert producer_changes["read"] == [["sql", "see the diff below", "query", "the query changed"]]
    (diff,) = [b for b in blocks if b["type"] == "code" and b["lang"] == "diff"]
    assert diff["text"].splitlines() == [
        " SELECT id, ts",
        " FROM producer_in",
        "-WHERE id > 0",
        "+WHERE id > 100",
    ]
    assert tuned_changes["read"] == [
        ["description", "a job -> pipes | and `ticks` and <b>tags</b>", "config", "metadata only"],
        [
            "sparkProperties.spark.x.password",
            "***** -> *****",
            "config",
            "a Spark setting the checkpoint does not pin",
        ],
    ]
    steps = [b for b in blocks if b["type"] == "list"]
    assert steps[1]["ordered"]
    assert steps[1]["read"] == [
        "prepare v2 clean in /ckpt/producer/2 while v1 runs"
        " (session, tables, query, sink and checkpoint checked; nothing written)",
        "stop v1 (pid 8)",
        "go: the prepared v2 starts its query",
        "record v2",
    ]
    paragraphs = [b["read"] for b in blocks if b["type"] == "paragraph"]
    assert "Downstream, as it starts clean and writes its results again:" in paragraphs
    (impact,) = [b["read"] for b in steps if not b["ordered"]]
    assert [line.split(":")[0] for line in impact] == ["consumer reads-again", "last reads-again"]
    assert impact[0].startswith("consumer reads-again: reads v1's rows again: producer v2 writes")
    assert impact[1].startswith("last reads-again: reads v1's rows again, through consumer:")
    assert (
        "If the new run is not healthy: stop it, then start v1 from its checkpoint; the store is "
        "left as it was."
    ) in paragraphs
    # The lineage: the changed jobs and everything downstream of them highlighted.
    (diagram,) = [b for b in blocks if b["type"] == "code" and b["lang"] == "mermaid"]
    assert diagram["diagram"]["ok"], diagram["diagram"]
    (parsed,) = parse_mermaid(diagram["text"], tmp=tmp_path, draw=draw)
    classes = {v["text"]: v["classes"] for v in parsed["vertices"]}
    assert classes["producer"] == classes["tuned"] == classes["fresh"] == ["changed"]
    assert classes["consumer"] == classes["last"] == ["downstream"]
    assert classes["lost"] == []
    assert "Changed jobs in red; jobs downstream of them in yellow." in paragraphs


def test_text_from_manifests_cannot_break_the_markdown() -> None:
    assert text("a | b `c` <script> *x* _y_ [z](u) ~s~ &amp; \\") == (
        "a \\| b \\`c\\` \\<script\\> \\*x\\* \\_y\\_ \\[z\\](u) \\~s\\~ \\&amp; \\\\"
    )
    assert code("plain") == "`plain`"
    assert code("has `one` tick") == "``has `one` tick``"
    assert code("`starts`") == "`` `starts` ``"
    assert code("a|b") == "`a\\|b`" and code("a|b", in_table=False) == "`a|b`"
    assert code("two\nlines") == "`two lines`"
    assert code("") == "(empty)"
    read = blocks_of(
        "| a | b |\n|---|---|\n"
        f"| {code('x | `y` ``z``')} | {text('<b>not bold</b> | *not em*')} |\n"
    )
    assert read[0]["read"] == [["x | `y` ``z``", "<b>not bold</b> | *not em*"]]


def test_a_plan_with_nothing_to_do_and_no_jobs() -> None:
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    job = pipeline_job("quiet", "/in", "/out/q")
    store.put(StoredManifest(copy.deepcopy(job.spec), copy.deepcopy(job.tables), Meta.new(3)))
    target.add_run(Run("quiet", 3, "run-q", "pid 7"))
    plan = build_plan(gather([job], store, target, storage, workers=1))
    blocks = blocks_of(plan_markdown(plan, build_lineage([job])))
    assert blocks[0] == {"type": "html", "text": MARKER + "\n"}
    assert blocks[1]["text"] == "flink-sql-runner plan: 1 job (1 noop); nothing to do"
    assert [b["type"] for b in blocks[2:]] == ["html", "table", "html", "heading", "code"]
    assert plan_markdown(Plan(())).splitlines() == [
        MARKER,
        "### flink-sql-runner plan: 0 jobs (); nothing to do",
        "",
        "No jobs.",
    ]


def test_without_a_lineage_there_is_no_diagram() -> None:
    plan, _ = scenario()
    markdown = plan_markdown(plan)
    assert "```mermaid" not in markdown and "Downstream of it" not in markdown
    assert "### Lineage" not in markdown


def test_a_plan_too_long_for_one_comment_is_made_shorter_and_says_so() -> None:
    # Thousands of new jobs: first the sections go, then the diagram, then rows.
    jobs = [pipeline_job(f"job-{i:04d}", "/in", f"/out/{i}") for i in range(3000)]
    plan = build_plan(gather(jobs, FakeStore(), FakeTarget(), FakeStorage(), workers=1))
    markdown = plan_markdown(plan, build_lineage(jobs))
    assert len(markdown) <= MAX_LENGTH
    assert markdown.endswith("_The plan is cut here: run `flink-sql-runner plan` for all of it._\n")
    blocks = blocks_of(markdown)
    (table,) = [b for b in blocks if b["type"] == "table"]
    assert len(table["rows"]) > 500 and all(len(row) == 4 for row in table["rows"])
    # 700: the table fits, each job's section does not; 400: everything but a diagram.
    for count, sections in ((700, False), (400, True)):
        some = jobs[:count]
        plan = build_plan(gather(some, FakeStore(), FakeTarget(), FakeStorage(), workers=1))
        markdown = plan_markdown(plan, build_lineage(some))
        assert len(markdown) <= MAX_LENGTH
        assert ("Each job's changes and steps are left out" not in markdown) == sections
        assert "```mermaid" not in markdown
        assert markdown.endswith(
            "No diagram: the lineage is too large for one Mermaid diagram "
            "(`flink-sql-runner lineage --output dot` draws it).\n"
        )
        (table,) = [b for b in blocks_of(markdown) if b["type"] == "table"]
        assert len(table["rows"]) == count


def test_a_saved_plan_is_named_by_its_digest_under_the_heading() -> None:
    plan, lineage = scenario()
    digest = "sha256:" + "3f2a" * 16
    lines = plan_markdown(plan, lineage, saved=("saved-plan.json", digest)).splitlines()
    assert lines[0] == MARKER and lines[1].startswith("### flink-sql-runner plan:")
    assert lines[3] == (
        f"Saved plan `saved-plan.json`, digest `{digest}`: the merge carries out exactly this "
        "plan (`deploy --plan`), or refuses it whole if anything it was decided from changed."
    )
    assert plan_markdown(plan, lineage) == "\n".join([*lines[:2], *lines[4:]]) + "\n"
