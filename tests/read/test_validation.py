"""Broken inputs: each gives one clear line naming the file and the field."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import InvalidInput
from flink_sql_runner.read.catalog import file_format, load_catalog
from flink_sql_runner.read.manifest import load_jobs
from flink_sql_runner.read.sinks import SinkIndex, sink_of
from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
BROKEN = REPO / "tests" / "data" / "broken"
TABLES = REPO / "examples" / "tables"
CASES = sorted(BROKEN.glob("*.yaml"))


def expected_line(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path} must start with '# expect: '"
    return first.removeprefix("# expect: ")


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_broken_manifest_gives_its_exact_error(case: Path, tmp_path: Path):
    catalog = load_catalog([TABLES])
    with pytest.raises(InvalidInput) as raised:
        load_jobs([case], None, catalog, tmp_path)
    assert [str(p) for p in raised.value.problems] == [f"{case}: {expected_line(case)}"]


def test_all_broken_files_are_reported_at_once_exit_2_no_traceback(tmp_path: Path):
    state = tmp_path / "state"
    result = run_cli(
        "validate",
        "--path",
        str(BROKEN),
        "--table-definition-path",
        str(TABLES),
        "--state-dir",
        str(state),
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert sorted(lines) == sorted(f"error: {c}: {expected_line(c)}" for c in CASES)
    assert f"{len(CASES)} problems; nothing was touched." in result.stderr
    assert not state.exists()


def test_plan_with_broken_input_touches_no_store(tmp_path: Path):
    state = tmp_path / "state"
    result = run_cli(
        "plan",
        "--path",
        str(BROKEN / "missing-target.yaml"),
        "--table-definition-path",
        str(TABLES),
        "--state-dir",
        str(state),
    )
    assert result.returncode == 2, result.stderr
    assert not state.exists()


def test_duplicate_names_name_both_files(tmp_path: Path):
    body = "name: twin\ntarget-table: expensive_orders\nsql: SELECT order_id FROM orders\n"
    (tmp_path / "a.yaml").write_text(body)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(body)
    with pytest.raises(InvalidInput) as raised:
        load_jobs([tmp_path], None, load_catalog([TABLES]), tmp_path / "state")
    assert [str(p) for p in raised.value.problems] == [
        f"{tmp_path / 'sub' / 'b.yml'}: name: "
        f"job 'twin' is already defined in {tmp_path / 'a.yaml'}"
    ]


def test_catalog_problems_are_reported_with_job_problems(tmp_path: Path):
    tables = tmp_path / "tables.yaml"
    tables.write_text(
        "tables:\n  - name: t\n    format: json\n    table: db.t\n  - name: u\n    fromat: json\n"
    )
    result = run_cli(
        "validate",
        "--path",
        str(BROKEN / "missing-target.yaml"),
        "--table-definition-path",
        str(tables),
    )
    assert result.returncode == 2
    assert f"error: {tables}: tables[0].format: set exactly one of `format`" in result.stderr
    assert f"error: {tables}: tables[1].fromat: unknown field; did you mean 'format'?" in (
        result.stderr
    )
    assert "missing-target.yaml: target-table: is required" in result.stderr


def test_symlink_loop_under_path_is_not_followed(tmp_path: Path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    shutil.copy(REPO / "examples" / "queries" / "expensive-orders.yaml", jobs)
    os.symlink(jobs, jobs / "loop")
    found = load_jobs([jobs], None, load_catalog([TABLES]), tmp_path / "state")
    assert [j.name for j in found] == ["expensive-orders"]


@pytest.mark.parametrize(
    "fmt, short",
    [
        ("parquet", "parquet"),
        ("avro", "avro"),
        ("org.apache.spark.sql.parquet", "parquet"),
        ("org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat", "parquet"),
        ("org.apache.spark.sql.execution.datasources.v2.json.JsonDataSourceV2", "json"),
        ("org.apache.spark.sql.hive.orc", "orc"),
        ("com.databricks.spark.csv", "csv"),
        ("org.apache.spark.sql.avro.AvroFileFormat", "avro"),
        ("org.apache.spark.sql.execution.datasources.text.TextFileFormat", "text"),
        ("org.apache.spark.sql.execution.streaming.sources.TextSocketSourceProvider", None),
        ("org.apache.spark.sql.kafka010.KafkaSourceProvider", None),
        ("com.example.parquet.Sink", None),
        ("delta", None),
        ("rate", None),
    ],
)
def test_spark_s_other_names_of_file_formats_are_file_formats(fmt: str, short: str | None):
    """Spark resolves these names to the same file sources and sinks (DataSource's lookup,
    checked against pyspark in tests/runner/test_runner.py): the file rules apply to them too."""
    assert file_format(fmt) == short


def test_a_file_format_under_its_class_name_gets_the_file_rules(tmp_path: Path):
    tables = tmp_path / "tables.yaml"
    tables.write_text(
        "tables:\n"
        "  - name: src\n    format: org.apache.spark.sql.json\n    options: {path: /in}\n"
        "  - name: out\n    format: org.apache.spark.sql.parquet\n    options: {path: /out}\n"
    )
    job = tmp_path / "job.yaml"
    job.write_text("name: agg\ntarget-table: out\noutputMode: complete\nsql: SELECT * FROM src\n")
    result = run_cli("validate", "--path", str(job), "--table-definition-path", str(tables))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {job}: outputMode: a parquet target supports only `append`, got 'complete'",
        f"error: {job}: sql: table 'src' is a json table read as a stream and needs a `schema`",
        "2 problems; nothing was touched.",
    ]


def test_two_jobs_on_one_sink_are_refused_naming_both_files_and_the_sink(tmp_path: Path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name in ("first", "second"):
        (jobs / f"{name}.yaml").write_text(
            f"name: {name}\ntarget-table: {name}_out\nsql: SELECT order_id FROM orders\n"
        )
    tables = tmp_path / "sinks.yaml"
    same = tmp_path / "out" / "shared"
    tables.write_text(
        "tables:\n"
        f"  - {{name: first_out, format: parquet, options: {{path: '{same}'}}}}\n"
        f"  - {{name: second_out, format: json, options: {{path: 'file://{same}/'}}}}\n"
    )
    state = tmp_path / "state"
    result = run_cli(
        "validate", "--path", str(jobs), "--table-definition-path", str(TABLES),
        "--table-definition-path", str(tables), "--state-dir", str(state),
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    first, second = jobs / "first.yaml", jobs / "second.yaml"
    assert result.stderr.splitlines()[:2] == [
        f"error: {first}: target-table: job 'first' writes folder {same}, as job 'second' "
        f"({second}) also does: two jobs cannot write one sink",
        f"error: {second}: target-table: job 'second' writes folder {same}, as job 'first' "
        f"({first}) also does: two jobs cannot write one sink",
    ]
    assert not state.exists()


def test_a_checkpoint_location_in_table_options_is_refused(tmp_path: Path):
    tables = tmp_path / "tables.yaml"
    tables.write_text(
        "tables:\n  - {name: out, format: parquet, options: {path: /o, checkpointLocation: /c}}\n"
    )
    with pytest.raises(InvalidInput) as raised:
        load_catalog([tables])
    assert [str(p) for p in raised.value.problems] == [
        f"{tables}: tables[0].options.checkpointLocation: the deployer sets the checkpoint "
        "location per version (<checkpoint-root>/<name>/<version>); remove it"
    ]


def test_four_problems_of_one_manifest_are_four_lines_of_one_run(tmp_path: Path):
    """A schema error (the output mode) does not hide the file's tables or its trigger."""
    job = tmp_path / "four.yaml"
    job.write_text(
        "name: four\n"
        "target-table: nowhere\n"
        "outputMode: apend\n"
        "trigger: {processingTime: 5 secnds}\n"
        "sql: SELECT order_id FROM nosuch\n"
    )
    state = tmp_path / "state"
    result = run_cli(
        "validate", "--path", str(job), "--table-definition-path", str(TABLES),
        "--state-dir", str(state), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {job}: outputMode: must be one of append, update, complete, got 'apend'",
        f"error: {job}: sql: reads table 'nosuch', which is not in the table catalog",
        f"error: {job}: target-table: table 'nowhere' is not in the table catalog",
        f"error: {job}: trigger.processingTime: '5 secnds' is not an interval Spark reads: "
        "unknown unit 'secnds' (did you mean 'seconds'?); write a number and a unit, e.g. "
        "'5 seconds' or '1 minute 30 seconds' (units: microsecond, millisecond, second, minute, "
        "hour, day, week)",
        "4 problems; nothing was touched.",
    ]
    assert not state.exists()


