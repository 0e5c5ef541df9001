"""The CI examples: their YAML parses, their shell is valid, their plan step posts the Markdown
plan on the pull/merge request and keeps the saved plan, and their deploy step deploys the plan
saved on the merged request (run here with stand-ins for the CLI, gh and curl)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
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
    assert deploy["steps"][-1]["run"] == (
        'flink-sql-runner deploy --plan saved-plan.json --expect-digest "$(cat approved-digest)"'
    )
    assert deploy["permissions"]["actions"] == "read"

    gitlab = load(GITLAB)
    assert gitlab["plan"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert (
        "flink-sql-runner plan --output markdown --out saved-plan.json > plan.md"
        in gitlab_scripts()["plan"]
    )
    assert gitlab["plan"]["artifacts"]["paths"] == ["saved-plan.json"]
    assert gitlab["deploy"]["script"][-1] == (
        'flink-sql-runner deploy --plan saved-plan.json --expect-digest "$(cat approved-digest)"'
    )


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


APPROVED = "sha256:" + "a" * 64
#: A digest posted by someone else than the plan's workflow (or token): never taken.
POSTED_BY_OTHERS = "sha256:" + "b" * 64
WORKFLOW_FILE = ".github/workflows/streaming-jobs.yml"

#: `gh` on the merge: the merged pull request (none when $NO_PR is set), its head, the runs of
#: its head (a fork's first; only the fork's when $FORK_ONLY is set), the download of its saved
#: plan, and the pull request's comments (a digest by someone else, then the workflow's own;
#: none when $NO_COMMENT is set).
GH_ON_MERGE = (
    """#!/bin/sh
echo "gh $*" >> "$CALLS"
case "$1 $2" in
  "api repos/o/r/commits/"*) [ -n "$NO_PR" ] || echo 42 ;;
  "api repos/o/r/actions/runs"*)
    own='{"id": 7, "head_repository": {"full_name": "o/r"}, "path": "PATH"}'
    fork='{"id": 9, "head_repository": {"full_name": "mallory/r"}, "path": "PATH"}'
    if [ -n "$FORK_ONLY" ]; then own='{"id": 8, "head_repository": null, "path": "x"}'; fi
    echo "{\\"workflow_runs\\": [$fork, $own]}" ;;
  "api repos/o/r/issues/"*)
    if [ -n "$NO_COMMENT" ]; then echo '[]'; exit 0; fi
    bot='"user": {"login": "github-actions[bot]"}'
    echo "[{$bot, \\"body\\": \\"Saved plan, digest \\`sha256:0000\\`\\"},"
    echo " {$bot, \\"body\\": \\"Saved plan, digest \\`APPROVED\\`: the\\"},"
    echo ' {"user": {"login": "mallory"}, "body": "digest `OTHERS`"}]' ;;
  "pr view") echo abc123 ;;
  "run download") echo '{"digest": "sha256:x"}' > saved-plan.json ;;
esac
""".replace("PATH", WORKFLOW_FILE)
    .replace("APPROVED", APPROVED)
    .replace("OTHERS", POSTED_BY_OTHERS)
)

#: `curl` on the merge (GitLab's API): the merged merge request, its pipelines (a fork's
#: first), their jobs, the plan job's artifact, the token's user, the request's notes (newest
#: first: another user's digest, then the token's own).
CURL_ON_MERGE = r"""#!/bin/sh
echo "curl $*" >> "$CALLS"
for last; do :; done
case "$last" in
  */merge_requests) echo '[{"iid": 3}]' ;;
  */pipelines) echo '[{"id": 100, "project_id": 8}, {"id": 99, "project_id": 7}]' ;;
  */jobs\?*) echo '[{"name": "validate", "id": 1}, {"name": "plan", "id": 5}]' ;;
  */artifacts/saved-plan.json) echo '{"digest": "sha256:x"}' > saved-plan.json ;;
  */user) echo '{"id": 5}' ;;
  */notes\?*) echo '[{"author": {"id": 6}, "body": "digest `OTHERS`"},
                     {"author": {"id": 5}, "body": "Saved plan `s`, digest `APPROVED`: the"}]' ;;
