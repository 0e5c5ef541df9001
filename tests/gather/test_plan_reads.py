"""What a plan reads, counted: the checkpoint of a job whose run is alive is not inspected for
what its decision does not use (its metadata and commits), and the decision is the same as
with everything read; a job folder without `_control` is not listed for it; the store is
looked at once per plan, while the files are read, and what fails there is reported after
what is wrong with the inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.errors import InvalidInput, StoreError
from flink_sql_runner.gather.checkpoints import highest_version
from flink_sql_runner.stores.base import Snapshot
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import ROOT


class CountingStorage(FakeStorage):
    """FakeStorage that remembers every read and listing, by location."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []
        self.listed: list[str] = []

    def read_bytes(self, location: str) -> bytes | None:
        self.reads.append(location)
        return super().read_bytes(location)

    def file_names(self, folder: str) -> list[str]:
        self.listed.append(folder)
        return super().file_names(folder)

    def dir_names(self, folder: str) -> list[str]:
        self.listed.append(folder)
        return super().dir_names(folder)


def test_no_control_folder_is_not_listed() -> None:
    storage = CountingStorage()
    storage.add_checkpoint(f"{ROOT}/orders/3")
    assert highest_version(storage, f"{ROOT}/orders") == 3
    assert storage.listed == [f"{ROOT}/orders"]
    storage.files[f"{ROOT}/orders/_control/v5.status.json"] = "{}"
    assert highest_version(storage, f"{ROOT}/orders") == 5, "a version begun is counted"


# -- the store, read while the files are -------------------------------------------------------


class CountingStore(FakeStore):
    def __init__(self) -> None:
        super().__init__()
        self.snapshots = 0

    def snapshot(self) -> Snapshot:
        self.snapshots += 1
        return super().snapshot()


def workspace(tmp_path: Path, sql: str = "SELECT timestamp, value FROM src") -> Settings:
    (tmp_path / "jobs").mkdir(parents=True)
    (tmp_path / "jobs" / "orders.yaml").write_text(f"name: orders\ntarget-table: out\nsql: {sql}\n")
    (tmp_path / "tables.yaml").write_text(
        "tables:\n"
        "  - {name: src, format: rate}\n"
        f"  - {{name: out, format: parquet, options: {{path: '{tmp_path}/out'}}}}\n"
    )
    return Settings([tmp_path / "jobs"], [tmp_path / "tables.yaml"], state_dir=tmp_path / "st")


def test_a_plan_reads_the_store_once_while_it_reads_the_files(tmp_path: Path) -> None:
    store, target = CountingStore(), FakeTarget()
    deployment = Deployment(workspace(tmp_path), store=store, target=target)
    deployment.storage = FakeStorage()
    with deployment.reading_ahead():
        jobs = deployment.load()
        plan = deployment.plan(jobs)
    assert store.snapshots == 1
    assert [d.action for d in plan.decisions] == [Action.START_CLEAN]
    # Without reading ahead (deploy, which reads the store under its lock) it reads it itself.
    deployment.plan(jobs)
    assert store.snapshots == 2


def test_invalid_inputs_are_reported_before_a_store_that_fails(tmp_path: Path) -> None:
    store, target = FakeStore(), FakeTarget()
    store.fail_reads = True
    deployment = Deployment(workspace(tmp_path, sql="'"), store=store, target=target)
    with pytest.raises(InvalidInput), deployment.reading_ahead():
        deployment.plan(deployment.load())
    deployment = Deployment(workspace(tmp_path / "valid"), store=store, target=target)
    with pytest.raises(StoreError), deployment.reading_ahead():
        deployment.plan(deployment.load())
