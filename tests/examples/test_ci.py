"""The CI examples: their YAML parses, their shell is valid, their plan step posts the Markdown
plan on the pull/merge request and keeps the saved plan, and their deploy step deploys the plan
saved on the merged request (run here with stand-ins for the CLI, gh and curl)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import REPO

GITHUB = REPO / "examples" / "ci" / "github-actions.yml"
GITLAB = REPO / "examples" / "ci" / "gitlab-ci.yml"


def load(path: Path) -> dict[Any, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    return doc


def github_scripts() -> dict[str, str]:
    """Every `run:` of the workflow, by job and step."""
    jobs = load(GITHUB)["jobs"]
    return {
        f"{job}[{i}]": step["run"]
        for job, spec in jobs.items()
        for i, step in enumerate(spec["steps"])
        if "run" in step
    }


def gitlab_scripts() -> dict[str, str]:
    """Each job's before_script and script, as the runner joins them: one shell."""
    doc = load(GITLAB)
    before = doc["default"]["before_script"]
    return {
        name: "\n".join([*before, *spec["script"]])
        for name, spec in doc.items()
        if isinstance(spec, dict) and "script" in spec
    }


def test_both_examples_parse_and_comment_the_markdown_plan() -> None:
    github = load(GITHUB)
    # PyYAML reads the key `on` as true (YAML 1.1); GitHub reads it as "on".
    assert set(github.get(True) or github["on"]) == {"pull_request", "push"}
    plan = github["jobs"]["plan"]
    assert plan["if"] == "github.event_name == 'pull_request'"
    assert plan["permissions"] == {"contents": "read", "pull-requests": "write"}
    (comment,) = [s for s in plan["steps"] if "gh pr comment" in s.get("run", "")]
    assert comment["env"] == {
        "GH_TOKEN": "${{ github.token }}",
        "PR": "${{ github.event.pull_request.number }}",
    }
    (kept,) = [s for s in plan["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert kept["with"]["name"] == "saved-plan" and kept["with"]["path"] == "saved-plan.json"
    deploy = github["jobs"]["deploy"]
    assert deploy["steps"][-1]["run"] == "flink-sql-runner deploy --plan saved-plan.json"
    assert deploy["permissions"]["actions"] == "read"

    gitlab = load(GITLAB)
    assert gitlab["plan"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert (
        "flink-sql-runner plan --output markdown --out saved-plan.json > plan.md"
        in gitlab_scripts()["plan"]
    )
    assert gitlab["plan"]["artifacts"]["paths"] == ["saved-plan.json"]
    assert gitlab["deploy"]["script"][-1] == "flink-sql-runner deploy --plan saved-plan.json"


@pytest.mark.parametrize(("name", "script"), [*github_scripts().items(), *gitlab_scripts().items()])
def test_every_script_is_valid_bash(name: str, script: str) -> None:
    result = subprocess.run(
        ["bash", "-n", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, (name, result.stderr)


def stand_ins(tmp: Path, plan_code: int) -> Path:
    """`flink-sql-runner` (its plan prints a comment and exits `plan_code`), `gh` and `curl`
    that write down how they were called."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    scripts = {
        "flink-sql-runner": (
            '#!/bin/sh\necho "flink-sql-runner $*" >> "$CALLS"\n'
            'if [ "$1" = plan ]; then echo "<!-- flink-sql-runner plan -->"; echo "| job |"; '
            f"exit {plan_code}; fi\n"
        ),
        "gh": '#!/bin/sh\necho "gh $*" >> "$CALLS"\ncat "$5" >> "$CALLS"\n',
        "curl": '#!/bin/sh\necho "curl $*" >> "$CALLS"\n',
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def run_script(script: str, tmp: Path, plan_code: int, env: dict[str, str]):
    return _run(script, tmp, stand_ins(tmp, plan_code), env)


def _run(script: str, tmp: Path, bin_dir: Path, env: dict[str, str]):
    """`script` in bash with the stand-ins of `bin_dir` first on PATH; its result and the
    calls they heard."""
    calls = tmp / "calls"
    result = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp,
        env={**os.environ, **env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls)},
    )
    return result, (calls.read_text().splitlines() if calls.exists() else [])


@pytest.mark.parametrize("plan_code", [0, 1])
def test_github_posts_the_plan_and_keeps_its_exit_code(tmp_path: Path, plan_code: int) -> None:
    (script,) = [s for s in github_scripts().values() if "gh pr comment" in s]
    result, calls = run_script(script, tmp_path, plan_code, {"PR": "42", "GH_TOKEN": "t"})
    assert result.returncode == plan_code, result.stderr
    assert calls == [
        "flink-sql-runner plan --output markdown --out saved-plan.json",
        "gh pr comment 42 --body-file plan.md --edit-last --create-if-none",
        "<!-- flink-sql-runner plan -->",
        "| job |",
    ]


@pytest.mark.parametrize("plan_code", [0, 1])
def test_gitlab_posts_the_plan_as_a_note_and_keeps_its_exit_code(
    tmp_path: Path, plan_code: int
) -> None:
    # The plan job's script, without the image's set-up (apt, venv, pip).
    script = "\n".join(load(GITLAB)["plan"]["script"])
    env = {
        "PLAN_NOTE_TOKEN": "glpat-x",
        "CI_API_V4_URL": "https://gitlab.example/api/v4",
        "CI_PROJECT_ID": "7",
        "CI_MERGE_REQUEST_IID": "3",
    }
    result, calls = run_script(script, tmp_path, plan_code, env)
    assert result.returncode == plan_code, result.stderr
    assert calls == [
        "flink-sql-runner validate",
        "flink-sql-runner lineage",
        "flink-sql-runner plan --output markdown --out saved-plan.json",
        "curl --fail-with-body --silent --show-error --request POST --header PRIVATE-TOKEN: "
        "glpat-x --data-urlencode body@plan.md "
        "https://gitlab.example/api/v4/projects/7/merge_requests/3/notes",
    ]


def test_no_comment_when_the_plan_printed_nothing(tmp_path: Path) -> None:
    (script,) = [s for s in github_scripts().values() if "gh pr comment" in s]
    script = script.replace(
        "flink-sql-runner plan --output markdown --out saved-plan.json", "false"
    )
    result, calls = run_script(script, tmp_path, 0, {"PR": "42"})
    assert result.returncode == 1
    assert calls == []


#: `gh` on the merge: the merged pull request (none when $NO_PR is set), its head, the run that
#: planned it, and the download of its saved plan.
GH_ON_MERGE = """#!/bin/sh
echo "gh $*" >> "$CALLS"
case "$1 $2" in
  "api "*) [ -n "$NO_PR" ] || echo 42 ;;
  "pr view") echo abc123 ;;
  "run list") echo 7 ;;
  "run download") echo '{"digest": "sha256:x"}' > saved-plan.json ;;
esac
"""

#: `curl` on the merge (GitLab's API): the merged merge request, its pipelines, their jobs, and
#: the plan job's artifact.
CURL_ON_MERGE = r"""#!/bin/sh
echo "curl $*" >> "$CALLS"
for last; do :; done
case "$last" in
  */merge_requests) echo '[{"iid": 3}]' ;;
  */pipelines) echo '[{"id": 99}, {"id": 98}]' ;;
  */jobs\?*) echo '[{"name": "validate", "id": 1}, {"name": "plan", "id": 5}]' ;;
  */artifacts/saved-plan.json) echo '{"digest": "sha256:x"}' > saved-plan.json ;;
