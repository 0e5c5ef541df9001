"""A job deployed before paths were resolved at load holds its relative paths in the store;
the same paths, now loaded absolute from the same folder, are no change: no restart, no new
version, no schema check. Its next start records them absolute."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import Record
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.schemas import changes_output
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import Job, load_jobs
from flink_sql_runner.watch.status import status_rows
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget

TABLES = {
    "tables": [
        {"name": "orders", "format": "json", "options": {"path": "data/orders"},
         "schema": "id BIGINT"},
        {"name": "out", "format": "parquet", "options": {"path": "out/orders"}},
    ]
}  # fmt: skip


@pytest.fixture
def desired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Job:
    """The job as the loader gives it, run from the project's folder."""
    (tmp_path / "data" / "orders").mkdir(parents=True)
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(TABLES))
    (tmp_path / "copy.yaml").write_text(
        yaml.safe_dump({"name": "copy", "target-table": "out", "sql": "SELECT id FROM orders"})
    )
    template = tmp_path / "template.yaml"
    template.write_text(yaml.safe_dump({"checkpoint-root": "ckpt"}))
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog([Path("tables.yaml")])
    (job,) = load_jobs([Path("copy.yaml")], template, catalog, Path("state"))
    assert job.spec["checkpoint-root"] == f"{tmp_path}/ckpt"
    return job


def as_deployed_before(job: Job) -> StoredManifest:
    """The manifest an earlier deploy stored: the paths as written."""
    spec, tables = copy.deepcopy(job.spec), copy.deepcopy(job.tables)
    spec["checkpoint-root"] = "ckpt"
    tables["orders"]["options"]["path"] = "data/orders"
    tables["out"]["options"]["path"] = "out/orders"
    return StoredManifest(spec, tables, Meta(1, "id-1", "2026-01-01T00:00:00Z"))


def decide(desired: Job, stored: StoredManifest, running: bool):
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored)
    if running:
        target.add_run(Run("copy", 1, "run-1", "pid 42"))
    # The checkpoint where the store says it is (relative to the folder the test runs in).
    storage.add_checkpoint(f"{desired.base}/ckpt/copy/1", 3)
    storage.add_checkpoint("ckpt/copy/1", 3)
    (facts,) = gather([desired], store, target, storage, workers=1)
    return facts, build_plan([facts]).decisions[0]


def test_a_stored_relative_path_is_no_change_from_its_resolution(desired: Job):
    facts, decision = decide(desired, as_deployed_before(desired), running=True)
    assert decision.action is Action.NOOP, decision.reason
    assert decision.changes == ()
    assert not changes_output(facts)


def test_its_next_start_records_the_paths_absolute(desired: Job):
    facts, decision = decide(desired, as_deployed_before(desired), running=False)
    assert decision.action is Action.RESTART, decision.reason
    assert decision.changes == ()
    (record,) = [s for s in decision.steps if isinstance(s, Record)]
    assert record.manifest.tables["orders"]["options"]["path"] == f"{desired.base}/data/orders"
    assert record.manifest.job["checkpoint-root"] == f"{desired.base}/ckpt"


def test_a_stored_relative_path_elsewhere_is_a_change(desired: Job):
    stored = as_deployed_before(desired)
    stored.tables["orders"]["options"]["path"] = "other/orders"
    _, decision = decide(desired, stored, running=True)
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert [c.field for c in decision.changes] == ["tables.orders.options.path"]
    assert decision.changes[0].old == f"{desired.base}/other/orders"


def test_status_shows_it_in_sync_with_git(desired: Job):
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(as_deployed_before(desired))
    target.add_run(Run("copy", 1, "run-1", "pid 42"))
    deployment = Deployment(Settings(), store=store, target=target)
    deployment.storage = storage
    (row,) = status_rows(deployment, [desired])
    assert row["drift"] == "in sync"
