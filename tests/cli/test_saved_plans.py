"""Saved plans through the real command line, without starting Spark: `plan --out` writes one,
`deploy --plan` and `deploy-job --plan FILE NAME` refuse a stale, damaged or misused one with
exit code 2, one line each, and touch nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flink_sql_runner.render.plan_doc import markdown_of_plan_doc
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


def digest(project: Path) -> str:
    return str(json.loads((project / "plan.json").read_text())["digest"])


def untouched(project: Path) -> bool:
    return (
        not (project / "state" / "manifests").exists() and not (project / "state" / "runs").exists()
    )


def test_deploy_job_refuses_one_job_of_a_stale_plan(project: Path) -> None:
    job = project / "examples" / "queries" / "tick-log.yaml"
    job.write_text(job.read_text() + "# edited after the review\n")
    refused = cli("deploy-job", "--plan", "plan.json", "tick-log", "--state-dir", "state",
                  "--expect-digest", digest(project), cwd=project)  # fmt: skip
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
         "--plan carries a saved plan out as it is: no --dry-run"),
        (["deploy", "--path", "examples", "--plan", "plan.json"],
         "--path examples: the saved plan was made from examples/queries; give the same"),
        (["deploy", "--plan", "plan.json", "--kafka-start", "earliest"],
         "--kafka-start earliest: the saved plan was made with none"),
        (["deploy", "--plan", "plan.json", "--prune"],
         "--prune: the saved plan was made without it; a plan is carried out as it was"),
        (["deploy", "--plan", "plan.json", "--expect-digest", "sha256:0"],
         "plan.json: digest: sha256:"),
        (["deploy", "--plan", "plan.json", "--master", "local[2]"],
         "target: master: the plan was made for local[*], this deploy's is local[2]"),
        (["deploy"], "deploy needs --path (or --plan FILE, whose paths it takes)"),
        (["deploy", "--plan", "plan.json", "--runner-path", "hdfs:///jobs/job_runner.py"],
         "target: runner-path: the plan was made for none, this deploy's is hdfs:///jobs/"),
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


def test_deploy_plan_takes_its_paths_and_catalog_from_the_plan(project: Path) -> None:
    """Finding 6: `deploy --plan FILE` alone (the edit after the review shows the plan's own
    paths were read), and the digest approved binds it (no warning)."""
    job = project / "examples" / "queries" / "tick-log.yaml"
    job.write_text(job.read_text() + "# edited after the review\n")
    refused = cli("deploy", "--plan", "plan.json", "--state-dir", "state", "--expect-digest",
                  digest(project), cwd=project)  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[:2] == [
        "error: plan.json: the saved plan is stale; nothing was touched:",
        "tick-log: examples/queries/tick-log.yaml changed since the plan",
    ]
    assert untouched(project)


def test_a_plan_not_bound_to_its_review_says_so(project: Path) -> None:
    job = project / "examples" / "queries" / "tick-log.yaml"
    job.write_text(job.read_text() + "# edited after the review\n")
    result = cli("deploy", "--plan", "plan.json", "--state-dir", "state", cwd=project)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "warning: plan.json: carried out as the file says: neither --expect-digest nor the plan "
        "key (FLINK_SQL_RUNNER_PLAN_KEY) binds it to the plan that was reviewed "
        "(docs/tutorials/pull-request-gate.md)"
    )


def test_the_plan_key_signs_and_is_never_shown(project: Path) -> None:
    key = {"FLINK_SQL_RUNNER_PLAN_KEY": "ci-only-key-0123456789abcdef"}
    saved = cli("plan", "--path", "examples/queries", *TABLES, "--state-dir", "state",
                "--out", "signed.json", env=key, cwd=project)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert ", signed;" in saved.stderr
    doc = json.loads((project / "signed.json").read_text())
    assert doc["keyed"] is True and doc["signature"].startswith("hmac-sha256:")
    unsigned = cli("deploy", "--plan", "plan.json", "--state-dir", "state", env=key,
                   cwd=project)  # fmt: skip
    assert unsigned.returncode == 2
    assert "plan.json: signature: none: the plan was not made with the plan key" in unsigned.stderr
    short = cli("deploy", "--plan", "signed.json", "--state-dir", "state",
                env={"FLINK_SQL_RUNNER_PLAN_KEY": "hunter2"}, cwd=project)  # fmt: skip
    assert short.returncode == 2
    assert short.stderr == (
        "error: FLINK_SQL_RUNNER_PLAN_KEY: 7 characters, fewer than 16: a plan key must be one "
        "a word list cannot find (e.g. `openssl rand -hex 32`)\n"
    )
    assert untouched(project)


def test_plan_records_the_runner_path_the_deploy_gives(project: Path) -> None:
    """A cluster's deploy gives --runner-path (FLINK_SQL_RUNNER_RUNNER_PATH in CI): `plan`
    takes it too, so the plan made with it holds for that deploy."""
    runner = {"FLINK_SQL_RUNNER_RUNNER_PATH": "hdfs:///jobs/job_runner.py"}
    saved = cli("plan", "--path", "examples/queries", *TABLES, "--state-dir", "state",
                "--out", "runner.json", env=runner, cwd=project)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    doc = json.loads((project / "runner.json").read_text())
    assert doc["target"]["runner-path"] == "hdfs:///jobs/job_runner.py"


def test_an_empty_expected_digest_variable_is_refused(project: Path) -> None:
    """Review of issue 54, R9: an empty FLINK_SQL_RUNNER_EXPECT_DIGEST (a CI step whose digest
    came out empty) read as none given: the plan ran unbound, with only a warning."""
    result = cli("deploy", "--plan", "plan.json", "--state-dir", "state",
                 env={"FLINK_SQL_RUNNER_EXPECT_DIGEST": ""}, cwd=project)  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        "error: FLINK_SQL_RUNNER_EXPECT_DIGEST is set but empty: give the approved digest, or "
        "unset it\n"
    )
    assert untouched(project)


def test_deploy_plan_takes_its_template_from_the_plan(project: Path) -> None:
    """A plan made with --template-file is carried out with that template though the deploy
    does not name it (the plan needs no other input); another is refused."""
    saved = cli("plan", "--path", "examples/queries", *TABLES, "--template-file",
                "examples/job-template.yaml", "--state-dir", "state", "--out", "t.json",
                cwd=project)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    job = project / "examples" / "queries" / "tick-log.yaml"
    job.write_text(job.read_text() + "# edited after the review\n")
    refused = cli("deploy", "--plan", "t.json", "--state-dir", "state", cwd=project)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[1:3] == [
        "error: t.json: the saved plan is stale; nothing was touched:",
        "tick-log: examples/queries/tick-log.yaml changed since the plan",
    ], "the plan's template was read: no line says the template changed"
    other = cli("deploy", "--plan", "t.json", "--state-dir", "state", "--template-file",
                "examples/tables/sinks.yaml", cwd=project)  # fmt: skip
    assert other.returncode == 2
    assert (
        "--template-file examples/tables/sinks.yaml: the saved plan was made from "
        "examples/job-template.yaml" in other.stderr
    )
    assert untouched(project)


def test_a_saved_plan_and_a_plan_s_json_show_as_its_markdown(project: Path) -> None:
    """What the page shows of a saved plan, or of what `plan --output json` printed, is the
    pull request's comment (render/plan_doc.py): the same Markdown, byte for byte."""
    args = ["plan", "--path", "examples/queries", *TABLES, "--state-dir", "state"]
    markdown = cli(*args, "--output", "markdown", "--out", "again.json", cwd=project)
    assert markdown.returncode == 0, markdown.stderr
    saved = json.loads((project / "again.json").read_text())
    assert markdown.stdout == markdown_of_plan_doc(saved) + "\n"
    assert f"Saved plan `again.json`, digest `{saved['digest']}`" in markdown.stdout
    assert "```mermaid" in markdown.stdout and "**start-clean**" in markdown.stdout
    printed = cli(*args, "--output", "json", "--out", "third.json", cwd=project)
    assert printed.returncode == 0, printed.stderr
    doc = json.loads(printed.stdout)
    assert doc["lineage"]["jobs"] and all(s["text"] for j in doc["jobs"] for s in j["steps"])
    third = json.loads((project / "third.json").read_text())
    assert markdown_of_plan_doc(doc) == markdown_of_plan_doc(third)
    assert markdown_of_plan_doc(doc) == markdown.stdout[:-1].replace(
        f"`again.json`, digest `{saved['digest']}`", f"`third.json`, digest `{third['digest']}`"
    )
    plain = cli(*args, "--output", "json", cwd=project)
    assert markdown_of_plan_doc(json.loads(plain.stdout)) + "\n" == (
        cli(*args, "--output", "markdown", cwd=project).stdout
    )
