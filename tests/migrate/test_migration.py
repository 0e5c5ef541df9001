"""Coming from the original flink-sql-runner (Flink): its command line, ten jobs written as its
README shows them, and a store of its manifests converted and planned.

- `tests/data/migration/original/`: ten jobs, their Flink SQL table files, the Flink template and
  `store/`, the manifests the original stored for them (versions 1 to 5).
- `tests/data/migration/edited/`: the same jobs after the edits docs/how-to/migrate.md lists.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runtime import runtime_manifest
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import load_jobs
from flink_sql_runner.stores.local_lock import FileLockBackend
from flink_sql_runner.stores.lock import Holder
from tests.support.cli import REPO, run_cli
from tests.support.fake_yarn import FakeResourceManager

MIGRATION = REPO / "tests" / "data" / "migration"
ORIGINAL, EDITED = MIGRATION / "original", MIGRATION / "edited"
VERSIONS = {
    "big-spenders": 5,
    "expensive-orders": 3,
    "failed-payments": 4,
    "late-shipments": 1,
    "order-sizes": 2,
    "orders-by-weekday": 1,
    "orders-per-minute": 1,
    "page-view-sessions": 1,
    "paid-orders": 2,
    "revenue-by-country": 2,
}

#: The original README's "Sample command to trigger deployment of all queries on YARN", with
#: `python3 flink_sql_runner/deploy.py` as `flink-sql-runner <command>`.
README_FLAGS = [
    "--path",
    "/some/path/to/sql/queries/",
    "--template-file",
    "flink-sql-runner/deployment-scripts/job-template.yaml",
    "--pyflink-runner-dir",
    "flink_sql_runner/runner/",
    "--pyexec-path",
    "/home/hadoop/flink-sql-runner/venv/bin/python3",
    "--external-job-config-bucket",
    "some-s3-bucket",
    "--external-job-config-prefix",
    "flink-sql-runner/manifests/",
    "--table-definition-path",
    "/some/path/to/sql/schemas/kafka-input-tables.sql",
    "/some/path/to/sql/schemas/kafka-output-tables.sql",
    "--deployment-target",
    "yarn",
]


def readme_flags(**paths: str) -> list[str]:
    """README_FLAGS with some values replaced: path=..., template=..., bucket=..., tables=a:b."""
    flags = list(README_FLAGS)
    replace = {
        "path": "/some/path/to/sql/queries/",
        "template": "flink-sql-runner/deployment-scripts/job-template.yaml",
        "bucket": "some-s3-bucket",
    }
    for key, old in replace.items():
        if key in paths:
            flags[flags.index(old)] = paths[key]
    if "tables" in paths:
        a, b = paths["tables"].split(":")
        flags[flags.index("/some/path/to/sql/schemas/kafka-input-tables.sql")] = a
        flags[flags.index("/some/path/to/sql/schemas/kafka-output-tables.sql")] = b
    return flags


def test_the_readme_command_line_says_in_one_pass_what_must_change(tmp_path: Path):
    for command in ("validate", "plan"):
        result = run_cli(command, *README_FLAGS, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            "warning: --pyflink-runner-dir: ignored: the runner ships with flink-sql-runner; "
            "on a cluster, --runner-path says where the driver finds it",
            "error: /some/path/to/sql/queries: no such file or folder",
            "error: /some/path/to/sql/schemas/kafka-input-tables.sql: no such file or folder",
            "error: /some/path/to/sql/schemas/kafka-output-tables.sql: no such file or folder",
            "error: flink-sql-runner/deployment-scripts/job-template.yaml: cannot read: No such "
            "file or directory",
            "4 problems; nothing was touched.",
        ], command
    assert list(tmp_path.iterdir()) == []


def copy_tree(source: Path, target: Path, replace: dict[str, str] | None = None) -> Path:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        if path.is_file() and replace:
            text = path.read_text()
            for old, new in replace.items():
                text = text.replace(old, new)
            path.write_text(text)
    return target


def test_the_original_jobs_unedited_are_told_everything_that_must_change(tmp_path: Path):
    """One pass over the ten jobs as the original's README writes them: every kind of edit
    docs/how-to/migrate.md lists shows up, each naming its file (and line, for SQL)."""
    jobs = copy_tree(ORIGINAL, tmp_path / "jobs")
    flags = readme_flags(
        path=str(jobs / "queries"),
        template=str(jobs / "job-template.yaml"),
        tables=":".join(
            str(jobs / "schemas" / f"kafka-{kind}-tables.sql") for kind in ("input", "output")
        ),
    )
    result = run_cli("validate", *flags, "--state-dir", str(tmp_path / "state"))
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    text = "\n".join(errors)
    template = jobs / "job-template.yaml"
    assert f"error: {template}: flinkProperties: the original tool's Flink settings" in text
    for name in VERSIONS:
        job = jobs / "queries" / f"{name}.yaml"
        assert f"error: {job}: flinkProperties: the original tool's Flink settings" in text
    inputs = jobs / "schemas" / "kafka-input-tables.sql"
    assert (
        f"error: {inputs}: line 6: table kafka.orders: column 'order_time': Spark's TIMESTAMP "
        "takes no precision (Flink's TIMESTAMP(p)): write TIMESTAMP" in errors
    )
    assert (
        f"error: {inputs}: line 8: table kafka.orders: Flink's WITH ('connector' = ...) clause: "
        "write USING kafka OPTIONS (key 'value', ...) with the Spark source's or sink's own "
        "options (docs/how-to/flink-sql-to-spark-sql.md)" in errors
    )
    minute = jobs / "queries" / "orders-per-minute.yaml"
    assert (
        f"error: {minute}: sql: line 9: TUMBLE is Flink's; Spark writes GROUP BY window(time, "
        "'1 minute') (docs/how-to/flink-sql-to-spark-sql.md)" in errors
    )
    sizes = jobs / "queries" / "order-sizes.yaml"
    assert (
        f"error: {sizes}: code: line 1: PyFlink (the original's stream_env and table_env): code "
        "here is PySpark with `spark`, `F` and the source views; assign a streaming DataFrame "
        "to `execution_output` (docs/how-to/flink-sql-to-spark-sql.md)" in errors
    )
    spenders = jobs / "queries" / "big-spenders.yaml"
    assert any(
        line.startswith(f"error: {spenders}: sql: does not parse") and "window(...)" in line
        for line in errors
    )
    assert not (tmp_path / "state").exists()


def edited_jobs(tmp_path: Path, bucket: str = "some-s3-bucket", root: str | None = None) -> Path:
    replace = {"s3a://some-s3-bucket/": f"s3a://{bucket}/"}
    if root is not None:
        replace = {"s3a://some-s3-bucket/flink-sql-runner/spark-checkpoints": root}
    return copy_tree(EDITED, tmp_path / "jobs", replace)


def edited_flags(jobs: Path, bucket: str = "some-s3-bucket") -> list[str]:
    inputs, outputs = (
        jobs / "schemas/kafka-input-tables.sql",
        jobs / "schemas/kafka-output-tables.sql",
    )
    return readme_flags(
        path=str(jobs / "queries"),
        template=str(jobs / "job-template.yaml"),
        tables=f"{inputs}:{outputs}",
        bucket=bucket,
    )


def test_the_edited_jobs_validate_with_the_readme_command_line(tmp_path: Path):
    jobs = edited_jobs(tmp_path)
    result = run_cli("validate", *edited_flags(jobs), "--state-dir", str(tmp_path / "state"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "10 jobs valid: " + ", ".join(sorted(VERSIONS))
    assert result.stderr.splitlines() == [
        "warning: --pyflink-runner-dir: ignored: the runner ships with flink-sql-runner; on a "
        "cluster, --runner-path says where the driver finds it"
    ]


def plan_lines(stdout: str) -> dict[str, list[str]]:
    """{job: [action, version]} of a plan's text."""
    rows = {}
    for line in stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] in VERSIONS:
            rows[words[0]] = words[1:3]
    return rows


