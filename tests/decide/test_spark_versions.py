"""The rules know the Spark version: which settings a checkpoint pins, what a change of Spark
between the recorded run and the next start means, and the version each run reports is kept."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.sparkversion import is_older, version_tuple
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import run_cli
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, fake_world, make_job, stored_of

REPO = Path(__file__).resolve().parents[2]


def plan(desired, ran_on: str | None, next_on: str | None, running: bool = True):
    store, target, state, executor = fake_world()
    stored = stored_of(BASE, 1)
    store.put(replace(stored, meta=replace(stored.meta, spark_version=ran_on)))
    if running:
        target.add_run(Run("orders", 1, "old", "pid 1"))
    state.add_checkpoint(f"{ROOT}/orders/1", 4)
    target.spark = next_on
    facts = gather([desired], store, target, state, workers=1)
    return build_plan(facts, spark=target.spark_version()).decisions[0]


def more_partitions():
    return make_job(sparkProperties={"spark.sql.shuffle.partitions": "8",
                                     "spark.executor.memory": "1g"})  # fmt: skip


@pytest.mark.parametrize(
    "spark, action",
    [
        ("3.5.9", Action.STOP_AND_START_CLEAN),
        ("4.0.5", Action.STOP_AND_START_CLEAN),
        ("4.1.4", Action.STOP_AND_RESTART),
        ("4.3.0", Action.STOP_AND_RESTART),
        (None, Action.STOP_AND_START_CLEAN),  # unknown: the strictest rules
    ],
)
def test_spark_41_lets_a_restart_change_the_shuffle_partitions(spark, action):
    decision = plan(more_partitions(), spark, spark)
    assert decision.action is action
    (change,) = [c for c in decision.changes if c.field.endswith("shuffle.partitions")]
    if action is Action.STOP_AND_RESTART:
        assert change.why == (
            "Spark 4.1+ applies it to stateless shuffles on restart; state keeps its partitions"
        )


def test_without_the_targets_word_the_version_the_last_run_reported_decides():
    assert plan(more_partitions(), "4.2.1", None).action is Action.STOP_AND_RESTART


def test_a_restart_onto_an_older_spark_is_refused():
    decision = plan(CONFIG, "4.3.0", "4.0.5")
    assert decision.action is Action.ERROR
    assert decision.reason.endswith(
        "but v1's checkpoint was written by Spark 4.3.0 and the next run uses Spark 4.0.5, which "
        "is older: not restored (run it on Spark 4.3.0 or newer, or change the query to start a "
        "new version)"
    )
    stopped = plan(BASE, "4.3.0", "4.0.5", running=False)
    assert stopped.action is Action.ERROR, "a plain restart from the checkpoint, too"


def test_what_a_newer_spark_means_for_each_decision():
    restart = plan(CONFIG, "4.0.1", "4.3.0")
    assert restart.action is Action.STOP_AND_RESTART
    assert restart.reason.endswith("Spark 4.0.1 -> 4.3.0: the newer Spark restores v1's checkpoint")
    major = plan(CONFIG, "3.5.9", "4.3.0")
    assert major.reason.endswith("see Spark's migration guide for stateful queries")
    clean = plan(QUERY, "4.0.1", "4.3.0")
    assert clean.action is Action.STOP_AND_START_CLEAN
    assert clean.reason.endswith("starts on Spark 4.3.0 (v1 last ran on 4.0.1)")
    running = plan(BASE, "4.0.1", "4.3.0")
    assert running.action is Action.NOOP and not running.steps, "no restart for the Spark alone"
    assert running.reason.endswith("v1 runs on Spark 4.0.1; its next start will use Spark 4.3.0")
    assert plan(CONFIG, "4.3.0", "4.3.0").reason.endswith("restart from it"), "no note"


def test_the_version_a_run_reports_is_recorded_with_its_manifest():
    store, target, state, executor = fake_world(on_submit=None)

    def reports(submission):
        state.files[submission.status_file] = json.dumps(
            {"run-id": submission.run_id, "state": "active", "spark-version": "4.2.1"}
        )

    target.on_submit = reports
    results = executor.apply(build_plan(gather([BASE], store, target, state, workers=1)))
    assert results["orders"].ok
    assert store.manifests["orders"].meta.spark_version == "4.2.1"
    assert store.manifests["orders"].to_dict()["meta"]["spark-version"] == "4.2.1"


def test_versions_compare_as_numbers():
    assert version_tuple("3.5.1-amzn-0") == (3, 5, 1) and version_tuple("4.10") == (4, 10, 0)
    assert is_older("4.9.0", "4.10.0") and not is_older("4.10.0", "4.9.0")
    assert not is_older(None, "4.0.0") and version_tuple("next") is None


def test_the_plan_says_what_a_new_spark_means(tmp_path: Path):
    """The local target's Spark is the installed one; the store says v1 last ran on 3.5.9."""
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs

    state = tmp_path / "state"
    jobs = load_jobs(
        [REPO / "examples" / "queries"], None, load_catalog([REPO / "examples" / "tables"]), state
    )
    tick = next(job for job in jobs if job.name == "tick-log")
    store = LocalStore(state / "manifests")
    store.write(StoredManifest(tick.spec, tick.tables, Meta(1, "id-1", "2026-01-01T00:00:00Z",
                                                             "3.5.9")), None)  # fmt: skip
    checkpoint = state / "checkpoints" / "tick-log" / "1"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id": "x"}')
    (checkpoint / "offsets" / "0").write_text("v1\n{}\n{}")
    result = run_cli(
        "plan", "--path", str(REPO / "examples" / "queries" / "tick-log.yaml"),
        "--table-definition-path", str(REPO / "examples" / "tables"), "--state-dir", str(state),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    import pyspark

    assert (
        f"not running; restart from checkpoint (no batch committed yet); Spark 3.5.9 -> "
        f"{pyspark.__version__}: the newer Spark restores v1's checkpoint; across major "
        "versions, see Spark's migration guide for stateful queries"
    ) in result.stdout
