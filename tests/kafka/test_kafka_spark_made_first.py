"""What `.ci/run` makes first, in the background from its first stage (`python -m tests.matrix
--install-only --for-suite`), is what the Kafka tests then use: the same line's Spark, the same
JVM archive, the same connector jars. Were they to differ, the Kafka tests would make their own
on a fresh machine, their worker waiting (909 s measured on 2026-11-30), and nothing else would
say so. (tests/test_matrix.py checks that `.ci/run` asks for it.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.matrix import KAFKA_LINE, ready_for_suite, use_venv
from tests.support import jvm
from tests.support.kafka_spark import KafkaSpark, driver_java_options

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_what_ci_makes_first_is_what_the_kafka_tests_use(kafka_spark: KafkaSpark) -> None:
    with use_venv(KAFKA_LINE) as venv_dir:
        said = ready_for_suite(venv_dir)
    assert "the Kafka connector not fetched" not in said, said
    assert "the Kafka broker not fetched" not in said, said
    if str(venv_dir) not in kafka_spark.spark_submit:
        # Maven Central serves the default line's connector now: the Kafka tests run on it,
        # and KAFKA_LINE is only made first for the matrix. Nothing to agree on.
        return
    assert f"driver options {kafka_spark.java_options or 'none'};" in said, said
    assert f"the Kafka connector {len(kafka_spark.jars)} jars" in said, said


def test_the_kafka_drivers_archive_is_found_as_they_run_without_spark_home(
    kafka_spark: KafkaSpark, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A SPARK_HOME in the shell names another Spark's jars; the Kafka tests' drivers run
    without it (`kafka_env`), so their archive is the one found without it."""
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    monkeypatch.setattr(jvm, "_tried", {})  # found anew, not as this process found it before
    found = driver_java_options(kafka_spark.spark_submit, kafka_spark.python)
    assert found == kafka_spark.java_options