def write_original_store_to_s3(client: Any, bucket: str, prefix: str) -> None:
    for path in sorted((ORIGINAL / "store").glob("*.yaml")):
        client.put_object(Bucket=bucket, Key=f"{prefix}{path.name}", Body=path.read_bytes())


@pytest.fixture
def rm():
    with FakeResourceManager() as fake:
        yield fake
        assert fake.violations == []


@pytest.mark.s3
def test_an_original_store_on_s3_converted_then_planned_with_the_readme_command_line(
    tmp_path: Path, s3_env: dict[str, str], s3_client: Any, s3_bucket: str, rm: FakeResourceManager
):
    """The original's store (s3://bucket/flink-sql-runner/manifests/), converted in place; then
    `plan` with the README's flags (plus --cluster-api, as there is no yarn-site.xml here):
    every job starts clean at the version after the one Flink ran."""
    prefix = "flink-sql-runner/manifests/"
    write_original_store_to_s3(s3_client, s3_bucket, prefix)
    jobs = edited_jobs(tmp_path, s3_bucket)
    flags = [*edited_flags(jobs, s3_bucket), "--cluster-api", rm.url]
    flags += ["--state-dir", str(tmp_path / "state")]

    before = run_cli("plan", *flags)
    assert before.returncode == 1
    unreadable = [
        line
        for line in before.stdout.splitlines()
        if "in the original flink-sql-runner's format (no schema-version); convert the store"
        in line
    ]
    assert len(unreadable) == 10, "every unreadable manifest is reported, not the first"

    store = ["--external-job-config-bucket", s3_bucket, "--external-job-config-prefix", prefix]
    dry = run_cli("migrate", *store, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[-1] == "Migration: 10 manifests would be converted (dry run: nothing was written)."
    assert lines[0] == (
        "big-spenders: v5 (query-id cf5733b1-494f-56c9-b218-5dd7f39dcf2f, created 2022-12-07 "
        f"08:57:42) would convert -> s3://{s3_bucket}/{prefix}big-spenders.yaml; the next "
        "deploy starts it clean at v6; kept under migrated-from: flinkProperties"
    )
    assert len(lines) == 12
    original = s3_client.get_object(Bucket=s3_bucket, Key=f"{prefix}big-spenders.yaml")
    assert b"schema-version" not in original["Body"].read(), "a dry run writes nothing"

    done = run_cli("migrate", *store)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "Migration: 10 manifests converted."
    stored = yaml.safe_load(
        s3_client.get_object(Bucket=s3_bucket, Key=f"{prefix}big-spenders.yaml")["Body"].read()
    )
    source = yaml.safe_load((ORIGINAL / "store" / "big-spenders.yaml").read_text())
    assert stored["schema-version"] == 1
    assert stored["meta"] == source["meta"]
    assert stored["migrated-from"]["original"]["flinkProperties"] == source["flinkProperties"]

    again = run_cli("migrate", *store)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "Migration: 0 manifests converted, 10 left alone."

    plan = run_cli("plan", *flags)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert plan_lines(plan.stdout) == {
        name: ["start-clean", f"v{version + 1}"] for name, version in VERSIONS.items()
    }
    assert all(
        "query changed (" in line and "migrated-from" in line
        for line in plan.stdout.splitlines()
        if "start-clean" in line and not line.startswith("Plan")
    )
    assert (
        "~ migrated-from: " in plan.stdout
        and "[query: the original tool's (Flink) state cannot be restored by Spark]" in plan.stdout
    )
    assert "Plan: 10 jobs (10 start-clean); changes pending." in plan.stdout
    assert [r for r in rm.api_requests()], "the plan asked YARN what runs"


# The plan asks Spark (a local session) to analyse a changed query's output: not fast.
@pytest.mark.spark
def test_an_original_store_in_a_folder_converted_to_another_then_planned(tmp_path: Path):
    source = shutil.copytree(ORIGINAL / "store", tmp_path / "original-store")
    target = tmp_path / "store"
    done = run_cli("migrate", "--from", str(source), "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.yaml" for n in VERSIONS)
    assert [p.read_text() for p in sorted(source.iterdir())] == [
        p.read_text() for p in sorted((ORIGINAL / "store").iterdir())
    ], "the source is left as it was"

    jobs = edited_jobs(tmp_path, root=str(tmp_path / "checkpoints"))
    flags = [
        "--path",
        str(jobs / "queries"),
        "--template-file",
        str(jobs / "job-template.yaml"),
        "--table-definition-path",
        str(jobs / "schemas"),
        "--manifest-store",
        str(target),
        "--state-dir",
        str(tmp_path / "state"),
        "--output",
        "json",
    ]
    plan = run_cli("plan", *flags)
    assert plan.returncode == 0, plan.stderr
    decisions = {
        j["name"]: (j["action"], j["query-version"]) for j in json.loads(plan.stdout)["jobs"]
    }
    assert decisions == {name: ("start-clean", v + 1) for name, v in VERSIONS.items()}


def test_an_original_store_in_a_folder_converted_in_place(tmp_path: Path):
    """Issue 20, finding 6: in place on a folder, the migration read each manifest raw and then
    wrote it conditional on a read it never made ("changed since this deploy read it")."""
    store = shutil.copytree(ORIGINAL / "store", tmp_path / "store")
    done = run_cli("migrate", "--from", str(store))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "Migration: 10 manifests converted."
    for name, version in VERSIONS.items():
        stored = yaml.safe_load((store / f"{name}.yaml").read_text())
        assert (stored["schema-version"], stored["meta"]["query-version"]) == (1, version)
    again = run_cli("migrate", "--from", str(store))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "Migration: 0 manifests converted, 10 left alone."


def test_a_migration_with_problems_reports_them_all_and_writes_nothing(tmp_path: Path):
    source = shutil.copytree(ORIGINAL / "store", tmp_path / "from")
    (source / "broken.yaml").write_text("name: broken\nmeta: {query-version: 0}\nsql: [\n")
    (source / "no-id.yaml").write_text(
        "name: no-id\nmeta: {query-version: 2, query-create-timestamp: '2022-12-07 08:57:42'}\n"
        "sql: SELECT 1\ntarget-table: t\n"
    )
    (source / "Renamed.yaml").write_text(
        "name: Renamed\nmeta: {query-version: 1, query-id: x, query-create-timestamp: '2022-12-07"
        " 08:57:42'}\nsql: SELECT 1\ntarget-table: t\n"
    )
    (source / "other-name.yaml").write_text(
        "name: not-other-name\nmeta: {query-version: 1, query-id: x, query-create-timestamp: "
        "'2022-12-07 08:57:42'}\nsql: SELECT 1\ntarget-table: t\n"
    )
    target = tmp_path / "to"
    target.mkdir()
    ours = (
        "schema-version: 1\nname: paid-orders\ntarget-table: t\nsql: SELECT 1\ntables: {}\n"
        "meta: {query-version: 7, query-id: y, query-create-timestamp: '2026-01-01T00:00:00Z'}\n"
    )
    (target / "paid-orders.yaml").write_text(ours)
    result = run_cli("migrate", "--from", str(source), "--to", str(target))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {source / 'Renamed.yaml'}: name: 'Renamed' is not allowed: Unique job name: "
        "lowercase letters, digits, '-' and '_' (at most 63 characters). Used as S3 key, folder "
        "name and Spark app name.",
        f"error: {source / 'broken.yaml'}: line 4: invalid YAML: expected the node content, but "
        "found '<stream end>'",
        f"error: {source / 'no-id.yaml'}: meta.query-id: must be text",
        f"error: {source / 'other-name.yaml'}: name: is 'not-other-name', but the manifest is "
        "stored as 'other-name'",
        f"error: {target / 'paid-orders.yaml'}: holds a manifest of this product's format; the "
        "migration never overwrites one",
        "5 problems; nothing was touched.",
    ]
    assert sorted(p.name for p in target.iterdir()) == ["paid-orders.yaml"]
    assert (target / "paid-orders.yaml").read_text() == ours


