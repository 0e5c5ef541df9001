"""The plan's schema probe (runner/schema_probe.py) as the deployer runs it: one subprocess for
the whole module (each costs a JVM), many jobs, sinks and declared schemas in one request."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather.spark_child import probe_command, probe_env
from flink_sql_runner.targets.jvm_archive import archive_path
from flink_sql_runner.targets.sparksubmit import find_spark_submit
from runner.query import query_frame, register_sources, with_metadata
from runner.schema_rules import fields_of
from tests.support.jvm import archive
from tests.support.runner_jobs import manifest, run_to_end, write_input

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


#: A setting the probe's Spark is given as a job's secret is: it must reach no command line.
SECRET = "probe-secret-7f3a"


def probe(request: dict[str, Any], folder: Path) -> tuple[int, str, dict[str, Any] | None]:
    """The probe run with the deployer's own command (gather/spark_child.py: the real
    spark-submit, `job_runner.py --probe`, the settings in a properties file) and environment,
    the archive `jvm-archive --for-plan` keeps in the user's cache folder among it (the suite's
    own archive, copied there; `classes.log` says where each class came from), its output and
    what it printed; meanwhile no process on the machine shows the secret in its arguments."""
    (folder / "in.json").write_text(json.dumps(request))
    (folder / "probe.properties").write_text(f"spark.hadoop.fs.s3a.secret.key={SECRET}\n")
    submit = find_spark_submit()
    argv = probe_command("schema_probe", submit, folder)
    with pytest.MonkeyPatch.context() as patched:
        users = folder / "user-cache"
        patched.setenv("FLINK_SQL_RUNNER_USER_CACHE", str(users))
        suites = archive()
        assert suites is not None, "the suite's class-data-sharing archive could not be made"
        ours = archive_path(users / "jvm", submit)
        assert ours is not None and ours.name == suites.name, "one Spark, one Java: one name"
        ours.parent.mkdir(parents=True, mode=0o700)
        users.chmod(0o700)  # whatever the umask
        shutil.copyfile(suites, ours)
        ours.chmod(0o600)  # whatever the umask: a probe maps only an archive of this user's alone
        # The suite's own archive option gone: only the deployer's can map one.
        given = os.environ.get("SPARK_SUBMIT_OPTS", "").split()
        kept = [o for o in given if not o.startswith("-XX:SharedArchiveFile=")]
        kept.append(f"-Xlog:class+load=info:file={folder / 'classes.log'}")
        patched.setenv("SPARK_SUBMIT_OPTS", " ".join(kept))
        env = probe_env(submit)
    # An environment that turns Spark's event log on: the probe writes none all the same.
    (folder / "events").mkdir()
    logged = f"-Dspark.eventLog.enabled=true -Dspark.eventLog.dir=file://{folder}/events"
    env["SPARK_SUBMIT_OPTS"] = f"{env.get('SPARK_SUBMIT_OPTS', '')} {logged}".strip()
    process = subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    shown = []
    while process.poll() is None:
        shown += [pid for pid, args in command_lines() if SECRET in args]
        time.sleep(0.2)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert not shown, f"processes {sorted(set(shown))} showed the secret in their arguments"
    out = folder / "out.json"
    return process.returncode, stderr, json.loads(out.read_text()) if out.exists() else None


def command_lines() -> list[tuple[int, str]]:
    """Every process's pid and arguments, as anyone on the machine can read them."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    found.append((int(entry.name), handle.read().decode(errors="replace")))
            except OSError:
                continue
    return found


def kafka_source(**options: str) -> dict[str, Any]:
    base = {"subscribe": "ticks", "kafka.bootstrap.servers": "127.0.0.1:9"}
    return {"format": "kafka", "options": {**base, **options}}


