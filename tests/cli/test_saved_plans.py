"""Saved plans through the real command line, without starting Spark: `plan --out` writes one,
`deploy --plan` and `deploy-job --plan FILE NAME` refuse a stale, damaged or misused one with
exit code 2, one line each, and touch nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import REPO
from tests.support.cli import run_cli as cli

TABLES = ["--table-definition-path", "examples/tables"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The examples in a folder of their own, a saved plan of their first deploy in it."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    saved = cli("plan", "--path", "examples/queries", *TABLES, "--state-dir", "state",
                "--out", "plan.json", "--output", "json", cwd=tmp_path)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    doc = json.loads(saved.stdout)
    assert doc["saved-plan"] == {
        "file": "plan.json",
        "digest": json.loads((tmp_path / "plan.json").read_text())["digest"],
    }
    assert "Saved the plan to plan.json" in saved.stderr
    return tmp_path


def untouched(project: Path) -> bool:
    return (
        not (project / "state" / "manifests").exists() and not (project / "state" / "runs").exists()
    )


def test_deploy_job_refuses_one_job_of_a_stale_plan(project: Path) -> None:
    job = project / "examples" / "queries" / "tick-log.yaml"
    job.write_text(job.read_text() + "# edited after the review\n")
    refused = cli("deploy-job", "--plan", "plan.json", "tick-log", *TABLES, "--state-dir",
                  "state", cwd=project)  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[:2] == [
        "error: plan.json: the saved plan is stale; nothing was touched:",
        "tick-log: examples/queries/tick-log.yaml changed since the plan",
    ]
    assert "A plan made now, from what is" in refused.stdout
    assert untouched(project)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["deploy-job", "tick-log"], "needs --job-config-path FILE (or --plan FILE NAME)"),
        (["deploy-job", "--plan", "plan.json"], "--plan FILE takes the NAME of one of its jobs"),
        (["deploy-job", "--plan", "plan.json", "nope"], "plan.json: jobs: no job nope in"),
        (["deploy", "--path", "examples/queries", "--plan", "plan.json", "--dry-run"],
         "--plan carries a saved plan out as it is: no --dry-run, --prune"),
        (["deploy", "--path", "examples/queries", "--plan", "plan.json", "--max-plan-age", "0s"],
         "older than --max-plan-age"),
    ],
)  # fmt: skip
def test_misused_or_refused_plans_exit_2_before_anything_is_touched(
    project: Path, args: list[str], said: str
) -> None:
    result = cli(*args, *TABLES, "--state-dir", "state", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr
    assert untouched(project)


def test_a_damaged_plan_is_refused_naming_its_file_and_field(project: Path) -> None:
    path = project / "plan.json"
    path.write_text(path.read_text().replace('"start-clean"', '"noop"', 1))
    result = cli("deploy", "--path", "examples/queries", *TABLES, "--state-dir", "state",
                 "--plan", "plan.json", cwd=project)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("error: plan.json: digest: does not match the plan's content")
    assert untouched(project)
