"""Jobs as `status` and the page read them, on an S3 store and S3 checkpoints (moto's server):
each job's manifest, a status file, a status beacon, a checkpoint that committed batch 3 and a
watch record; the store's index as deploys keep it; a fake target listing each job's run, alive
or gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import ABSENT
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.stores.storage import FileStorage
from flink_sql_runner.watch.records import WatchLog, WatchRecord, manifest_digest
from tests.support.fakes import FakeTarget, write_beacon
from tests.support.jobs import make_job, stored_of


def status_world(
    client: Any, bucket: str, tmp_path: Path, jobs: int, alive: bool
) -> tuple[Deployment, FakeTarget]:
    """`jobs` jobs (job0000, ...) on an S3 store, their checkpoints under `s3://<bucket>/ckpt`,
    each with a status file (batch 3), a beacon, a checkpoint that committed batch 3 and a
    watch record (one restart); their runs alive, or gone."""
    store, storage, target = S3Store(bucket, "store/", client), FileStorage(client), FakeTarget()
    root = f"s3://{bucket}/ckpt"
    for i in range(jobs):
        name = f"job{i:04d}"
        sink = {"format": "parquet", "options": {"path": f"/out/{name}"}}  # one writer each
        stored = stored_of(make_job(name=name, tables={"out": sink}, **{"checkpoint-root": root}))
        store.write(stored, ABSENT)
        state = "active" if alive else "stopped"
        status = {"run-id": "run-0", "state": state, "heartbeat": 1,
                  "last-batch": {"id": 3, "num-input-rows": 10}}  # fmt: skip
        storage.write_text(f"{root}/{name}/_control/v1.status.json", json.dumps(status))
        write_beacon(storage, root, name, 1, "run-0", state=state)
        storage.write_text(f"{root}/{name}/1/commits/3", "v1\n{}")
        WatchLog(store).write(WatchRecord(name, manifest_digest(stored), restarts=1))
        liveness = Liveness.ALIVE if alive else Liveness.GONE
        target.add_run(Run(name, 1, "run-0", "pid 1", liveness=liveness))
    store.refresh_index()  # as deploys keep it
    (tmp_path / "state").mkdir()
    deployment = Deployment(Settings(state_dir=tmp_path / "state"), store=store, target=target)
    deployment.storage = storage
    return deployment, target