def test_without_a_catalog_the_unknown_tables_come_with_one_hint(tmp_path: Path):
    result = run_cli(
        "validate", "--path", str(REPO / "examples" / "queries"),
        "--state-dir", str(tmp_path / "state"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len([line for line in lines if "is not in the table catalog" in line]) == 8
    assert [line for line in lines if not line.startswith("error: ")] == [
        "hint: no table is declared: pass the table catalog (YAML or SQL files, or folders of "
        "them) with --table-definition-path",
        "8 problems; nothing was touched.",
    ]


def test_a_catalog_that_lacks_one_table_gets_no_hint(tmp_path: Path):
    result = run_cli(
        "validate", "--path", str(BROKEN / "unknown-source-table.yaml"),
        "--table-definition-path", str(TABLES), "--state-dir", str(tmp_path / "state"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "hint:" not in result.stderr


def test_a_template_s_trigger_interval_is_checked_once_against_the_template(tmp_path: Path):
    template = tmp_path / "template.yaml"
    template.write_text("checkpoint-root: /tmp/c\ntrigger: {continuous: 1 sec}\n")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name in ("a", "b"):
        (jobs / f"{name}.yaml").write_text(
            f"name: {name}\ntarget-table: {name}_out\nsql: SELECT order_id FROM orders\n"
        )
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], template, load_catalog([TABLES]), tmp_path / "state")
    fields = [(p.file, p.field) for p in raised.value.problems]
    assert (str(template), "trigger.continuous") in fields
    assert [f for f in fields if f[1].startswith("trigger")] == [
        (str(template), "trigger.continuous")
    ]


def test_one_kafka_cluster_written_two_ways_is_one_sink() -> None:
    """Broker lists compare as sets: order, spacing and repeats do not make another cluster."""

    def kafka(servers: str, topic: str = "orders") -> dict[str, Any]:
        return {"format": "kafka", "options": {"kafka.bootstrap.servers": servers, "topic": topic}}

    one = sink_of("a", kafka("a:9092, b:9092"))
    assert (
        one == sink_of("b", kafka("b:9092,a:9092")) == sink_of("c", kafka(" a:9092,b:9092,a:9092 "))
    )
    assert str(one) == "kafka topic orders on a:9092,b:9092"
    assert one != sink_of("e", kafka("a:9092,b:9092", topic="other"))
    # Lists that share a broker reach one cluster: the same topic through both is one sink
    # (before: two, so two jobs could write it); lists that share none are two.
    shared = sink_of("d", kafka("a:9092,c:9092"))
    assert shared is not None and one.overlaps(shared) and shared.overlaps(one)
    index = SinkIndex([(one, "a")])
    assert [item for _, item in index.overlapping(shared)] == ["a"]
    other = sink_of("f", kafka("c:9092,d:9092"))
    assert other is not None and not one.overlaps(other)
    assert index.overlapping(other) == []


def kafka_table(servers: str, topic: str = "orders") -> dict[str, Any]:
    return {"format": "kafka", "options": {"kafka.bootstrap.servers": servers, "topic": topic}}


def test_a_broker_s_host_name_in_other_case_is_the_same_broker() -> None:
    """Host names are without case (DNS): `Kafka-1` and `kafka-1` are one broker, so two jobs
    writing one topic through them are two writers of one sink."""
    one = sink_of("a", kafka_table("Kafka-1.example.com:9092, kafka-2:9092"))
    assert one == sink_of("b", kafka_table("kafka-2:9092,KAFKA-1.EXAMPLE.COM:9092"))
    assert str(one) == "kafka topic orders on kafka-1.example.com:9092,kafka-2:9092"
    # a topic's name has case: another topic
    assert one != sink_of("c", kafka_table("kafka-1.example.com:9092,kafka-2:9092", "Orders"))
    # an environment variable is kept as written: ${BROKERS} and ${brokers} differ
    assert sink_of("d", kafka_table("${BROKERS}")) != sink_of("e", kafka_table("${brokers}"))


def test_a_kafka_topic_named_after_its_job_is_one_topic_per_job(tmp_path: Path) -> None:
    """A sink table shared by jobs whose topic holds `{job_name}` (the runner resolves it in
    every option) is a topic per job, as a folder with `{job_name}` is a folder per job."""
    shared = kafka_table("b1:9092", "{job_name}-events")
    assert str(sink_of("orders", shared)) == "kafka topic orders-events on b1:9092"
    assert sink_of("orders", shared) != sink_of("payments", shared)
    tables = tmp_path / "tables.yaml"
    tables.write_text(
        "tables:\n"
        "  - {name: src, format: rate}\n"
        "  - name: events\n"
        "    format: kafka\n"
        "    options: {kafka.bootstrap.servers: 'b1:9092', topic: '{job_name}-events'}\n"
    )
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name in ("orders", "payments"):
        (jobs / f"{name}.yaml").write_text(
            f"name: {name}\ntarget-table: events\nsql: SELECT CAST(value AS STRING) AS value "
            "FROM src\n"
        )
    loaded = load_jobs([jobs], None, load_catalog([tables]), tmp_path / "state")
    assert sorted(job.name for job in loaded) == ["orders", "payments"]


@pytest.mark.parametrize(
    ("read_as", "declared", "target"),
    [
        ("kafka.orders", "kafka.orders", "kafka__orders"),
        ("`orders-raw`", "`orders-raw`", "orders_raw"),
    ],
)
def test_a_source_read_as_a_view_named_like_the_target_is_refused(
    tmp_path: Path, read_as: str, declared: str, target: str
):
    """Found by the hostile review of issue 57's third part: the runtime manifest keys the
    source's view and the target by name, and the target's definition replaced the source's, so
    the run read its own sink instead of its input."""
    tables = tmp_path / "tables.sql"
    tables.write_text(
        f"CREATE TABLE {declared} (id BIGINT) USING json LOCATION '{tmp_path}/in';\n"
        f"CREATE TABLE {target} USING parquet LOCATION '{tmp_path}/out';\n"
    )
    job = tmp_path / "copy.yaml"
    job.write_text(f"name: copy\ntarget-table: {target}\nsql: SELECT id FROM {read_as}\n")
    with pytest.raises(InvalidInput) as raised:
        load_jobs([job], None, load_catalog([tables]), tmp_path / "state")
    (problem,) = [str(p) for p in raised.value.problems]
    assert (
        problem.startswith(f"{job}: target-table: table ")
        and "the name of the table the job writes" in problem
    )
