"""What `.ci/run` makes first, in the background from its first stage (`python -m tests.matrix
--install-only --for-suite`), is what the Kafka tests then use: the same line's Spark, the same
JVM archive, the same connector jars. Were they to differ, the Kafka tests would make their own
on a fresh machine, their worker waiting (909 s measured on 2026-11-30), and nothing else would
say so."""

from __future__ import annotations

import pytest

from tests.matrix import KAFKA_LINE, ready_for_suite, use_venv
from tests.support.kafka_spark import ARCHIVE_OPTION, KafkaSpark

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_what_ci_makes_first_is_what_the_kafka_tests_use(kafka_spark: KafkaSpark) -> None:
    with use_venv(KAFKA_LINE) as venv_dir:
        said = ready_for_suite(venv_dir)
    if str(venv_dir) not in kafka_spark.spark_submit:
        pytest.fail(f"the Kafka tests run {kafka_spark.spark_submit}, not {KAFKA_LINE}'s Spark")
    for archive in [o for o in kafka_spark.java_options.split() if o.startswith(ARCHIVE_OPTION)]:
        assert f"archive {archive.removeprefix(ARCHIVE_OPTION)};" in said, said
    assert f"the Kafka connector {len(kafka_spark.jars)} jars" in said, said
    assert "not fetched" not in said, said
