"""Secret properties files, read back by the JVM's own `java.util.Properties` (the shared
SparkSession's JVM): what the deployer meant is what spark-submit reads, nothing more."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.targets.javaprops import properties_text

pytestmark = pytest.mark.spark

NASTY = {
    "spark.hadoop.fs.s3a.secret.key": "back\\slash",
    "spark.password.with.newline": "first\nspark.injected=yes",
    "spark.token": " leading space and trailing tab\t",
    "spark.key=with:odd chars#!": "=:#! all of them",
    "spark.unicode": "pässwörd-日本-🔑",
    "spark.cr": "a\rb\fc",
}


def test_java_reads_back_exactly_what_was_written(spark, tmp_path: Path) -> None:
    path = tmp_path / "secret.properties"
    path.write_text(properties_text(NASTY), encoding="utf-8")
    jvm = spark._jvm
    properties = jvm.java.util.Properties()
    reader = jvm.java.io.InputStreamReader(
        jvm.java.io.FileInputStream(str(path)), jvm.java.nio.charset.StandardCharsets.UTF_8
    )
    try:
        properties.load(reader)
    finally:
        reader.close()
    read = {str(k): str(properties.getProperty(k)) for k in properties.stringPropertyNames()}
    assert read == NASTY, "no entry lost, changed or injected"
