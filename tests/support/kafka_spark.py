"""The Spark the Kafka tests submit with, and the connector jars for it.

A connector must match its Spark release exactly, and Maven Central does not serve one for every
release (none for 4.3.0, the suite's default pyspark, when this was written). `kafka_spark` is the
running pyspark when `maven.classpath` resolves its connector, else the 4.2 line of the matrix
(`tests.matrix.ensure_venv("4.2")`): its `spark-submit`, given to the CLI with `--spark-submit`,
and its Python for the driver (`PYSPARK_PYTHON`: a driver must import the pyspark of the JVM it
talks to).

The jars reach the job through one helper, `connector_properties`: until the product names a
folder of connector jars itself, the tests hand them to Spark in `spark.jars`. Spark's Ivy is never
asked for anything (no `spark.jars.packages` here): the tests reach nothing but 127.0.0.1.

The drivers' JVM options (tests/support/jvm.py: the client compiler, this release's class-data-
sharing archive) travel in the job's properties (`job_properties`: `spark.driver.extraJavaOptions`,
which spark-submit puts after `SPARK_SUBMIT_OPTS`, so they win), and in a Kafka test's
environment (`kafka_env`): its CLI calls start every JVM, the plan's schema probe and `preview`'s
among them, with this release's spark-submit (gather/spark_child.py), and an archive of another
release's classes is not loaded (its JVM then maps no archive at all: 2.3x its CPU).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.matrix import KAFKA_LINE
from tests.support import maven
from tests.support.jvm import QUICK_OPTIONS, java_options

#: The option that names a JVM's class-data-sharing archive (tests/support/jvm.py).
ARCHIVE_OPTION = "-XX:SharedArchiveFile="


@dataclass(frozen=True)
class KafkaSpark:
    version: str  # the Spark release, e.g. 4.2.0
    spark_submit: str
    python: str  # the driver's Python: imports this release's pyspark
    jars: tuple[Path, ...]
    java_options: str = ""  # the drivers' JVM options (tests/support/jvm.py), for this release

    @property
    def target_options(self) -> tuple[str, ...]:
        return ("--spark-submit", self.spark_submit)

    def env(self) -> dict[str, str]:
        """What a CLI call that starts runs needs in its environment: this release's Python
        for the driver (its JVM's options are in `job_properties`)."""
        return {"PYSPARK_PYTHON": self.python, "PYSPARK_DRIVER_PYTHON": self.python}


def connector_jars(version: str) -> list[Path]:
    scala = "2.12" if version.startswith("3.") else "2.13"
    return maven.classpath(
        maven.pom("spark-kafka"), {"spark.version": version, "scala.binary": scala}
    )


def connector_properties(spark: KafkaSpark) -> dict[str, str]:
    """The Spark properties that give a job the connector: the ONE place the tests say how."""
    return {"spark.jars": ",".join(str(jar) for jar in spark.jars)}


def job_properties(spark: KafkaSpark) -> dict[str, str]:
    """A Kafka job's Spark properties in the tests: the connector, and its driver's JVM options
    for `spark`'s release (none with `FSR_TEST_JVM=plain`)."""
    driver = {"spark.driver.extraJavaOptions": spark.java_options} if spark.java_options else {}
    return {**connector_properties(spark), **driver}


def driver_java_options(spark_submit: str, python: str) -> str:
    """The JVM options of the drivers of the Spark at `spark_submit` (its archive made if
    missing); none with `FSR_TEST_JVM=plain`. Its archive is found as those drivers run, without
    SPARK_HOME (`kafka_env`), which would name another Spark's jars."""
    if os.environ.get("FSR_TEST_JVM") == "plain":
        return ""
    kept = os.environ.pop("SPARK_HOME", None)
    try:
        return java_options(Path(spark_submit).parent.parent, python=python)
    finally:
        if kept is not None:
            os.environ["SPARK_HOME"] = kept


def find_kafka_spark() -> KafkaSpark:
    import sys

    import pyspark

    try:
        jars = connector_jars(pyspark.__version__)
    except maven.MavenUnavailable:
        jars = None
    if jars is not None:
        bundled = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
        options = driver_java_options(bundled, sys.executable)
        return KafkaSpark(pyspark.__version__, bundled, sys.executable, tuple(jars), options)
    from tests.matrix import ensure_venv, pyspark_version

    venv = ensure_venv(KAFKA_LINE)
    version = pyspark_version(venv)
    python = venv / "bin" / "python"
    found = list((venv / "lib").glob("python3*/site-packages/pyspark/bin/spark-submit"))
    if not found:
        raise RuntimeError(f"no pyspark/bin/spark-submit in {venv}")
    jars = connector_jars(version)
    options = driver_java_options(str(found[0]), str(python))
    return KafkaSpark(version, str(found[0]), str(python), tuple(jars), options)


@pytest.fixture(scope="session")
def kafka_spark() -> KafkaSpark:
    return find_kafka_spark()


@pytest.fixture
def kafka_env(kafka_spark: KafkaSpark, monkeypatch: pytest.MonkeyPatch) -> Iterator[KafkaSpark]:
    """The test's CLI calls start drivers and probes with the Python and the JVM options of
    `kafka_spark`'s release."""
    for key, value in kafka_spark.env().items():
        monkeypatch.setenv(key, value)
    if kafka_spark.java_options:
        others = os.environ.get("SPARK_SUBMIT_OPTS", "").split()
        kept = [o for o in others if o not in QUICK_OPTIONS and not o.startswith(ARCHIVE_OPTION)]
        monkeypatch.setenv("SPARK_SUBMIT_OPTS", " ".join([*kept, kafka_spark.java_options]))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    yield kafka_spark
