"""`validate` and `plan` through the real command line: examples, exit codes, JSON, secrets, S3."""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import run_cli as cli
from tests.support.examples import EXAMPLE_JOBS, EXAMPLES, stored_examples_with

REPO = Path(__file__).resolve().parents[2]


def test_help_lists_every_command() -> None:
    result = cli("--help")
    assert result.returncode == 0
    for command in ("validate", "plan", "deploy", "deploy-job", "status", "stop"):
        assert command in result.stdout


def test_validate_the_examples() -> None:
    result = cli("validate", *EXAMPLES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"4 jobs valid: {', '.join(EXAMPLE_JOBS)}",
        f"relative paths resolve against {REPO} (the folder this command runs in; deploy "
        "stores them absolute): examples/data/orders",
    ]


@pytest.mark.parametrize(
    "template", ["examples/job-template.yaml", "examples/cluster/standalone-template.yaml"]
)
def test_the_examples_validate_with_the_example_templates(template: str) -> None:
    result = cli("validate", *EXAMPLES, "--template-file", template)
    assert result.returncode == 0, result.stderr


def test_plan_of_the_examples_on_an_empty_state_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    text = cli("plan", *EXAMPLES, "--state-dir", str(state))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    for name in EXAMPLE_JOBS:
        assert any(line.split()[:3] == [name, "start-clean", "v1"] for line in lines), lines
    assert "Plan: 4 jobs (4 start-clean); changes pending." in text.stdout

    as_json = cli("plan", *EXAMPLES, "--state-dir", str(state), "--output", "json")
    assert as_json.returncode == 0, as_json.stderr
    jobs = json.loads(as_json.stdout)["jobs"]
    assert [(j["name"], j["action"], j["query-version"]) for j in jobs] == [
        (name, "start-clean", 1) for name in EXAMPLE_JOBS
    ]
    keys = {"name", "action", "query-version", "reason", "changes", "steps", "rollback"}
    assert all(set(j) == keys for j in jobs)
    assert jobs[0]["steps"][0]["step"] == "start" and jobs[0]["steps"][1]["step"] == "record"
    assert not state.exists(), "plan must not create or write anything"


def test_detailed_exitcode_tells_pending_from_nothing_to_do(tmp_path: Path) -> None:
    store = tmp_path / "store"
    pending = cli("plan", *EXAMPLES, "--manifest-store", str(store), "--detailed-exitcode")
    assert pending.returncode == 4, pending.stderr
    # Record every example as deployed (version 1) and not running, with a checkpoint: the
    # plan restarts them, still pending. Desired-state stopped jobs are "nothing to do".
    stopped_jobs = tmp_path / "jobs"
    stopped_jobs.mkdir()
    for name in EXAMPLE_JOBS:
        doc = yaml.safe_load((REPO / "examples" / "queries" / f"{name}.yaml").read_text())
        doc["desired-state"] = "stopped"
        (stopped_jobs / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    args = ["--path", str(stopped_jobs), "--table-definition-path", "examples/tables"]
    nothing = cli("plan", *args, "--manifest-store", str(store), "--detailed-exitcode")
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    assert "nothing to do" in nothing.stdout


def test_options_come_from_environment_variables(tmp_path: Path) -> None:
    env = {
        "FLINK_SQL_RUNNER_PATH": "examples/queries",
        "FLINK_SQL_RUNNER_TABLE_DEFINITION_PATH": "examples/tables",
        "FLINK_SQL_RUNNER_STATE_DIR": str(tmp_path / "state"),
        "FLINK_SQL_RUNNER_OUTPUT": "json",
    }
    result = cli("plan", env=env)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["jobs"]) == 4