@pytest.fixture(scope="module")
def probed(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One probe run over every case below; the real frames and sinks it is checked against
    are built in this process on the shared SparkSession."""
    tmp = tmp_path_factory.mktemp("probe")
    real = tmp / "real"
    real.mkdir()
    write_input(real, "a", range(3))
    jobs: dict[str, dict[str, Any]] = {}
    # A json source, as the runner would read it (its folder exists only for the real run).
    plan_time = manifest(tmp / "nowhere", sql="SELECT CAST(id AS STRING) AS id, name FROM people")
    jobs["json"] = plan_time
    jobs["kafka"] = manifest(
        tmp, sql="SELECT CAST(value AS STRING) AS value, timestamp, partition FROM people"
    )
    jobs["kafka"]["tables"]["people"] = kafka_source()
    jobs["kafka-headers"] = manifest(tmp, sql="SELECT headers FROM people")
    jobs["kafka-headers"]["tables"]["people"] = kafka_source(includeHeaders="true")
    jobs["kafka-no-headers"] = copy.deepcopy(jobs["kafka-headers"])
    jobs["kafka-no-headers"]["tables"]["people"] = kafka_source()
    window = "window(timestamp, '1 minute')"
    jobs["rate"] = manifest(tmp, sql=f"SELECT {window} AS w, count(*) AS n FROM people GROUP BY 1")
    jobs["rate"]["tables"]["people"] = {
        "format": "rate",
        "options": {"rowsPerSecond": "5"},
        "watermark": {"column": "timestamp", "delay": "10 seconds"},
    }
    jobs["code"] = manifest(tmp, sql=None, code="execution_output = spark.table('people')")
    jobs["no-schema"] = manifest(tmp)
    del jobs["no-schema"]["tables"]["people"]["schema"]
    jobs["catalog"] = manifest(tmp)
    jobs["catalog"]["tables"]["people"] = {"table": "db.people"}
    jobs["catalog-declared"] = manifest(tmp, sql="SELECT id + 1 AS id FROM people")
    jobs["catalog-declared"]["tables"]["people"] = {"table": "db.people", "schema": "id INT"}
    jobs["socket"] = manifest(tmp, sql="SELECT upper(value) AS v FROM people")
    jobs["socket"]["tables"]["people"] = {"format": "socket", "options": {"port": "9"}}
    jobs["custom"] = manifest(tmp, sql="SELECT upper(value) AS v FROM people")
    jobs["custom"]["tables"]["people"] = {"format": "com.example.Source", "schema": "value STRING"}
    jobs["unresolved"] = manifest(tmp, sql="SELECT nope FROM people")
    jobs["metadata-clash"] = manifest(tmp, sql="SELECT id AS __query_name FROM people")
    jobs["not-a-manifest"] = {"schema-version": 1}
    # Two jobs with one view name and different sources: each sees only its own.
    jobs["same-view"] = manifest(tmp, sql="SELECT * FROM people")
    jobs["same-view"]["tables"]["people"]["schema"] = "other DOUBLE"

    sink = real / "out"
    run_to_end(spark, manifest(real))
    text_sink = real / "text_sink"
    spark.createDataFrame([("a",)], "value STRING").write.text(str(text_sink))
    request = {
        "jobs": [{"key": key, "manifest": doc} for key, doc in jobs.items()],
        "sinks": [
            {"key": "parquet", "format": "parquet", "path": str(sink)},
            {"key": "text", "format": "text", "path": str(text_sink)},
            {"key": "missing", "format": "parquet", "path": str(real / "missing")},
        ],
        "ddl": [
            {"key": "ok", "ddl": "a BIGINT NOT NULL, b DECIMAL(10,2), c ARRAY<STRING>"},
            {"key": "bad", "ddl": "a BIGINT,,"},
        ],
    }
    code, stderr, result = probe(request, tmp)
    assert code == 0, stderr
    assert result is not None
    result["events"] = sorted(p.name for p in (tmp / "events").iterdir())
    result["left"] = sorted(p.name for p in tmp.iterdir() if p.suffix in (".json", ".properties"))
    actual = manifest(real, sql=plan_time["sql"])
    register_sources(spark, actual)
    result["real-json"] = fields_of(
        json.loads(with_metadata(query_frame(spark, actual), actual).schema.json())
    )
    result["real-sink"] = sink
    result["stderr"] = stderr
    result["classes"] = (tmp / "classes.log").read_text()
    (tmp / "user-cache" / "jvm").chmod(0o700)
    shutil.rmtree(tmp / "user-cache")  # some 170 MiB
    return result


def test_it_writes_no_event_log_and_removes_its_request_once_read(probed) -> None:
    """Issue 54, finding 14 (b, e): nothing written, the event log the environment turns on
    included; the request and the settings (secrets among them) gone as soon as read, so that
    a deployer killed meanwhile leaves neither behind."""
    assert probed["events"] == []
    assert probed["left"] == ["out.json"]


def test_it_maps_the_archive_the_plans_probes_start_from(probed) -> None:
    """`jvm-archive --for-plan`'s archive (docs/how-to/faster-starts.md): the probe's JVM maps
    Spark's classes from it, the top layer of its class-data sharing (the JDK's own classes are
    the base layer's)."""
    session = " org.apache.spark.sql.SparkSession "
    spark_classes = [line for line in probed["classes"].splitlines() if session in line]
    assert spark_classes, probed["classes"][-2000:]
    assert all("source: shared objects file (top)" in line for line in spark_classes), spark_classes


def names_types(fields: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    return [(f["name"], f["type"], f["nullable"]) for f in fields]


def test_a_jobs_output_is_what_its_run_writes(probed: dict[str, Any], spark) -> None:
    assert probed["spark"] == spark.version
    assert probed["jobs"]["json"] == {"fields": probed["real-json"]}
    assert names_types(probed["jobs"]["json"]["fields"])[:3] == [
        ("id", "string", True),
        ("name", "string", True),
        ("__create_timestamp", "timestamp", False),
    ]
    assert names_types(probed["jobs"]["rate"]["fields"])[:2] == [
        ("w", "struct<start:timestamp,end:timestamp>", True),
        ("n", "bigint", True),
    ]
    assert names_types(probed["jobs"]["catalog-declared"]["fields"])[0] == ("id", "int", True)
    assert names_types(probed["jobs"]["custom"]["fields"])[0] == ("v", "string", True)
    assert names_types(probed["jobs"]["same-view"]["fields"])[0] == ("other", "double", True)


def test_kafka_sources_have_kafkas_own_schema(probed: dict[str, Any]) -> None:
    assert names_types(probed["jobs"]["kafka"]["fields"])[:3] == [
        ("value", "string", True),
        ("timestamp", "timestamp", True),
        ("partition", "int", True),
    ]
    assert names_types(probed["jobs"]["kafka-headers"]["fields"])[0] == (
        "headers",
        "array<struct<key:string,value:binary>>",
        True,
    )
    assert probed["jobs"]["kafka-no-headers"]["error"].startswith(
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with "
        "name `headers` cannot be resolved."
    )


def test_what_cannot_be_known_is_unknown_and_errors_are_sparks_own(
    probed: dict[str, Any],
) -> None:
    jobs = probed["jobs"]
    assert jobs["code"] == {
        "unknown": "a code job's output is known only when it runs; its run checks the sink "
        "before its first write"
    }
    assert jobs["no-schema"] == {
        "unknown": "source people (format json) declares no schema: its columns are known only "
        "when it runs"
    }
    assert jobs["catalog"]["unknown"].startswith("source people (table db.people) declares no")
    assert jobs["socket"]["unknown"].startswith("source people (format socket) declares no")
    assert jobs["unresolved"]["error"].startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION]")
    assert "\n" not in jobs["unresolved"]["error"]
    assert jobs["metadata-clash"] == {
        "error": "the query already has column(s) __query_name; rename them or set "
        "metadata-columns.enabled: false"
    }
    assert jobs["not-a-manifest"]["error"].startswith("missing fields: name, target-table")
    assert "Traceback" not in probed["stderr"] and "AnalysisException" not in probed["stderr"]


def test_sinks_and_declared_schemas(probed: dict[str, Any]) -> None:
    (entry,) = probed["sinks"]["parquet"]["history"]
    assert entry["from"].startswith("v1 of job people, claimed ")
    assert names_types(entry["fields"])[:2] == [("id", "bigint", True), ("name", "string", True)]
    assert probed["sinks"]["text"] == {
        "history": [],
        "unknown": f"the text sink {probed['real-sink'].parent / 'text_sink'} holds files "
        "written without a recorded schema",
    }
    assert probed["sinks"]["missing"] == {"history": [], "unknown": None}
    assert names_types(probed["ddl"]["ok"]["fields"]) == [
        ("a", "bigint", False),
        ("b", "decimal(10,2)", True),
        ("c", "array<string>", True),
    ]
    assert probed["ddl"]["bad"]["error"].startswith("[PARSE_SYNTAX_ERROR]")


def test_a_request_it_cannot_read_is_refused_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "probe-in.json").write_text('{"jobs": [{"manifest": {}}]}')
    argv = [sys.executable, str(REPO / "runner" / "job_runner.py"), "--probe", "schema_probe"]
    argv += [
        "--input",
        str(tmp_path / "probe-in.json"),
        "--output",
        str(tmp_path / "probe-out.json"),
    ]
    done = subprocess.run(  # noqa: S603 - a list, never a shell
        argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"schema probe: {tmp_path / 'probe-in.json'}: jobs must be a list of objects with a key"
    )
    assert not (tmp_path / "probe-out.json").exists()
