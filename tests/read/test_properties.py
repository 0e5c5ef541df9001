"""sparkProperties that Spark ignores: warnings naming file and key (errors when asked), and
the Spark setting that does what a Flink key did."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.read.properties import ROCKSDB_PROVIDER, ignored_message
from tests.support.cli import REPO, run_cli

IGNORED = "Spark ignores properties whose key does not start with 'spark.'"
TABLES = str(REPO / "examples" / "tables")


def write_job(folder: Path, properties: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "j.yaml"
    path.write_text(
        "name: j\ntarget-table: expensive_orders\nsql: SELECT order_id FROM orders\n"
        f"sparkProperties:\n{properties}"
    )
    return path


def write_template(tmp_path: Path) -> Path:
    template = tmp_path / "template.yaml"
    template.write_text(
        (REPO / "templates" / "job-template.yaml").read_text() + "  pipeline.object-reuse: 'true'\n"
    )
    return template


PROPERTIES = (
    "  spark.sql.shuffle.partitions: '4'\n"
    "  state.backend: rocksdb\n"
    "  execution.checkpointing.interval: 60s\n"
    "  s3.secret-key: S3CR3T-value\n"
)


def test_validate_and_plan_warn_one_line_per_file_and_key_and_succeed(tmp_path: Path):
    job = write_job(tmp_path / "jobs", PROPERTIES)
    template = write_template(tmp_path)
    common = ["--path", str(job.parent), "--table-definition-path", TABLES]
    common += ["--template-file", str(template), "--state-dir", str(tmp_path / "state")]
    want = [
        f"warning: {job}: sparkProperties.execution.checkpointing.interval: {IGNORED}; for "
        "Flink's execution.checkpointing.interval: set the job's `trigger: {processingTime: "
        "60 seconds}` (Spark checkpoints every micro-batch)",
        f"warning: {job}: sparkProperties.s3.secret-key: {IGNORED}",
        f"warning: {job}: sparkProperties.state.backend: {IGNORED}; for Flink's state.backend: "
        f"set spark.sql.streaming.stateStore.providerClass: {ROCKSDB_PROVIDER} (the checkpoint "
        "pins it)",
        f"warning: {template}: sparkProperties.pipeline.object-reuse: {IGNORED}; for Flink's "
        "pipeline.object-reuse: Spark has no such setting",
    ]
    for command in ("validate", "plan"):
        result = run_cli(command, *common)
        assert result.returncode == 0, result.stderr
        assert sorted(result.stderr.splitlines()) == sorted(want), command
        assert "S3CR3T" not in result.stdout + result.stderr
        assert "warning" not in result.stdout


def test_strict_properties_makes_them_errors_with_every_other_problem(tmp_path: Path):
    job = write_job(tmp_path / "jobs", PROPERTIES)
    other = tmp_path / "jobs" / "k.yaml"
    other.write_text("name: k\ntarget-table: nowhere\nsql: SELECT 1 FROM orders\n")
    result = run_cli(
        "plan",
        "--path",
        str(job.parent),
        "--table-definition-path",
        TABLES,
        "--state-dir",
        str(tmp_path / "state"),
        env={"FLINK_SQL_RUNNER_STRICT_PROPERTIES": "1"},
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert [line.split(": ")[1:3] for line in errors] == [
        [str(job), "sparkProperties.execution.checkpointing.interval"],
        [str(job), "sparkProperties.s3.secret-key"],
        [str(job), "sparkProperties.state.backend"],
        [str(other), "target-table"],
    ]
    assert "4 problems; nothing was touched." in result.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    "key, value, hint",
    [
        ("state.backend", "hashmap", "Spark's default state store"),
        ("state.backend.incremental", "true", "changelogCheckpointing.enabled"),
        ("state.checkpoints.dir", "s3://b/c/{job_name}/", "set the job's `checkpoint-root`"),
        ("state.checkpoints.num-retained", "3", "spark.sql.streaming.minBatchesToRetain"),
        ("state.savepoints.dir", "s3://b/s/", "Spark has no savepoints"),
        ("execution.checkpointing.interval", "1 min", "{processingTime: 1 minute}"),
        ("execution.checkpointing.interval", "500", "{processingTime: 500 milliseconds}"),
        ("restart-strategy.fixed-delay.attempts", "3", "spark.task.maxFailures"),
        ("parallelism.default", "4", "spark.sql.shuffle.partitions"),
        ("python.executable", "/venv/bin/python3", "spark.pyspark.python"),
        ("pipeline.name", "q", "flink-sql-runner-<name>-v<version>"),
    ],
)
def test_flink_keys_get_what_spark_calls_them(key: str, value: str, hint: str):
    message = ignored_message(key, value)
    assert message.startswith(f"{IGNORED}; for Flink's {key}: ")
    assert hint in message


def test_hadoop_keys_are_told_their_spark_prefix_and_unknown_keys_just_ignored():
    assert ignored_message("fs.s3a.endpoint", "x") == (
        f"{IGNORED}; a Hadoop setting: write spark.hadoop.fs.s3a.endpoint"
    )
    assert ignored_message("my.setting", "x") == IGNORED
