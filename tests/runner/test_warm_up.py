"""A prepared run's warm-up on the shared SparkSession: one micro-batch of made-up rows through
the sink's file format into a temporary folder, removed after; nothing of the job's read or
written; cut short by a stop request or its time; a failure only said, never the run's."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runner import lifecycle
from runner import warm_up as warm_up_module
from runner.prepare import EXIT_ABORTED
from runner.warm_up import warm_up
from tests.support.runner_jobs import manifest


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The warm-up's temporary folders under tmp_path, and what each held when it was removed."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    held: dict[str, Any] = {"root": folder, "files": []}
    remove = warm_up_module.shutil.rmtree

    def recording(path: Any, ignore_errors: bool = False) -> None:
        held["files"] = sorted(str(p.relative_to(path)) for p in Path(path).rglob("*"))
        remove(path, ignore_errors=ignore_errors)

    monkeypatch.setattr(warm_up_module.shutil, "rmtree", recording)
    return held


def job(tmp_path: Path, sink_format: str) -> dict[str, Any]:
    doc = manifest(tmp_path)
    doc["tables"]["people_out"] = {
        "format": sink_format,
        "options": {"path": str(tmp_path / "out")},
    }
    return doc


def no_warm_up_query(spark: Any) -> bool:
    return not any((q.name or "").startswith("warm-up ") for q in spark.streams.active)


def nothing_of_the_jobs(tmp_path: Path) -> bool:
    return not any((tmp_path / name).exists() for name in ("in", "out", "ckpt", "_control"))


TEXT_CLASS = "org.apache.spark.sql.execution.datasources.text.TextFileFormat"


@pytest.mark.spark
@pytest.mark.parametrize("sink_format", ["json", "text", TEXT_CLASS])
def test_one_micro_batch_goes_through_the_sinks_format_and_nothing_is_left(
    spark, tmp_path, scratch, sink_format
):
    """Text takes one text column, under any name Spark knows it by (review of issue 57: its
    class name got three columns, and every warm-up failed)."""
    said = warm_up(spark, job(tmp_path, sink_format), 60, lambda: None)
    assert said.startswith("warmed up in ") and said.endswith(f"into {sink_format})"), said
    written = [f for f in scratch["files"] if f.startswith("rows/part-")]
    suffix = {"json": ".json", "text": ".txt", TEXT_CLASS: ".txt"}[sink_format]
    assert written and all(f.endswith(suffix) for f in written), scratch["files"]
    assert "rows/_spark_metadata/0" in scratch["files"], "Spark's own file sink wrote it"
    assert "checkpoint/commits/0" in scratch["files"], "its one batch committed"
    assert list(scratch["root"].iterdir()) == [], "its folder removed"
    assert nothing_of_the_jobs(tmp_path) and no_warm_up_query(spark)


@pytest.mark.spark
def test_a_sink_that_is_no_file_sink_warms_up_through_parquet(spark, tmp_path, scratch):
    doc = job(tmp_path, "console")
    said = warm_up(spark, doc, 60, lambda: None)
    assert said.endswith("into parquet)"), said
    assert any(f.startswith("rows/part-") and f.endswith(".parquet") for f in scratch["files"])
    assert nothing_of_the_jobs(tmp_path) and no_warm_up_query(spark)


@pytest.mark.spark
def test_a_stop_request_cuts_it_short(spark, tmp_path, scratch):
    said = warm_up(spark, job(tmp_path, "parquet"), 60, lambda: "signal SIGTERM")
    assert said == "warm-up cut short: the run is to end"
    assert list(scratch["root"].iterdir()) == [] and no_warm_up_query(spark)
    assert nothing_of_the_jobs(tmp_path)


@pytest.mark.spark
def test_it_ends_after_its_seconds_whether_or_not_its_batch_ran(spark, tmp_path, scratch):
    said = warm_up(spark, job(tmp_path, "parquet"), 0.001, lambda: None)
    assert said == "warm-up not done within 0.001 s (no room for executors yet?)"
    assert list(scratch["root"].iterdir()) == [] and no_warm_up_query(spark)


@pytest.mark.spark
def test_a_failing_warm_up_is_said_and_the_run_goes_on(spark, tmp_path, scratch, monkeypatch):
    monkeypatch.setattr(warm_up_module, "_sink_format", lambda spark, doc: "no.such.Format")
    said = warm_up(spark, job(tmp_path, "parquet"), 60, lambda: None)
    assert said.startswith("warm-up failed, going on without it: "), said
    assert "no.such.Format" in said
    assert list(scratch["root"].iterdir()) == [] and no_warm_up_query(spark)


def test_zero_seconds_is_no_warm_up(tmp_path) -> None:
    def untouchable() -> None:
        raise AssertionError("no Spark call without a warm-up")

    spark = SimpleNamespace(readStream=property(untouchable))
    assert warm_up(spark, job(tmp_path, "parquet"), 0, untouchable) == (
        "no warm-up (prepare.warm-up-seconds is 0)"
    )


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "yarn", "k8s://https://127.0.0.1"])
def test_on_a_cluster_it_writes_to_the_noop_sink(tmp_path, master) -> None:
    """Its executors are on other machines: a folder of the driver is not theirs."""
    spark = SimpleNamespace(sparkContext=SimpleNamespace(master=master))
    assert warm_up_module._sink_format(spark, job(tmp_path, "parquet")) is None


class NeverCommits:
    """The warm-up's query on a cluster with no room for executors: active, no progress."""

    isActive, lastProgress = True, None

    def awaitTermination(self, seconds: float) -> bool:
        time.sleep(seconds)
        return False

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.isActive = False


