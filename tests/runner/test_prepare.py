"""A prepared run on the shared SparkSession: it does everything up to starting its query, says
`ready` on its own status file, writes nothing of the job's until the go naming its run id, and
ends without a write on an abort, a timeout or a failure before the go."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from runner import lifecycle
from runner.manifest import load_manifest
from runner.prepare import EXIT_ABORTED, EXIT_EXPIRED
from tests.support.runner_jobs import manifest, write_input
from tests.support.workspace import wait_for

#: The old run's status, which a prepared run of the same version must never touch.
OLD_STATUS = {"run-id": "old-run", "state": "active", "batch-id": 41}


def prepared_manifest(tmp_path: Path, timeout: float = 60, **overrides: Any) -> dict[str, Any]:
    control = tmp_path / "_control"
    control.mkdir(exist_ok=True)
    (control / "v1.status.json").write_text(json.dumps(OLD_STATUS))
    doc = manifest(
        tmp_path,
        **{
            "status-file": str(control / "v1.status.json"),
            "prepare": {
                "status-file": str(control / "v1.prepared.status.json"),
                "go-file": str(control / "v1.go.json"),
                "timeout-seconds": timeout,
                "warm-up-seconds": 30,
                "pinned-settings": ["spark.sql.shuffle.partitions", "spark.not.set.here"],
            },
        },
    )
    doc.update(overrides)
    return doc


class Run:
    """`lifecycle.run_on` in a thread, as a driver would run it."""

    def __init__(self, spark: Any, tmp_path: Path, doc: dict[str, Any]):
        self.doc, self.code = doc, None
        self.path = tmp_path / "_control" / "v1.manifest.json"
        self.path.write_text(json.dumps(doc))
        self.thread = threading.Thread(target=self._run, args=(spark,), daemon=True)
        self.thread.start()

    def _run(self, spark: Any) -> None:
        self.code = lifecycle.run_on(spark, str(self.path), lifecycle.StopRequest())

    def prepared_status(self) -> dict[str, Any] | None:
        path = Path(self.doc["prepare"]["status-file"])
        return json.loads(path.read_text()) if path.exists() else None

    def state(self) -> str | None:
        """This run's prepared state (the file may still hold an earlier run's)."""
        status = self.prepared_status()
        return status["state"] if status and status["run-id"] == self.doc["run-id"] else None

    def word(self, **word: Any) -> None:
        Path(self.doc["prepare"]["go-file"]).write_text(json.dumps(word))

    def ended(self, timeout: float = 120) -> int | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the run did not end"
        return self.code


def version_status(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "_control" / "v1.status.json").read_text())


@pytest.mark.spark
def test_a_prepared_run_writes_nothing_until_its_go_then_runs_as_any_other(spark, tmp_path, capfd):
    write_input(tmp_path, "a", range(5))
    run = Run(spark, tmp_path, prepared_manifest(tmp_path))
    wait_for(lambda: run.state() == "ready", timeout=120, what="the run to be ready")
    ready = run.prepared_status()
    assert set(ready) == {"run-id", "state", "updated", "spark-version", "checkpoint", "conf"}
    assert ready["run-id"] == "run-1" and ready["spark-version"] == spark.version
    assert ready["checkpoint"] == {"last-committed": None, "last-offsets": None}
    assert set(ready["conf"]) <= {"spark.sql.shuffle.partitions"}  # only what it sets itself
    assert "warmed up in " in capfd.readouterr().err, "one micro-batch before it said ready"
    # nothing of the job's is written: no checkpoint, no sink, the old run's status untouched
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "out").exists()
    assert version_status(tmp_path) == OLD_STATUS
    # a word for another run is not this run's
    run.word(**{"run-id": "another-run", "go": True})
    run.thread.join(1.0)
    assert run.thread.is_alive() and not (tmp_path / "ckpt").exists()
    run.word(**{"run-id": "run-1", "go": True})
    assert run.ended() == lifecycle.EXIT_OK
    assert version_status(tmp_path)["run-id"] == "run-1"
    assert version_status(tmp_path)["state"] == "finished"
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(row["id"] for row in rows) == [0, 1, 2, 3, 4]


@pytest.mark.spark
def test_a_prepared_run_reads_its_checkpoint_without_writing_it(spark, tmp_path):
    write_input(tmp_path, "a", range(3))
    first = Run(spark, tmp_path, prepared_manifest(tmp_path))
    wait_for(lambda: first.state() == "ready", timeout=120, what="the first run to be ready")
    first.word(**{"run-id": "run-1", "go": True})
    assert first.ended() == lifecycle.EXIT_OK
    checkpoint = tmp_path / "ckpt" / "1"
    before = sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*"))
    write_input(tmp_path, "b", range(3, 6))
    second = Run(spark, tmp_path, prepared_manifest(tmp_path, **{"run-id": "run-2"}))
    wait_for(lambda: second.state() == "ready", timeout=120, what="the second run to be ready")
    assert second.prepared_status()["checkpoint"] == {"last-committed": 0, "last-offsets": 0}
    second.word(**{"run-id": "run-2", "abort": "the old run could not be stopped"})
    assert second.ended() == EXIT_ABORTED
    assert second.prepared_status()["state"] == "aborted"
    assert second.prepared_status()["error"] == "the old run could not be stopped"
    assert sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*")) == before
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(row["id"] for row in rows) == [0, 1, 2]


@pytest.mark.spark
def test_a_prepared_run_without_a_go_ends_by_itself(spark, tmp_path):
    write_input(tmp_path, "a", range(3))
    run = Run(spark, tmp_path, prepared_manifest(tmp_path, timeout=1))
    assert run.ended() == EXIT_EXPIRED
    assert run.prepared_status()["state"] == "expired"
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "out").exists()
    assert version_status(tmp_path) == OLD_STATUS


@pytest.mark.spark
def test_a_prepared_run_that_cannot_start_fails_on_its_own_status_file(spark, tmp_path):
    write_input(tmp_path, "a", range(3))
    doc = prepared_manifest(tmp_path, sql="SELECT id, no_such_column FROM people")
    run = Run(spark, tmp_path, doc)
    assert run.ended() == lifecycle.EXIT_FAILED
    status = run.prepared_status()
    assert status["state"] == "failed" and "no_such_column" in status["error"]
    assert version_status(tmp_path) == OLD_STATUS  # the old run's file is the old run's
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        ("nope", "prepare must be an object"),
        ({"go-file": "/g"}, "prepare.status-file"),
        ({"status-file": "/s", "go-file": ""}, "prepare.go-file"),
        ({"status-file": "/s", "go-file": "/g", "timeout-seconds": 0}, "timeout-seconds"),
        ({"status-file": "/s", "go-file": "/g", "timeout-seconds": True}, "timeout-seconds"),
        ({"status-file": "/s", "go-file": "/g", "pinned-settings": "x"}, "pinned-settings"),
        ({"status-file": "/s", "go-file": "/g", "warm-up-seconds": -1}, "warm-up-seconds"),
        ({"status-file": "/s", "go-file": "/g", "warm-up-seconds": "5"}, "warm-up-seconds"),
        ({"status-file": "/s", "go-file": "/g", "warm-up-seconds": False}, "warm-up-seconds"),
        ({"status-file": "/s", "go-file": "/g", "warm-up-seconds": float("nan")}, "warm-up"),
        ({"status-file": "/s", "go-file": "/g", "warm-up-seconds": float("inf")}, "warm-up"),
    ],
)
def test_a_bad_prepare_section_is_refused(tmp_path, prepare, message):
    from runner.failures import BadManifest

    doc = manifest(tmp_path, prepare=prepare)
    with pytest.raises(BadManifest, match=message):
        load_manifest(json.dumps(doc))


@pytest.mark.spark
def test_a_prepared_run_ends_at_its_own_stop_marker_not_the_versions(spark, tmp_path):
    write_input(tmp_path, "a", range(3))
    doc = prepared_manifest(tmp_path)
    own = tmp_path / "_control" / "v1.prepared.stop"
    doc["prepare"]["stop-marker"] = str(own)
    doc["stop-marker"] = str(tmp_path / "_control" / "v1.stop")
    run = Run(spark, tmp_path, doc)
    wait_for(lambda: run.state() == "ready", timeout=120, what="the run to be ready")
    # the version's marker is the old run's (a config change keeps the version): not this one's
    (tmp_path / "_control" / "v1.stop").write_text("")
    run.thread.join(1.0)
    assert run.thread.is_alive()
    own.write_text("")
    assert run.ended() == EXIT_ABORTED
    assert run.prepared_status()["state"] == "aborted"
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "out").exists()


@pytest.mark.spark
def test_the_go_may_name_where_sources_start_and_they_are_registered_again(spark, tmp_path):
    write_input(tmp_path, "a", range(4))
    run = Run(spark, tmp_path, prepared_manifest(tmp_path))
    wait_for(lambda: run.state() == "ready", timeout=120, what="the run to be ready")
    start = {"options": {"startingOffsets": '{"t": {"0": 5}}'}}
    run.word(**{"run-id": "run-1", "go": True, "starting": {"people": start}})
    assert run.ended() == lifecycle.EXIT_OK
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(row["id"] for row in rows) == [0, 1, 2, 3]


def test_starts_given_with_the_go_reach_only_the_tables_named() -> None:
    from runner.kafka_start import starts_from_word

    doc = {
        "tables": {
            "orders": {"format": "kafka", "options": {"subscribe": "o", "startingOffsets": "x"}},
            "out": {"format": "parquet", "options": {"path": "/o"}},
        }
    }
    assert not starts_from_word(doc, {"go": True})
    start = {"options": {"startingOffsets": '{"o": {"0": 7}}'}, "new-partitions": "earliest"}
    assert starts_from_word(doc, {"starting": {"orders": start}})
    assert doc["tables"]["orders"] == {
        "format": "kafka",
        "options": {"subscribe": "o", "startingOffsets": '{"o": {"0": 7}}'},
        "new-partitions": "earliest",
    }
    assert doc["tables"]["out"]["options"] == {"path": "/o"}
    # a go of an older deployer names offsets only
    assert starts_from_word(doc, {"starting-offsets": {"orders": '{"o": {"0": 9}}'}})
    assert doc["tables"]["orders"]["options"]["startingOffsets"] == '{"o": {"0": 9}}'
    assert "new-partitions" not in doc["tables"]["orders"]


LISTENING_CODE = """
import builtins
from pyspark.sql.streaming import StreamingQueryListener

