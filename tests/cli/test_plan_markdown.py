"""`plan --output markdown` and `deploy --dry-run --output markdown` through the real CLI, on
the examples with a real change: read back as GitHub-flavoured Markdown, its diagram parsed;
the same plan as JSON and text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import load_jobs
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import REPO, run_cli
from tests.support.diagrams import DRAWN, parse_markdown, parse_mermaid
from tests.support.doctest_md import page_with

TABLES = ["examples/tables", "examples/pipeline/tables"]


def deployed_examples(tmp_path: Path) -> tuple[list[str], Path]:
    """The examples and the pipeline as deployed (v1 in the store, a checkpoint each, nothing
    running); then expensive-orders' query changes in git."""
    jobs = tmp_path / "jobs"
    shutil.copytree(REPO / "examples" / "queries", jobs)
    shutil.copy(REPO / "examples" / "pipeline" / "queries" / "big-buyer-orders.yaml", jobs)
    state = tmp_path / "state"
    catalog = load_catalog([REPO / t for t in TABLES])
    for job in load_jobs([jobs], None, catalog, state):
        LocalStore(state / "manifests").write(
            StoredManifest(job.spec, job.tables, Meta.new(1)), None
        )
        checkpoint = Path(job.checkpoint_location(1))
        (checkpoint / "offsets").mkdir(parents=True)
        (checkpoint / "commits").mkdir()
        (checkpoint / "metadata").write_text('{"id": "x"}')
        (checkpoint / "offsets" / "0").write_text("v1")
        (checkpoint / "commits" / "0").write_text("v1")
    changed = yaml.safe_load((jobs / "expensive-orders.yaml").read_text())
    changed["sql"] = changed["sql"].replace("9000", "10000")
    (jobs / "expensive-orders.yaml").write_text(yaml.safe_dump(changed, sort_keys=False))
    args = ["--path", str(jobs), "--table-definition-path", *TABLES, "--state-dir", str(state)]
    return args, state


# The plan asks Spark (a local session) to analyse a changed query's output: not fast.
@pytest.mark.spark
@pytest.mark.parametrize("draw", DRAWN)
def test_plan_as_a_pull_request_comment(tmp_path: Path, draw: bool) -> None:
    args, state = deployed_examples(tmp_path)
    result = run_cli("plan", *args, "--output", "markdown")
    assert result.returncode == 0, result.stderr
    blocks = parse_markdown(result.stdout)
    # Nothing runs: the unchanged jobs restart from their checkpoints.
    (jobs, changes) = [b for b in blocks if b["type"] == "table"]
    assert jobs["read"][:3] == [
        ["big-buyer-orders", "restart-from-checkpoint", "v1", jobs["read"][0][3]],
        ["buyer-orders-code", "restart-from-checkpoint", "v1", jobs["read"][1][3]],
        [
            "expensive-orders",
            "start-clean",
            "v2",
            "not running; query changed (sql): start clean as version 2",
        ],
    ]
    assert jobs["read"][0][3] == "not running; restart from checkpoint (last committed batch 0)"
    assert [row[:2] for row in jobs["read"][3:]] == [
        ["order-stats", "restart-from-checkpoint"],
        ["tick-log", "restart-from-checkpoint"],
    ]
    assert changes["read"] == [["sql", "see the diff below", "query", "the query changed"]]
    (diff,) = [b for b in blocks if b["type"] == "code" and b["lang"] == "diff"]
    assert "-WHERE price > 9000" in diff["text"].splitlines()
    assert "+WHERE price > 10000" in diff["text"].splitlines()
    (diagram,) = [b for b in blocks if b["type"] == "code" and b["lang"] == "mermaid"]
    (parsed,) = parse_mermaid(diagram["text"], tmp=tmp_path, draw=draw)
    classes = {v["text"]: v["classes"] for v in parsed["vertices"]}
    assert classes["expensive-orders"] == ["changed"]
    assert classes["big-buyer-orders"] == ["downstream"]
    assert not state.joinpath("runs").exists(), "plan starts nothing"

    dry = run_cli("deploy", *args, "--dry-run", "--output", "markdown")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == result.stdout

    # JSON and text are as before (the schema answers kept by the first plan: no second Spark).
    doc = json.loads(run_cli("plan", *args, "--output", "json").stdout)
    assert {j["name"]: j["action"] for j in doc["jobs"]}["expensive-orders"] == "start-clean"
    text = run_cli("plan", *args).stdout
    assert "expensive-orders   start-clean" in text


def test_markdown_is_only_for_plans(tmp_path: Path) -> None:
    args, state = deployed_examples(tmp_path)
    before = sorted(p.name for p in (state / "manifests").iterdir())
    refused = run_cli("deploy", *args, "--output", "markdown")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: --output markdown shows a plan: use it with --dry-run (or plan)"
    )
    assert sorted(p.name for p in (state / "manifests").iterdir()) == before
    assert not (state / "runs").exists()
    status = run_cli("status", "--state-dir", str(state), "--output", "markdown")
    assert status.returncode == 2 and "'markdown' is not one of 'text', 'json'" in status.stderr
    for command in ("plan", "deploy", "deploy-job"):
        shown = " ".join(run_cli(command, "--help").stdout.split())
        assert "[text|json|markdown]" in shown, command
    assert "markdown" not in run_cli("status", "--help").stdout


@pytest.mark.parametrize("draw", DRAWN)
def test_the_docs_example_comment_reads_as_it_says(tmp_path: Path, draw: bool) -> None:
    """The docs show a comment from a real deployment of the examples: it must read as
    Markdown, with the diagram highlighting what it says."""
    _, readme = page_with("````markdown\n")
    example = readme.split("````markdown\n", 1)[1].split("\n````", 1)[0]
    command, comment = example.split("\n", 2)[:2], example.split("\n", 2)[2]
    assert command[1].strip().endswith("--output markdown")
    assert comment.startswith("<!-- flink-sql-runner plan -->\n")
    blocks = parse_markdown(comment)
    (diagram,) = [b for b in blocks if b["type"] == "code" and b["lang"] == "mermaid"]
    (parsed,) = parse_mermaid(diagram["text"], tmp=tmp_path, draw=draw)
    classes = {v["text"]: v["classes"] for v in parsed["vertices"]}
    assert classes["expensive-orders"] == classes["order-stats"] == ["changed"]
    assert classes["big-buyer-orders"] == ["downstream"]
    (jobs, *_) = [b for b in blocks if b["type"] == "table"]
    assert [row[:2] for row in jobs["read"]] == [
        ["expensive-orders", "stop-and-start-clean"],
        ["order-stats", "stop-and-restart-from-checkpoint"],
    ]
    (downstream,) = [b["read"] for b in blocks if b["type"] == "list" and not b["ordered"]]
    assert downstream == [
        "big-buyer-orders reads-again: reads v1's rows again: expensive-orders v2 writes "
        "expensive_orders from the start, and its checkpoint takes them as new (reprocessing: "
        "consistent with {query_version} in expensive_orders_stream's path avoids it)"
    ]