def write_job_with_secret(folder: Path, secret: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    job = {
        "name": "leaky",
        "target-table": "expensive_orders",
        "sql": "SELECT order_id FROM orders",
        "sparkProperties": {
            key: secret
            for key in (
                "spark.hadoop.fs.s3a.secret.key",
                "my.db.password",
                "spark.hadoop.fs.s3a.access.key",
                "spark.kafka.sasl.jaas.config",
                "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
                "spark.hadoop.google.cloud.auth.service.account.private.key",
            )
        },
    }
    (folder / "leaky.yaml").write_text(yaml.safe_dump(job))


def test_secrets_are_masked_in_plan_text_and_json(tmp_path: Path) -> None:
    jobs, store = tmp_path / "jobs", tmp_path / "store"
    args = ["--path", str(jobs), "--table-definition-path", "examples/tables"]
    write_job_with_secret(jobs, "first-Secret-value")
    # A stored manifest holding the old secret, so the plan shows a change old -> new.
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs
    from flink_sql_runner.stores.local import LocalStore

    (job,) = load_jobs([jobs], None, load_catalog([REPO / "examples" / "tables"]), tmp_path)
    LocalStore(store).write(StoredManifest(job.spec, job.tables, Meta.new(1)), None)
    write_job_with_secret(jobs, "second-Secret-value")
    for output in ("text", "json"):
        result = cli("plan", *args, "--manifest-store", str(store), "--output", output)
        shown = result.stdout + result.stderr
        assert "sparkProperties.my.db.password" in shown
        assert "sparkProperties.spark.kafka.sasl.jaas.config" in shown
        assert "Secret-value" not in shown, shown


@pytest.mark.s3
def test_plan_reads_an_s3_store_over_http(
    s3_env: dict[str, str], s3_client: Any, tmp_path: Path
) -> None:
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs
    from flink_sql_runner.stores.s3 import S3Store

    s3_client.create_bucket(Bucket="plans")
    jobs = load_jobs(
        [REPO / "examples" / "queries"],
        None,
        load_catalog([REPO / "examples" / "tables"]),
        Path(os.environ["FLINK_SQL_RUNNER_STATE_DIR"]),  # the state folder the CLI uses here
    )
    store = S3Store("plans", "deployed/", client=s3_client)
    expensive = next(j for j in jobs if j.name == "expensive-orders")
    changed = {**expensive.spec, "sql": "SELECT order_id FROM orders WHERE price > 1"}
    store.write(StoredManifest(changed, expensive.tables, Meta.new(3)), None)
    result = cli("plan", *EXAMPLES, "--manifest-store", "s3://plans/deployed/", "--output", "json")
    assert result.returncode == 0, result.stderr
    plan = {j["name"]: j for j in json.loads(result.stdout)["jobs"]}
    assert plan["expensive-orders"]["action"] == "start-clean"
    assert plan["expensive-orders"]["query-version"] == 4
    assert [c["field"] for c in plan["expensive-orders"]["changes"]] == ["sql"]
    assert plan["tick-log"]["action"] == "start-clean"
    # The original tool's bucket/prefix pair means the same store.
    legacy = cli(
        "plan",
        *EXAMPLES,
        "--external-job-config-bucket",
        "plans",
        "--external-job-config-prefix",
        "deployed",
        "--output",
        "json",
    )
    assert json.loads(legacy.stdout) == json.loads(result.stdout)


def test_plan_writes_its_steps_to_the_timing_log_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "timing.jsonl"
    env = {"FLINK_SQL_RUNNER_TIMING_LOG": str(log)}
    result = cli("plan", *EXAMPLES, "--state-dir", str(tmp_path / "state"), env=env)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events == ["command", "loaded", "gathered", "decided", "exit"]


def _loaded(log: Path) -> dict[str, Any]:
    events = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return next(e for e in events if e["event"] == "loaded")


def test_a_cache_folder_given_is_kept_without_a_state_folder(tmp_path: Path) -> None:
    """CI's fresh checkout has no state folder: `--cache-dir` (or FLINK_SQL_RUNNER_CACHE_DIR)
    is where a cache step restores what the last run read; without it, nothing is gathered to
    be kept, and nothing is written."""
    log, state, kept = tmp_path / "timing.jsonl", tmp_path / "no-state", tmp_path / "ci" / "fsr"
    env = {"FLINK_SQL_RUNNER_TIMING_LOG": str(log)}
    plain = cli("plan", *EXAMPLES, "--state-dir", str(state), env=env)
    assert plain.returncode == 0, plain.stderr
    assert "reused" not in _loaded(log) and not state.exists()
    counts = []
    for _ in range(2):
        env["FLINK_SQL_RUNNER_CACHE_DIR"] = str(kept)
        result = cli("plan", *EXAMPLES, "--state-dir", str(state), env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == plain.stdout
        loaded = _loaded(log)
        counts.append((loaded["reused"], loaded["read"]))
    files = counts[0][1]  # the 4 jobs and the 2 table files
    assert counts == [(0, files), (files, 0)] and files == 6
    assert sorted(p.name for p in kept.iterdir()) == ["load.json"]
    assert not state.exists()


def test_a_plan_of_one_job_says_job(tmp_path: Path) -> None:
    one = ["--path", "examples/queries/tick-log.yaml", "--table-definition-path", "examples/tables"]
    result = cli("plan", *one, "--state-dir", str(tmp_path / "state"))
    assert result.returncode == 0, result.stderr
    assert "Plan: 1 job (1 start-clean); changes pending." in result.stdout


def test_the_text_plan_shows_sql_and_code_changes_as_a_diff(tmp_path: Path) -> None:
    store = stored_examples_with(
        tmp_path,
        **{
            "expensive-orders": {
                "sql": "SELECT order_id, price, buyer_id, order_time\nFROM orders\n"
                "WHERE price > 5000\n",
                "description": "old words",
            },
            "buyer-orders-code": {
                "code": (REPO / "examples/queries/buyer-orders-code.yaml")
                .read_text()
                .split("code: |\n")[1]
                .replace("    ", "")
                .replace("  ", "", 1)
                .replace('"small"', '"medium"')
            },
        },
    )
    result = cli("plan", *EXAMPLES, "--manifest-store", str(store))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("expensive-orders")))
    assert [line.strip() for line in lines[at + 1 : at + 6]] == [
        "~ sql: deployed -> git  [query: the query changed]",
        "@@ -1,3 +1,3 @@",
        "SELECT order_id, price, buyer_id, order_time",
        "FROM orders",
        "-WHERE price > 5000",
    ]
    assert lines[at + 6].strip() == "+WHERE price > 9000"
    tilde = lines[at + 1].index("~")
    assert lines[at + 2].startswith(" " * (tilde + 4) + "@@"), "indented under its field"
    assert '-    size = F.when(F.col("price") > 9000, "large").otherwise("medium")' not in lines
    code = [line.strip() for line in lines if "otherwise(" in line]
    assert code == [
        '-size = F.when(F.col("price") > 9000, "large").otherwise("medium")',
        '+size = F.when(F.col("price") > 9000, "large").otherwise("small")',
    ]
    assert "~ description: old words -> Orders above 9000  [config: " in result.stdout
    assert "\x1b[" not in result.stdout, "no colour when stdout is not a terminal"