esac
"""


def merge_stand_ins(tmp: Path) -> Path:
    bin_dir = stand_ins(tmp, 0)
    for name, body in (("gh", GH_ON_MERGE), ("curl", CURL_ON_MERGE)):
        (bin_dir / name).write_text(body)
    return bin_dir


def run_on_merge(script: str, tmp: Path, env: dict[str, str]):
    return _run(script, tmp, merge_stand_ins(tmp), env)


def github_deploy_script() -> str:
    steps = load(GITHUB)["jobs"]["deploy"]["steps"]
    return "\n".join(s["run"] for s in steps if "gh run download" in s.get("run", "")
                     or s.get("run", "").startswith("flink-sql-runner"))  # fmt: skip


def test_github_deploys_the_plan_saved_on_the_merged_pull_request(tmp_path: Path) -> None:
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "m1", "WORKFLOW": "streaming-jobs"}
    result, calls = run_on_merge(github_deploy_script(), tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert calls == [
        "gh api repos/o/r/commits/m1/pulls --jq .[0].number // empty",
        "gh pr view 42 --json headRefOid --jq .headRefOid",
        "gh run list --workflow streaming-jobs --event pull_request --commit abc123 --limit 1 "
        "--json databaseId --jq .[0].databaseId // empty",
        "gh run download 7 --name saved-plan",
        "flink-sql-runner deploy --plan saved-plan.json",
    ]


def test_github_deploys_nothing_without_a_reviewed_plan(tmp_path: Path) -> None:
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "m1", "NO_PR": "1", "WORKFLOW": "w"}
    result, calls = run_on_merge(github_deploy_script(), tmp_path, env)
    assert result.returncode == 1
    assert "no reviewed plan to deploy" in result.stderr
    assert not any(c.startswith("flink-sql-runner") for c in calls)


def test_gitlab_deploys_the_plan_saved_on_the_merged_merge_request(tmp_path: Path) -> None:
    script = "\n".join(load(GITLAB)["deploy"]["script"])
    env = {"CI_API_V4_URL": "https://gl/api/v4", "CI_PROJECT_ID": "7", "CI_COMMIT_SHA": "m1",
           "PLAN_NOTE_TOKEN": "glpat-x"}  # fmt: skip
    result, calls = run_on_merge(script, tmp_path, env)
    assert result.returncode == 0, result.stderr
    api = "https://gl/api/v4/projects/7"
    assert [c.rsplit(" ", 1)[-1] for c in calls] == [
        f"{api}/repository/commits/m1/merge_requests",
        f"{api}/merge_requests/3/pipelines",
        f"{api}/pipelines/99/jobs?scope[]=success&scope[]=failed",
        f"{api}/jobs/5/artifacts/saved-plan.json",
        "saved-plan.json",
    ]
    assert calls[-1] == "flink-sql-runner deploy --plan saved-plan.json"