def test_a_store_holding_nothing_to_migrate_says_so(tmp_path: Path):
    result = run_cli("migrate", "--from", str(tmp_path / "empty"))
    assert result.returncode == 2
    assert (
        result.stderr.splitlines()[0]
        == f"error: {tmp_path / 'empty'}: holds no manifests (<name>.yaml)"
    )
    result = run_cli("migrate")
    assert result.returncode == 2
    assert "give the original tool's store: --from" in result.stderr


KAFKA_SCHEMA = (
    "key STRING, value STRING, topic STRING, `partition` INT, `offset` BIGINT, "
    "`timestamp` TIMESTAMP, timestampType INT"
)
RECORDS = {
    "orders": [
        {
            "order_id": 1,
            "price": 9500.5,
            "buyer_id": 7,
            "country": "PL",
            "order_time": "2026-11-02T10:00:00",
        },
        {
            "order_id": 2,
            "price": 12.0,
            "buyer_id": 8,
            "country": "DE",
            "order_time": "2026-11-02T10:00:01",
        },
        {  # exactly 1000: not "large" for orders-by-weekday (`price` > 1000)
            "order_id": 3,
            "price": 1000.0,
            "buyer_id": 7,
            "country": "PL",
            "order_time": "2026-11-02T10:00:02",
        },
    ],
    "payments": [
        {
            "payment_id": "p1",
            "order_id": 1,
            "amount": 9500.5,
            "status": "PAID",
            "pay_time": "2026-11-02T10:00:05",
        },
        {
            "payment_id": "p2",
            "order_id": 2,
            "amount": 12.0,
            "status": "FAILED",
            "pay_time": "2026-11-02T10:00:06",
        },
    ],
    "page-views": [{"user_id": 7, "url": "/", "view_time": "2026-11-02T10:00:00"}],
    "shipments": [
        {
            "shipment_id": "s1",
            "order_id": 1,
            "promised_at": "2026-11-03T10:00:00",
            "delivered_at": "2026-11-03T15:00:00",
        }
    ],
}


