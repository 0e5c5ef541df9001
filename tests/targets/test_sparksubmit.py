"""spark-submit across Spark lines: which Spark it runs (read without a JVM), and secret
properties that leave the cluster's spark-defaults.conf in force on 3.5 and on 4.x alike."""

from __future__ import annotations

import json
from pathlib import Path

import pyspark
import pytest

from flink_sql_runner.targets.base import Submission
from flink_sql_runner.targets.sparksubmit import (
    find_spark_submit,
    private_properties,
    properties_file_text,
    run,
    spark_version,
    submit_command,
)

DEFAULTS = "# the cluster's defaults\nspark.fsr.from-defaults yes\nspark.fsr.both = defaults\n"
SECRETS = {"spark.fsr.both": "secret", "spark.fsr.password": "hunter2"}


def spark_install(root: Path, release: str | None = None, jars: tuple[str, ...] = ()) -> str:
    """A Spark installation's layout (bin/spark-submit, RELEASE, jars/), as a distribution or
    a vendor ships it; its spark-submit's path."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    if release is not None:
        (root / "RELEASE").write_text(release)
    if jars:
        (root / "jars").mkdir()
        for name in jars:
            (root / "jars" / name).write_bytes(b"")
    return str(root / "bin" / "spark-submit")


def submission(tmp_path: Path) -> Submission:
    return Submission(
        name="job",
        version=1,
        run_id="r1",
        app_name="flink-sql-runner-job-v1",
        runtime_manifest=str(tmp_path / "v1.manifest.json"),
    )


@pytest.fixture(autouse=True)
def no_spark_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)


def test_the_bundled_spark_submit_runs_the_installed_pyspark():
    major, minor = (int(part) for part in pyspark.__version__.split(".")[:2])
    assert spark_version(find_spark_submit()) == (major, minor)


@pytest.mark.parametrize(
    "release, jars, expected",
    [
        ("Spark 3.5.1 built for Hadoop 3.3.4\nBuild flags: -B\n", (), (3, 5)),
        ("Spark 3.5.1-amzn-0 built for Hadoop 3.3.6-amzn-3\n", (), (3, 5)),
        (None, ("spark-catalyst_2.12-3.5.9.jar", "spark-core_2.12-3.5.9.jar"), (3, 5)),
        (None, ("spark-core_2.13-4.1.4.jar",), (4, 1)),
        (None, (), None),  # a wrapper script: no installation beside it
    ],
)
def test_which_spark_a_spark_submit_runs(tmp_path: Path, release, jars, expected):
    assert spark_version(spark_install(tmp_path, release, jars)) == expected


def test_spark_home_is_the_installation_spark_submit_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    wrapper = spark_install(tmp_path / "wrapper")
    spark_install(tmp_path / "spark", "Spark 3.5.2 built for Hadoop 3.3.4\n")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    assert spark_version(wrapper) == (3, 5)


@pytest.mark.parametrize(
    "release, flag",
    [
        ("Spark 3.5.1 built for Hadoop 3.3.4", False),  # 3.5 refuses the option
        ("Spark 4.0.1 built for Hadoop 3.4.1", True),
        (None, True),  # unknown: as 4.0+, a refusal would show; lost defaults would not
    ],
)
def test_load_spark_defaults_only_where_spark_submit_has_it(tmp_path: Path, release, flag):
    spark_submit = spark_install(tmp_path / "spark", release)
    properties = tmp_path / "secret.properties"
    args = submit_command(
        spark_submit, "local[1]", submission(tmp_path), runner="r.py", properties_file=properties
    )
    assert args[args.index("--properties-file") + 1] == str(properties)
    assert ("--load-spark-defaults" in args) is flag


def test_before_spark_4_the_properties_file_carries_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    spark_35 = spark_install(tmp_path / "spark35", "Spark 3.5.1 built for Hadoop 3.3.4")
    spark_40 = spark_install(tmp_path / "spark40", "Spark 4.0.1 built for Hadoop 3.4.1")
    secrets = "spark.fsr.both=secret\nspark.fsr.password=hunter2\n"
    assert properties_file_text(spark_35, SECRETS) == secrets  # no defaults file: nothing to keep
    (tmp_path / "spark35" / "conf").mkdir()
    (tmp_path / "spark35" / "conf" / "spark-defaults.conf").write_text(DEFAULTS)
    assert properties_file_text(spark_35, SECRETS) == f"{DEFAULTS}\n{secrets}"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "spark-defaults.conf").write_text("spark.fsr.x=1\\\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "elsewhere"))
    # the trailing continuation line ends before the secrets
    assert properties_file_text(spark_35, SECRETS) == f"spark.fsr.x=1\\\n\n{secrets}"
    assert properties_file_text(spark_40, SECRETS) == secrets  # 4.0+ reads both files itself


PRINT_CONF = """
import json
from pyspark import SparkConf, SparkContext
SparkContext._ensure_initialized()  # the spark-submit JVM's gateway: its system properties
conf = SparkConf()
keys = ("spark.fsr.from-defaults", "spark.fsr.both", "spark.fsr.password")
print("FSR-CONF " + json.dumps({key: conf.get(key, None) for key in keys}), flush=True)
"""


@pytest.mark.spark
def test_secrets_and_the_clusters_defaults_both_reach_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Real spark-submit of the installed pyspark (3.5 or 4.x): the defaults file counts, the
    secret properties win over it, and no secret is on the command line."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(DEFAULTS)
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    driver = tmp_path / "print_conf.py"
    driver.write_text(PRINT_CONF)
    spark_submit = find_spark_submit()
    with private_properties(SECRETS, spark_submit) as properties:
        args = submit_command(
            spark_submit,
            "local[1]",
            submission(tmp_path),
            runner=str(driver),
            properties_file=properties,
        )
        done = run(args, timeout=180)
    assert done.returncode == 0, done.output
    assert not any("hunter2" in arg for arg in args)
    (line,) = [line for line in done.output.splitlines() if line.startswith("FSR-CONF ")]
    assert json.loads(line.removeprefix("FSR-CONF ")) == {
        "spark.fsr.from-defaults": "yes",
        "spark.fsr.both": "secret",
        "spark.fsr.password": "hunter2",
    }