class Heard(StreamingQueryListener):
    def onQueryStarted(self, event): builtins.HEARD.append(("started", event.name))
    def onQueryProgress(self, event): builtins.HEARD.append(("rows", event.progress.numInputRows))
    def onQueryIdle(self, event): pass
    def onQueryTerminated(self, event): builtins.HEARD.append(("terminated", None))

builtins.LISTENER = Heard()
spark.streams.addListener(builtins.LISTENER)
execution_output = spark.readStream.format("rate").load()
"""


@pytest.mark.spark
def test_a_listener_the_jobs_code_adds_never_hears_of_the_warm_up(spark, tmp_path, capfd):
    """The warm-up runs before the job's code: a listener that code adds (to count or export
    the job's rows) is told nothing before the go (review of issue 57: it heard the warm-up's
    query start, its 20 made-up rows and its end as the job's)."""
    import builtins

    builtins.HEARD = []  # type: ignore[attr-defined]
    write_input(tmp_path, "a", range(3))
    doc = prepared_manifest(tmp_path, sql=None, code=LISTENING_CODE)
    run = Run(spark, tmp_path, doc)
    try:
        wait_for(lambda: run.state() == "ready", timeout=120, what="the run to be ready")
        assert "warmed up in " in capfd.readouterr().err
        time.sleep(1.5)  # Spark's listener bus is asynchronous
        assert builtins.HEARD == [], builtins.HEARD  # type: ignore[attr-defined]
        run.word(**{"run-id": "run-1", "abort": "not this time"})
        assert run.ended() == EXIT_ABORTED
    finally:
        if hasattr(builtins, "LISTENER"):
            spark.streams.removeListener(builtins.LISTENER)
            del builtins.LISTENER