@pytest.mark.spark
def test_every_edited_query_runs_on_spark_against_kafka_shaped_input(spark, tmp_path: Path):
    """No Kafka here: each Kafka source is replaced by a JSON source with the Kafka source's
    columns, watermarked as its table says, under the view name the runner gives it. Spark then
    analyses and runs every edited query (streaming, availableNow) as the runner would."""
    from runner.query import query_frame, with_metadata

    jobs_dir = edited_jobs(tmp_path, root=str(tmp_path / "checkpoints"))
    catalog = load_catalog([jobs_dir / "schemas"])
    jobs = load_jobs(
        [jobs_dir / "queries"], jobs_dir / "job-template.yaml", catalog, tmp_path / "state"
    )
    for topic, records in RECORDS.items():
        folder = tmp_path / "kafka" / topic
        folder.mkdir(parents=True)
        lines = [
            json.dumps({"value": json.dumps(r), "topic": topic, "timestamp": "2026-11-02T10:00:00"})
            for r in records
        ]
        (folder / "records.json").write_text("\n".join(lines) + "\n")
    queries = {}
    for job in jobs:
        control = ControlFiles.of(str(tmp_path / "control" / job.name), 1)
        manifest = StoredManifest(job.spec, job.tables, Meta(1, "id", "2026-11-22T13:50:00Z"))
        doc = runtime_manifest(manifest, "run", control, job.file)
        for view in doc["source-tables"]:
            table = doc["tables"][view]
            topic = str(tmp_path / "kafka" / table["options"]["subscribe"])
            frame = spark.readStream.format("json").schema(KAFKA_SCHEMA).load(topic)
            if table.get("watermark"):
                mark = table["watermark"]
                frame = frame.withWatermark(mark["column"], mark["delay"])
            frame.createOrReplaceTempView(view)
        frame = with_metadata(query_frame(spark, doc), doc)
        assert frame.isStreaming
        assert frame.schema.fields[0].name == "value", job.name
        queries[job.name] = (
            frame.writeStream.format("memory")
            .queryName(job.name.replace("-", "_"))
            .outputMode(doc["outputMode"])
            .option("checkpointLocation", str(tmp_path / "ckpt" / job.name))
            .trigger(availableNow=True)
            .start()
        )
    written = {}
    for name, query in queries.items():  # all at once: Spark runs them side by side
        query.awaitTermination(180)
        assert query.exception() is None, name
        rows = spark.table(name.replace("-", "_")).collect()
        written[name] = [json.loads(r.value) for r in rows]
    assert written["expensive-orders"] == [
        {"order_id": 1, "price": 9500.5, "buyer_id": 7, "order_time": "2026-11-02T10:00:00.000Z"}
    ]
    assert [r["payment_id"] for r in written["failed-payments"]] == ["p2"]
    assert [(r["order_id"], r["payment_id"]) for r in written["paid-orders"]] == [(1, "p1")]
    assert written["late-shipments"] == [{"shipment_id": "s1", "order_id": 1, "hours_late": 5}]
    assert sorted(r["size"] for r in written["orders-by-weekday"]) == ["large", "small", "small"]
    assert sorted((r["id"], r["name"]) for r in written["order-sizes"]) == [
        (1, "large"),
        (2, "small"),
        (3, "small"),
    ]


