"""`validate --output json`: one document, the valid jobs or every problem, exit codes as the
text output's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import REPO, run_cli

TABLES = REPO / "examples" / "tables"
BROKEN = REPO / "tests" / "data" / "broken"


def test_valid_jobs_are_one_json_document() -> None:
    result = run_cli(
        "validate", "--path", str(REPO / "examples" / "queries"), "--table-definition-path",
        str(TABLES), "--output", "json", cwd=REPO,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    assert "expensive-orders" in doc["jobs"]
    assert doc["relative-paths"] == ["examples/data/orders"]
    assert doc["resolved-against"] == str(REPO)


def test_problems_are_one_json_document_with_exit_2(tmp_path: Path) -> None:
    case = BROKEN / "unknown-source-table.yaml"
    env = {"FLINK_SQL_RUNNER_OUTPUT": "json"}
    result = run_cli(
        "validate", "--path", str(case), "--table-definition-path", str(TABLES), env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert (doc["ok"], doc["jobs"]) == (False, [])
    (problem,) = doc["problems"]
    assert set(problem) == {"file", "field", "message"}
    assert problem["file"] == str(case)
