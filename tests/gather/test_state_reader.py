"""`inspect --state`'s state probe (gather/state_reader.py): what it is asked, without Spark (a
probe stand-in answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather.state_reader import state_of
from flink_sql_runner.model.checkpoint_report import Inspection
from flink_sql_runner.model.runtime import spark_conf
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.storage import FileStorage

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def inspected(tmp_path: Path) -> Inspection:
    """v1 of a job whose S3 credentials are kept in the environment, as its runs get them."""
    props = {
        "spark.hadoop.fs.s3a.access.key": "${S3_ACCESS_KEY}",
        "spark.hadoop.fs.s3a.secret.key": "${S3_SECRET_KEY}",
        "spark.hadoop.fs.s3a.endpoint": "http://${S3_HOST}:9000",
        "spark.sql.shuffle.partitions": "4",
    }
    job = {"name": "orders", "target-table": "t", "sql": "SELECT 1",
           "checkpoint-root": str(tmp_path), "sparkProperties": props}  # fmt: skip
    manifest = StoredManifest(job, {}, Meta.new(1))
    return Inspection("orders", 1, manifest, str(tmp_path / "orders" / "1"), None)


def test_the_probe_gets_the_jobs_storage_settings_resolved_as_its_runs_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40, item 6: `${ENV}` reached the probe's Spark unresolved, so S3 credentials kept
    in the environment could not reach the checkpoint. Resolved as deploy resolves them."""
    monkeypatch.setenv("S3_ACCESS_KEY", "AKIAEXAMPLE")
    monkeypatch.setenv("S3_SECRET_KEY", SECRET)
    monkeypatch.setenv("S3_HOST", "127.0.0.1")
    asked: list[dict[str, Any]] = []

    def ask(request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        asked.append(request)
        return {"spark": "4.3.0", "operators": []}, None

    found = inspected(tmp_path)
    state_of(FileStorage(), found, keys=2, ask=ask)
    plain, secret = spark_conf(found.manifest, "orders")
    assert asked == [
        {
            "checkpoint": found.location,
            "keys": 2,
            "conf": {k: v for k, v in {**plain, **secret}.items() if k.startswith("spark.hadoop.")},
        }
    ]
    assert asked[0]["conf"]["spark.hadoop.fs.s3a.secret.key"] == SECRET
    assert asked[0]["conf"]["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"


def test_a_variable_not_set_is_why_the_state_is_not_read_and_no_secret_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3_ACCESS_KEY", SECRET)
    monkeypatch.delenv("S3_SECRET_KEY", raising=False)
    monkeypatch.setenv("S3_HOST", "127.0.0.1")

    def ask(request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        raise AssertionError("no probe is started without its settings")

    report = state_of(FileStorage(), inspected(tmp_path), keys=0, ask=ask)
    assert report.unavailable == (
        "the state probe was not started: orders: sparkProperties.spark.hadoop.fs.s3a.secret.key: "
        "environment variable S3_SECRET_KEY is not set"
    )
    assert SECRET not in str(report)