def test_deploy_job_refuses_an_original_final_manifest_with_a_line_saying_what_to_give(
    tmp_path: Path,
):
    manifest = ORIGINAL / "store" / "expensive-orders.yaml"
    result = run_cli(
        "deploy-job",
        "--job-config-path",
        str(manifest),
        "--table-definition-path",
        str(EDITED / "schemas"),
        "--state-dir",
        str(tmp_path / "state"),
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {manifest}: (document): a final manifest of the original tool (`meta`, no "
        "`schema-version`): give the job's own file, which is merged with the template, or "
        "convert stored manifests with `flink-sql-runner migrate` (docs/how-to/migrate.md)",
        "1 problem; nothing was touched.",
    ]
    assert not (tmp_path / "state").exists()


def test_a_migration_waiting_for_a_deploys_lock_names_it_then_exits_3(tmp_path: Path):
    source = shutil.copytree(ORIGINAL / "store", tmp_path / "original-store")
    target = tmp_path / "store"
    target.mkdir()
    holder = Holder("other", "ci-runner-7", 4242, "deploy", "2023-11-14T22:13:20Z", 120.0)
    assert FileLockBackend(target / ".lock").create(holder)
    result = run_cli("migrate", "--from", str(source), "--to", str(target), "--lock-timeout", "1")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.splitlines()[0].startswith(
        f"waiting for the manifest store's lock ({target / '.lock'}): held by deploy by pid 4242 "
        "on ci-runner-7 since 2023-11-14T22:13:20Z; waited 0 s, giving up in 1 s"
    ), result.stderr
    assert sorted(p.name for p in target.iterdir()) == [".lock"], "nothing written"