def _plan_on_a_terminal(store: Path, env: dict[str, str]) -> str:
    """The text plan as a terminal shows it: stdout is a pseudo-terminal."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "flink_sql_runner", "plan", *EXAMPLES, "--manifest-store"]
    try:
        done = subprocess.run(  # noqa: S603 - a list, never a shell
            [*argv, str(store)],
            stdout=follower,
            stderr=subprocess.PIPE,
            cwd=REPO,
            env={**os.environ, **env},
            timeout=120,
            check=False,
        )
        os.close(follower)
        assert done.returncode == 0, done.stderr
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def test_the_sql_diff_is_coloured_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    sql = "SELECT order_id, price, buyer_id, order_time\nFROM orders\nWHERE price > 5000\n"
    store = stored_examples_with(tmp_path, **{"expensive-orders": {"sql": sql}})
    env = {k: "" for k in ("NO_COLOR",)}
    coloured = _plan_on_a_terminal(store, env)
    assert "\x1b[31m-WHERE price > 5000\x1b[0m" in coloured
    assert "\x1b[32m+WHERE price > 9000\x1b[0m" in coloured
    plain = _plan_on_a_terminal(store, {"NO_COLOR": "1"})
    assert "\x1b[" not in plain and "-WHERE price > 5000" in plain


KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def keys_of(doc: Any, path: str = "") -> list[str]:
    """Every key of a JSON document, with where it is; not inside a change's old and new
    values (a manifest's own fields, e.g. sparkProperties' keys)."""
    if isinstance(doc, list):
        return [k for i, item in enumerate(doc) for k in keys_of(item, f"{path}[{i}]")]
    if not isinstance(doc, dict):
        return []
    found = []
    for key, value in doc.items():
        found.append(f"{path}.{key}")
        if key not in ("old", "new"):
            found += keys_of(value, f"{path}.{key}")
    return found


def test_every_json_output_has_kebab_case_keys(tmp_path: Path) -> None:
    sql = "SELECT order_id, price, buyer_id, order_time\nFROM orders\nWHERE price > 5000\n"
    store = stored_examples_with(tmp_path, **{"expensive-orders": {"sql": sql}})
    on_store = [*EXAMPLES, "--manifest-store", str(store), "--output", "json"]
    outputs = {
        "plan": cli("plan", *on_store),
        "deploy --dry-run": cli("deploy", *on_store, "--dry-run"),
        "status": cli("status", *on_store),
        "stop": cli("stop", "expensive-orders", "--manifest-store", str(store), "--output", "json"),
        "stop (error)": cli("stop", "no-such-job", "--output", "json"),
    }
    for what, result in outputs.items():
        keys = keys_of(json.loads(result.stdout))
        assert keys, what
        assert [k for k in keys if not KEBAB.match(k.rsplit(".", 1)[1])] == [], what
    dry = json.loads(outputs["deploy --dry-run"].stdout)
    assert dry["dry-run"] is True and "dry_run" not in dry
    from flink_sql_runner.act.results import JobResult

    fields = inspect.signature(JobResult).parameters
    result = JobResult(**{n: None for n in fields if fields[n].default is inspect.Parameter.empty})
    assert all(KEBAB.match(key) for key in result.to_dict()), "a deploy's per-job result"


def test_validate_names_a_readers_declared_column_the_writer_does_not_declare(
    tmp_path: Path,
) -> None:
    """The pipeline example's second stage reads expensive-orders' folder; when both tables
    declare a schema and they disagree, validate says where, offline, exit 2."""
    sinks = yaml.safe_load((REPO / "examples/tables/sinks.yaml").read_text())
    for table in sinks["tables"]:
        if table["name"] == "expensive_orders":
            table["schema"] = "order_id BIGINT, price STRING, buyer_id STRING, order_time TIMESTAMP"
    (tmp_path / "sinks.yaml").write_text(yaml.safe_dump(sinks))
    result = cli(
        "validate",
        "--path", "examples/queries", "--path", "examples/pipeline/queries",
        "--table-definition-path", "examples/tables/sources.yaml",
        "--table-definition-path", str(tmp_path / "sinks.yaml"),
        "--table-definition-path", "examples/pipeline/tables",
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "big-buyer-orders.yaml: tables.expensive_orders_stream.schema: price is written as "
        "string, declared double by expensive-orders" in result.stderr
    )
    assert result.stdout == ""
