"""The runtime manifest a probe is given (model/runtime.py)."""

from __future__ import annotations

import pytest

from flink_sql_runner.model.runtime import probe_manifest
from flink_sql_runner.model.stored import Meta, StoredManifest

pytestmark = pytest.mark.fast


def test_a_probes_spark_sql_settings_are_resolved_as_the_runs_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review of issue 54, P8: `${JOB_TZ}` in a spark.sql.* setting reached the preview's and
    the plan's probes unresolved (Spark refused the zone), where the run gets its value."""
    monkeypatch.setenv("JOB_TZ", "America/New_York")
    spec = {
        "name": "j",
        "target-table": "out",
        "checkpoint-root": "/ck",
        "sql": "SELECT 1 AS x",
        "sparkProperties": {"spark.sql.session.timeZone": "${JOB_TZ}", "spark.executor.cores": 2},
    }
    tables = {"out": {"format": "parquet", "options": {"path": "/out"}}}
    doc = probe_manifest(StoredManifest(spec, tables, Meta(1, "q", "2026-11-29T00:00:00Z")), "plan")
    assert doc["conf"] == {"spark.sql.session.timeZone": "America/New_York"}
