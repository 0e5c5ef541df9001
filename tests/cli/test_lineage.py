"""`lineage` through the real command line: the examples, cycles, unused tables, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.support.cli import REPO, run_cli
from tests.support.doctest_md import page_with
from tests.support.examples import ALL_EXAMPLES


def lineage(*args: str, state: Path):
    return run_cli("lineage", *args, "--state-dir", str(state))


def test_the_examples_lineage_links_the_pipeline_by_its_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = lineage(*ALL_EXAMPLES, state=state)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["JOB", "READS", "WRITES", "FEEDS"]
    jobs = [line.split() for line in lines[1:6]]
    assert jobs == [
        ["buyer-orders-code", "orders", "buyer_orders", "-"],
        ["expensive-orders", "orders", "expensive_orders", "big-buyer-orders"],
        ["order-stats", "orders", "order_stats", "-"],
        ["tick-log", "ticks", "tick_log", "-"],
        ["big-buyer-orders", "expensive_orders_stream", "big_buyer_orders", "-"],
    ]
    # The state folder is outside the working directory: its paths are shown whole.
    sink = f"folder {state.resolve()}/output/expensive_orders"
    assert any(line.split()[:4] == ["expensive_orders", "parquet", *sink.split()] for line in lines)
    assert any(line.split()[:3] == ["orders", "json", "folder"] for line in lines)
    assert "examples/data/orders" in result.stdout  # under the working directory: relative
    assert (
        "  expensive-orders -> big-buyer-orders: expensive_orders, read as "
        "expensive_orders_stream (same folder)"
    ) in lines
    assert lines[-2:] == ["Unused tables: none", "Cycles: none"]
    assert not state.exists(), "lineage reads nothing but the inputs and writes nothing"


def test_the_examples_lineage_as_json(tmp_path: Path) -> None:
    result = lineage(*ALL_EXAMPLES, "--output", "json", state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert list(doc) == ["jobs", "tables", "links", "order", "cycles", "unused-tables"]
    assert doc["order"] == [
        "buyer-orders-code",
        "expensive-orders",
        "order-stats",
        "tick-log",
        "big-buyer-orders",
    ]
    assert [job["name"] for job in doc["jobs"]] == doc["order"]
    by_name = {job["name"]: job for job in doc["jobs"]}
    assert by_name["expensive-orders"]["downstream"] == ["big-buyer-orders"]
    assert by_name["big-buyer-orders"] == {
        "name": "big-buyer-orders",
        "reads": ["expensive_orders_stream"],
        "writes": "big_buyer_orders",
        "upstream": ["expensive-orders"],
        "downstream": [],
        "stored-only": False,
    }
    assert doc["links"] == [
        {
            "producer": "expensive-orders",
            "consumer": "big-buyer-orders",
            "table": "expensive_orders",
            "read-as": "expensive_orders_stream",
            "via": "same folder",
        }
    ]
    tables = {table["name"]: table for table in doc["tables"]}
    assert tables["expensive_orders"]["location"] == tables["expensive_orders_stream"]["location"]
    where = tables["orders"]["location"][0]
    assert where == {"kind": "folder", "where": str(REPO / "examples" / "data" / "orders")}
    assert tables["ticks"]["location"] == []
    assert doc["cycles"] == [] and doc["unused-tables"] == []


def write_yaml(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def pipeline(tmp_path: Path, cycle: bool) -> list[str]:
    """Jobs a and b, each reading what the other writes (`cycle`) or a -> b only; a spare
    table no job uses."""
    data = tmp_path / "data"
    tables = [
        {
            "name": name,
            "format": "parquet",
            "options": {"path": str(data / name)},
            "schema": "x INT",
        }
        for name in ("a_out", "b_out", "spare", "seed")
    ]
    write_yaml(tmp_path / "tables" / "tables.yaml", {"tables": tables})
    source = "b_out" if cycle else "seed"
    write_yaml(
        tmp_path / "jobs" / "a.yaml",
        {"name": "a", "target-table": "a_out", "sql": f"SELECT x FROM {source}"},
    )
    write_yaml(
        tmp_path / "jobs" / "b.yaml",
        {"name": "b", "target-table": "b_out", "sql": "SELECT x FROM a_out"},
    )
    return [
        "--path",
        str(tmp_path / "jobs"),
        "--table-definition-path",
        str(tmp_path / "tables"),
    ]


def test_a_cycle_is_printed_and_named_on_stderr_with_exit_code_1(tmp_path: Path) -> None:
    args = pipeline(tmp_path, cycle=True)
    for output in ("text", "json", "mermaid", "dot"):
        result = lineage(*args, "--output", output, state=tmp_path / "state")
        assert result.returncode == 1, (output, result.stdout, result.stderr)
        assert result.stderr == "error: jobs feed each other: a -> b -> a\n"
        assert result.stdout.strip(), "the lineage is printed all the same"
    text = lineage(*args, state=tmp_path / "state").stdout.splitlines()
    assert text[-1] == "Cycle: a -> b -> a"
    doc = json.loads(lineage(*args, "--output", "json", state=tmp_path / "state").stdout)
    assert doc["cycles"] == [["a", "b"]]
    assert doc["order"] == ["a", "b"]


def test_unused_tables_are_listed(tmp_path: Path) -> None:
    args = pipeline(tmp_path, cycle=False)
    result = lineage(*args, state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    assert "Unused tables: spare" in result.stdout.splitlines()
    assert "  a -> b: a_out" in result.stdout.splitlines()
    doc = json.loads(lineage(*args, "--output", "json", state=tmp_path / "state").stdout)
    assert doc["unused-tables"] == ["spare"]
    assert {
        "name": "spare",
        "format": "parquet",
        "location": [],
        "written-by": [],
        "read-by": [],
    } in (doc["tables"])


def test_invalid_input_is_exit_code_2_and_nothing_is_printed(tmp_path: Path) -> None:
    args = pipeline(tmp_path, cycle=False)
    write_yaml(tmp_path / "jobs" / "c.yaml", {"name": "c", "target-table": "nowhere", "sql": "x"})
    result = lineage(*args, state=tmp_path / "state")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "c.yaml: target-table" in result.stderr


def test_help_names_the_outputs_and_exit_codes() -> None:
    result = run_cli("lineage", "--help")
    assert result.returncode == 0
    assert "[text|json|mermaid|dot]" in result.stdout
    assert "1 jobs feed each other in a cycle" in " ".join(result.stdout.split())
    assert "lineage" in run_cli("--help").stdout


def test_the_docs_show_the_examples_lineage_as_the_command_prints_it(tmp_path: Path) -> None:
    """The docs' outputs are the command's own, run as the docs say: from a checkout (here a
    copy of the examples, so that the user's own ./.flink-sql-runner/ is never read) with the
    default state folder."""
    page, readme = page_with("```dot\n")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    default = {"FLINK_SQL_RUNNER_STATE_DIR": ".flink-sql-runner"}
    for output, fence in (("text", "```\n"), ("mermaid", "```mermaid\n"), ("dot", "```dot\n")):
        result = run_cli("lineage", *ALL_EXAMPLES, "--output", output, env=default, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        body = result.stdout.rstrip("\n") + "\n```"
        assert body in readme, f"{page}'s lineage --output {output} is out of date"
        assert fence in readme
