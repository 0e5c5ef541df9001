"""A world for saved plans (`plan --out`, `deploy --plan`): job, table and template files in a
temp folder, read by the real loader; the store, the cluster and checkpoint storage on fakes (or
the store on moto's S3), the executor's waits on a fake clock. Each command makes its own
`Deployment`, as the command line does."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.results import JobResult
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.saved_plan import (
    SavedPlan,
    StalePlan,
    read_saved_plan,
    write_saved_plan,
)
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.model.preview import Preview
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.plan import plan_dict, shown_keys
from flink_sql_runner.stores.base import ManifestStore
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import FakeRunner, probe

RELEASE = "0.1.0"
SQL = "SELECT id, ts FROM {name}_in"
TEMPLATE = """\
desired-state: running
checkpoint-root: /ckpt
sparkProperties:
  spark.sql.shuffle.partitions: "4"
"""
TABLES = """\
tables:
{entries}"""
TABLE = """\
  - name: {name}_in
    format: json
    schema: "id BIGINT, ts TIMESTAMP"
    options:
      path: /in/{name}
      maxFilesPerTrigger: "${{{name_upper}_MAX_FILES}}"
  - name: {name}_out
    format: parquet
    options:
      path: /out/{name}
"""


class PlanWorld:
    """Jobs `orders` and `clicks` in files under `root`, each reading its own folder through
    an environment value (`${ORDERS_MAX_FILES}`), writing its own sink."""

    names = ("orders", "clicks")

    def __init__(self, root: Path, store: ManifestStore | None = None) -> None:
        self.root = root
        self.queries, self.tables = root / "queries", root / "tables"
        self.queries.mkdir(parents=True)
        self.tables.mkdir()
        self.template = root / "template.yaml"
        self.template.write_text(TEMPLATE)
        for name in self.names:
            self.write_job(name)
        self.tables_file.write_text(
            TABLES.format(
                entries="".join(TABLE.format(name=n, name_upper=n.upper()) for n in self.names)
            )
        )
        self.store = store if store is not None else FakeStore()
        self.target, self.storage = FakeTarget(spark="4.3.0"), FakeStorage()
        # A run that begins to write leaves a checkpoint, as Spark does.
        self.runner = FakeRunner(
            self.storage,
            self.target,
            on_start=lambda sub: self.storage.add_checkpoint(f"/ckpt/{sub.name}/{sub.version}"),
        )
        self.clock = FakeClock()
        self.plan_file = root / "plan.json"
        self.handover = "warm"  # each command's --handover
        self.on_state_change: str | None = None  # each command's --on-state-change
        self.master: str | None = None  # each command's --master
        self.ask = probe  # the runner's probe, as gather/schemas.py asks it

    @property
    def tables_file(self) -> Path:
        return self.tables / "tables.yaml"

    def job_file(self, name: str) -> Path:
        return self.queries / f"{name}.yaml"

    def write_job(self, name: str, description: str = "as first written", sql: str = SQL) -> None:
        self.job_file(name).write_text(
            f"name: {name}\ndescription: {description}\ntarget-table: {name}_out\n"
            f"sql: {sql.format(name=name)}\n"
        )

    def deployment(self) -> Deployment:
        settings = Settings(
            paths=[self.queries],
            table_paths=[self.tables],
            template=self.template,
            state_dir=self.root / "state",
            timeouts=Timeouts(start=30, stop=5, poll=1),
            cache=False,
            handover=self.handover,
            on_state_change=self.on_state_change,
            master=self.master,
        )
        deployment = Deployment(settings, store=self.store, target=self.target)
        deployment.storage, deployment.schema_cache, deployment.ask_spark = (
            self.storage,
            None,
            self.ask,
        )
        original = deployment.executor

        def executor(lease=None, command="deploy"):
            made = original(lease, command)
            made.clock, made.sleep = self.clock, self.clock.sleep
            made.runs.clock, made.runs.sleep = self.clock, self.clock.sleep
            return made

        deployment.executor = executor  # type: ignore[method-assign]
        return deployment

    def deploy(self) -> tuple[Plan, dict[str, JobResult]]:
        """A deploy as `deploy` makes it: decided now, carried out."""
        deployment = self.deployment()
        return deployment.deploy(
            deployment.load(), include_orphans=True, prune=False, on_plan=lambda _: None
        )

    def save(self, key: bytes | None = None, prune: bool = False) -> SavedPlan:
        """`plan --out` (`--prune`; signed with the plan `key`): the plan decided now, saved,
        and read back as `deploy --plan` reads it."""
        deployment = self.deployment()
        jobs = deployment.load()
        plan = deployment.plan(jobs, prune=prune, read_only=True)
        doc = self.saved_doc(deployment, plan, jobs, prune=prune, key=key)
        write_saved_plan(self.plan_file, doc)
        return self.read(key=key)

    def saved_doc(
        self,
        deployment: Deployment,
        plan: Plan,
        jobs: list[Job],
        previews: list[Preview] | None = None,
        rows: bool = False,
        prune: bool = False,
        key: bytes | None = None,
    ) -> dict[str, Any]:
        """The saved plan's document of `plan`, as `plan --out plan.json` makes it: with the
        lineage of `jobs` and the `previews` (with `--preview`) its Markdown shows."""
        keys = shown_keys(build_lineage(jobs, catalog=deployment.catalog()), previews, rows)
        return deployment.saved_plan(
            plan, {**plan_dict(plan), **keys}, jobs, RELEASE, prune=prune, key=key,
            saved_as=self.plan_file.name,
        )  # fmt: skip

    def read(
        self,
        now: float | None = None,
        max_age: float = 7 * 86400.0,
        key: bytes | None = None,
        expect_digest: str | None = None,
    ) -> SavedPlan:
        now = time.time() if now is None else now
        return read_saved_plan(
            self.plan_file,
            deployer=RELEASE,
            now=now,
            max_age=max_age,
            key=key,
            expect_digest=expect_digest,
        )

    def deploy_saved(
        self, saved: SavedPlan | None = None, acting: list[str] | None = None
    ) -> tuple[Plan, dict[str, JobResult]]:
        """`deploy --plan` (`deploy-job --plan FILE NAME` with `acting`): its inputs checked
        before the lock, the store and the decisions under it; StalePlan when stale."""
        saved = saved or self.read()
        if acting is not None:
            (name,) = acting
            assert saved.one_job(name), f"the plan leaves {name} alone"
        deployment = self.deployment()
        deployment.follow(saved)
        jobs = deployment.load()
        lines = deployment.stale_inputs(saved, jobs, acting)
        if lines:
            raise StalePlan(saved.path, lines)
        return deployment.deploy(
            jobs,
            include_orphans=True,
            prune=bool(saved.doc["prune"]),
            on_plan=lambda _: None,
            saved=saved,
            acting=acting,
        )

    def touched(self) -> dict[str, Any]:
        """What a command could have changed: every stored manifest and side document with its
        token, what was submitted and stopped, and who holds the lock."""
        names = self.store.list_names()
        return {
            "manifests": {n: self.store.read(n).token for n in names},
            "intents": self.store.read_side_folder("_intents"),
            "submitted": [s.run_id for s in self.target.submissions],
            "stopped": list(self.target.stops),
            "lock": json.dumps(self.store.lock_backend().read(), default=str),
        }

    def description(self, name: str) -> str:
        stored = self.store.read(name).manifest
        assert stored is not None
        return str(stored.job["description"])

    def version(self, name: str) -> int:
        stored = self.store.read(name).manifest
        assert stored is not None
        return stored.meta.query_version