esac
""".replace("OTHERS", POSTED_BY_OTHERS).replace("APPROVED", APPROVED)


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


GITHUB_ON_MERGE = {"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "m1", "WORKFLOW_FILE": WORKFLOW_FILE}


def test_github_deploys_the_plan_saved_on_the_merged_pull_request(tmp_path: Path) -> None:
    """Finding 8: the artifact of this repository's run (not a fork's), and the digest of the
    workflow's last plan comment given to the deploy."""
    result, calls = run_on_merge(github_deploy_script(), tmp_path, GITHUB_ON_MERGE)
    assert result.returncode == 0, result.stderr
    assert calls == [
        "gh api repos/o/r/commits/m1/pulls --jq .[0].number // empty",
        "gh pr view 42 --json headRefOid --jq .headRefOid",
        "gh api repos/o/r/actions/runs?event=pull_request&head_sha=abc123",
        "gh run download 7 --name saved-plan",
        "gh api repos/o/r/issues/42/comments?per_page=100",
        f"flink-sql-runner deploy --plan saved-plan.json --expect-digest {APPROVED}",
    ]


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"NO_PR": "1"}, "no reviewed plan to deploy"),
        ({"FORK_ONLY": "1"}, "no plan of pull request #42 at abc123 by a run of this repository"),
        ({"NO_COMMENT": "1"}, "no plan comment with a digest on pull request #42"),
    ],
)
def test_github_deploys_nothing_without_a_reviewed_plan(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    result, calls = run_on_merge(github_deploy_script(), tmp_path, {**GITHUB_ON_MERGE, **env})
    assert result.returncode == 1
    assert said in result.stderr
    assert not any(c.startswith("flink-sql-runner") for c in calls)


def test_github_concurrency_holds_the_deploy_alone() -> None:
    """Finding 8: a pull request's plan never waits behind, nor cancels, a queued deploy."""
    github = load(GITHUB)
    assert "concurrency" not in github
    assert "concurrency" not in github["jobs"]["plan"]
    assert github["jobs"]["deploy"]["concurrency"] == {
        "group": "streaming-jobs-deploy",
        "cancel-in-progress": False,
    }
    plan_env, deploy_env = github["jobs"]["plan"]["env"], github["jobs"]["deploy"]["env"]
    assert "PLAN_AWS" in plan_env["AWS_ACCESS_KEY_ID"]
    assert "DEPLOY_AWS" in deploy_env["AWS_ACCESS_KEY_ID"]
    assert "AWS_ACCESS_KEY_ID" not in github["env"]


def test_gitlab_deploys_the_plan_saved_on_the_merged_merge_request(tmp_path: Path) -> None:
    script = "\n".join(load(GITLAB)["deploy"]["script"])
    env = {"CI_API_V4_URL": "https://gl/api/v4", "CI_PROJECT_ID": "7", "CI_COMMIT_SHA": "m1",
           "PLAN_NOTE_TOKEN": "glpat-x"}  # fmt: skip
    result, calls = run_on_merge(script, tmp_path, env)
    assert result.returncode == 0, result.stderr
    api = "https://gl/api/v4/projects/7"
    assert [c.rsplit(" ", 1)[-1] for c in calls[:-1]] == [
        f"{api}/repository/commits/m1/merge_requests",
        f"{api}/merge_requests/3/pipelines",
        f"{api}/pipelines/99/jobs?scope[]=success&scope[]=failed",
        f"{api}/jobs/5/artifacts/saved-plan.json",
        "https://gl/api/v4/user",
        f"{api}/merge_requests/3/notes?sort=desc&order_by=created_at&per_page=100",
    ]
    assert calls[-1] == f"flink-sql-runner deploy --plan saved-plan.json --expect-digest {APPROVED}"


def test_gitlab_plan_uses_variables_merge_request_pipelines_receive() -> None:
    """Finding 8: the plan's read-only credentials are its own (not protected); the deploy's
    are protected and used by the deploy alone."""
    gitlab = load(GITLAB)
    assert gitlab["plan"]["variables"]["AWS_ACCESS_KEY_ID"] == "$PLAN_AWS_ACCESS_KEY_ID"
    assert gitlab["deploy"]["variables"]["AWS_ACCESS_KEY_ID"] == "$DEPLOY_AWS_ACCESS_KEY_ID"
    assert "AWS_ACCESS_KEY_ID" not in gitlab.get("variables", {})


def test_both_keep_the_cache_folder_the_cli_is_told_of(tmp_path: Path) -> None:
    """The load cache survives a fresh runner: each example restores and saves the folder it
    names in FLINK_SQL_RUNNER_CACHE_DIR, GitHub's keyed by the release the step names."""
    github, gitlab = load(GITHUB), load(GITLAB)
    folder = github["env"]["FLINK_SQL_RUNNER_CACHE_DIR"]
    assert gitlab["variables"]["FLINK_SQL_RUNNER_CACHE_DIR"] == folder
    assert gitlab["default"]["cache"]["paths"] == [folder]
    for job in github["jobs"].values():
        steps = job["steps"]
        release = next(s for s in steps if s.get("id") == "release")
        cache = next(s for s in steps if str(s.get("uses", "")).startswith("actions/cache@"))
        assert steps.index(release) < steps.index(cache)
        assert cache["with"]["path"] == folder
        assert cache["with"]["key"].startswith(cache["with"]["restore-keys"])
        out = tmp_path / "output"
        done = subprocess.run(
            ["bash", "-c", release["run"]],
            env={
                **os.environ,
                "GITHUB_OUTPUT": str(out),
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            },  # fmt: skip
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        name = out.read_text().strip().removeprefix("name=")
        assert re.fullmatch(r"flink-sql-runner-[0-9][A-Za-z0-9.+-]*", name), name
        out.unlink()