class Chain:
    """spark.readStream ... .start(), as a fake: every call returns itself, `start` the query."""

    def __getattr__(self, name: str) -> Any:
        if name == "start":
            return lambda *a, **k: NeverCommits()
        return self if name == "writeStream" else (lambda *a, **k: self)


def cluster_spark() -> Any:
    conf = SimpleNamespace(get=lambda key: "file:///")
    return SimpleNamespace(
        version="4.3.0",
        readStream=Chain(),
        sparkContext=SimpleNamespace(master="spark://127.0.0.1:7077", defaultParallelism=2),
        _jsc=SimpleNamespace(hadoopConfiguration=lambda: conf),
    )


@pytest.mark.parametrize("how", ["stop-marker", "abort-word"])
def test_the_deployers_abort_ends_the_warm_up_at_once(tmp_path, monkeypatch, how, capfd):
    """The deployer aborts a prepared run that is late, the case a warm-up waiting for
    executors is in: the abort ends it at once, not after its warm-up (review of issue 57)."""
    for step in ("register_sources", "query_frame", "check_before_first_write"):
        monkeypatch.setattr(lifecycle, step, lambda *a: object())
    monkeypatch.setattr(lifecycle, "with_metadata", lambda frame, doc: frame)
    monkeypatch.setattr(lifecycle, "checkpoint_summary", lambda *a: {})
    monkeypatch.setattr(lifecycle, "pinned_conf", lambda *a: {})
    control = tmp_path / "_control"
    control.mkdir()
    prepare = {
        "status-file": str(control / "p.status.json"),
        "go-file": str(control / "p.go.json"),
        "stop-marker": str(control / "p.stop"),
        "warm-up-seconds": 6,
    }
    location = tmp_path / "m.json"
    location.write_text(json.dumps(manifest(tmp_path, prepare=prepare)))
    if how == "stop-marker":
        (control / "p.stop").write_text("")
    else:
        (control / "p.go.json").write_text(json.dumps({"run-id": "run-1", "abort": "late"}))
    begun = time.monotonic()
    code = lifecycle.run_on(cluster_spark(), str(location), lifecycle.StopRequest())
    assert code == EXIT_ABORTED
    assert time.monotonic() - begun < 2, "it warmed up its 6 s first"
    assert "warm-up cut short: the run is to end" in capfd.readouterr().err
