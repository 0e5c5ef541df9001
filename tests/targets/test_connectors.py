"""A job with Kafka tables gets Spark's Kafka connector for the Spark it runs on, without naming
it: Maven coordinates, or the jars of --connector-jars; and a connector that cannot be had is an
error before anything is stopped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.model.runs import Run
from flink_sql_runner.targets.connectors import Connectors, SparkBuild, scala_of
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import make_job, stored_of

pytestmark = pytest.mark.fast

SPARK_42 = SparkBuild("4.2.0", "2.13")
KAFKA = {"format": "kafka", "options": {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}}
TABLES = {"src": KAFKA, "out": {"format": "parquet", "options": {"path": "/out"}}}
JARS = [
    "spark-sql-kafka-0-10_2.13-4.2.0.jar",
    "spark-token-provider-kafka-0-10_2.13-4.2.0.jar",
    "kafka-clients-3.9.2.jar",
    "commons-pool2-2.13.1.jar",
]


@pytest.fixture(autouse=True)
def no_local_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME (Ivy's and Maven's caches) is a temp folder: nothing cached unless a test says."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def folder_of(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "jars"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"PK")
    return folder


def test_coordinates_follow_the_spark_and_its_scala():
    assert Connectors(SPARK_42).conf(TABLES, {}) == {
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
    }
    spark_35 = SparkBuild("3.5.7", scala_of("3.5.7"))
    assert Connectors(spark_35).conf(TABLES, {"spark.jars.packages": "a:b:1"}) == {
        "spark.jars.packages": "a:b:1,org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"
    }
    assert Connectors(SPARK_42).conf({"out": TABLES["out"]}, {}) == {}  # no Kafka table


def test_the_scala_build_is_read_from_the_spark_installation(tmp_path: Path):
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-3.5.7.jar").write_bytes(b"")
    assert scala_of("3.5.7", tmp_path) == "2.13"
    assert scala_of("3.5.7", tmp_path / "nowhere") == "2.12"


def test_a_job_that_names_the_connector_keeps_its_own():
    own = {"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.0"}
    assert Connectors(SPARK_42).conf(TABLES, own) == {}
    assert Connectors(SPARK_42, head=lambda url: 404).missing(TABLES, own) is None


def test_a_folder_of_jars_goes_into_spark_jars(tmp_path: Path):
    folder = folder_of(tmp_path, [*JARS, "kafka-clients-3.4.1.jar", "unrelated.jar"])
    conf = Connectors(SPARK_42, folder).conf(TABLES, {"spark.jars": "/x/udf.jar"})
    jars = conf["spark.jars"].split(",")
    assert jars[0] == "/x/udf.jar"
    assert [Path(j).name for j in jars[1:]] == [*JARS[:2], "kafka-clients-3.9.2.jar", JARS[3]]
    assert Connectors(SPARK_42, folder).missing(TABLES, {}) is None


def test_a_folder_without_a_jar_names_it_and_the_table(tmp_path: Path):
    folder = folder_of(tmp_path, [JARS[0], JARS[2], JARS[3]])
    why = Connectors(SPARK_42, folder).missing(TABLES, {})
    assert why == (
        "table src (format kafka) needs Spark's Kafka connector: --connector-jars "
        f"{folder} has no spark-token-provider-kafka-0-10_2.13-4.2.0*.jar"
    )
    other_spark = Connectors(SparkBuild("4.3.0", "2.13"), folder_of(tmp_path / "b", JARS))
    assert "has no spark-sql-kafka-0-10_2.13-4.3.0.jar" in other_spark.missing(TABLES, {})


def test_coordinates_no_repository_serves_are_an_error_naming_what_is_missing():
    asked = []

    def head(url: str) -> int | str:
        asked.append(url)
        return 404 if "maven.org" in url else "no answer: timed out"

    why = Connectors(SparkBuild("4.3.0", "2.13"), head=head).missing(
        TABLES, {"spark.jars.repositories": "http://127.0.0.1:9/repo"}
    )
    assert why == (
        "table src (format kafka) needs Spark's Kafka connector: "
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0 (Spark 4.3.0, Scala 2.13) cannot be "
        "had: http://127.0.0.1:9/repo (no answer: timed out); https://repo1.maven.org/maven2/ "
        "(not found); give a folder of its jars with --connector-jars, or repositories that "
        "serve it in sparkProperties spark.jars.repositories"
    )
    assert asked[0] == (
        "http://127.0.0.1:9/repo/org/apache/spark/spark-sql-kafka-0-10_2.13/4.3.0/"
        "spark-sql-kafka-0-10_2.13-4.3.0.pom"
    )


def test_ivy_s_cache_and_ivy_settings_are_trusted_without_asking(no_local_caches: Path):
    never = Connectors(SPARK_42, head=lambda url: pytest.fail(f"asked {url}"))
    assert never.missing(TABLES, {"spark.jars.ivySettings": "/etc/ivy.xml"}) is None
    jars = no_local_caches / ".ivy2.5.2" / "jars"
    jars.mkdir(parents=True)
    (jars / "org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar").write_bytes(b"PK")
    assert never.missing(TABLES, {}) is None


class _Repository(BaseHTTPRequestHandler):
    """A Maven repository on 127.0.0.1 that serves one POM."""

    served = "/org/apache/spark/spark-sql-kafka-0-10_2.13/4.2.0/spark-sql-kafka-0-10_2.13-4.2.0.pom"

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200 if self.path == f"/repo{self.served}" else 404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def repository():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Repository)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/repo"
    server.shutdown()
    server.server_close()


def test_a_repository_that_serves_the_pom_is_enough(repository: str):
    conf = {"spark.jars.repositories": repository}
    assert Connectors(SPARK_42).missing(TABLES, conf) is None  # asked over HTTP, first


def deployment_with(target: FakeTarget, store: FakeStore, **settings) -> Deployment:
    """A deployment whose storage holds v1's checkpoint, which read topic `t` (its Kafka
    sources start there: decide/offsets.py)."""
    deployment = Deployment(Settings(**settings), store=store, target=target)
    deployment.storage = FakeStorage()
    deployment.storage.add_checkpoint("/ckpt/orders/1", 3)
    deployment.storage.files["/ckpt/orders/1/offsets/3"] = 'v1\n{}\n{"t": {"0": 4}}'
    return deployment


def test_the_plan_is_an_error_before_anything_stops(tmp_path: Path):
    old = make_job(tables={"src": KAFKA})
    new = make_job(sql="SELECT id FROM src WHERE id > 9", tables={"src": KAFKA})
    store, target = FakeStore(), FakeTarget(spark="4.2.0")
    store.put(stored_of(old))
    target.add_run(Run("orders", 1, "run-1", "pid 42"))
    folder = folder_of(tmp_path, [JARS[0]])
    deployment = deployment_with(target, store, connector_jars=folder)
    (decision,) = deployment.plan([new]).decisions
    assert decision.action is Action.ERROR
    assert decision.steps == () and decision.rollback == ()
    assert "needs Spark's Kafka connector: --connector-jars" in decision.reason
    assert decision.reason.endswith("nothing is stopped or started")
    folder_of(tmp_path / "all", JARS)
    deployment = deployment_with(target, store, connector_jars=tmp_path / "all" / "jars")
    (decision,) = deployment.plan([new]).decisions
    assert decision.action is Action.STOP_AND_START_CLEAN
