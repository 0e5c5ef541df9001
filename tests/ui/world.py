"""A store the page tests read: a real local store and checkpoint folder in a temp dir, the
target a fake whose runs the test sets."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import ABSENT
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.ui.fleet import Fleet
from flink_sql_runner.ui.pages import Pages
from flink_sql_runner.watch.records import Failure, WatchLog, WatchRecord, manifest_digest
from tests.support.fakes import FakeTarget, write_beacon
from tests.support.jobs import make_job, stored_of


class PageWorld:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = str(tmp / "ckpt")
        self.target = FakeTarget()
        self.state = tmp / "state"
        self.state.mkdir()
        self.store = LocalStore(self.state / "manifests")
        self.deployment = Deployment(
            Settings(state_dir=self.state), store=self.store, target=self.target
        )

    def job(self, name: str, alive: bool = True, **spec: Any) -> None:
        """A stored job writing `<tmp>/out/<name>`, its run alive (or gone) with a status file
        that reports batch 7 and its beacon."""
        sink = {"format": "parquet", "options": {"path": str(self.tmp / "out" / name)}}
        tables = {"out": sink, **spec.pop("tables", {})}
        job = make_job(name=name, tables=tables, **{"checkpoint-root": self.root, **spec})
        self.store.write(stored_of(job), ABSENT)
        state = "active" if alive else "stopped"
        status = {"run-id": f"run-{name}", "state": state, "heartbeat": 1,
                  "updated": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "last-batch": {"id": 7, "timestamp": "2026-11-29T10:00:00.000Z",
                                 "input-rows-per-second": 12.5, "processed-rows-per-second": 20.0,
                                 "offsets-behind-latest": 5000}}  # fmt: skip
        control = Path(self.root) / name / "_control"
        control.mkdir(parents=True, exist_ok=True)
        (control / "v1.status.json").write_text(json.dumps(status))
        write_beacon(self.deployment.storage, self.root, name, 1, f"run-{name}", state=state)
        live = Liveness.ALIVE if alive else Liveness.GONE
        self.target.add_run(Run(name, 1, f"run-{name}", "pid 1", liveness=live))

    def watched(
        self,
        name: str,
        restarts: int,
        state: str,
        failure: str | None = None,
        looping: bool = False,
    ) -> None:
        """`watch`'s record of the stored job: `restarts` just now, its `state`, the last
        failure's reason, crash-looping or not."""
        stored = self.store.read(name).manifest
        assert stored is not None
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = WatchRecord(
            name,
            manifest_digest(stored),
            failures=(Failure(now, failure),) if failure else (),
            restarts=restarts,
            restarted=(now,),
            consecutive=restarts if looping else 0,
            crash_looping=looping,
            state=state,
            updated=now,
        )
        WatchLog(self.store).write(record)

    def pages(self, **kw: Any) -> Pages:
        return Pages(self.deployment, fleet=Fleet(self.deployment, reuse_for=0.0), **kw)
