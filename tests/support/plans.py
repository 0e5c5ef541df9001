"""Plans of many kinds, made by the real decision code on fakes, for what renders them (the
pull request's Markdown, and the same Markdown of a plan's JSON document or a saved plan):
new, unchanged, config and query changes, stops, prunes, restarts, errors, starts refused by a
sink's schema contract or for their state, jobs handing sinks to each other, the jobs
downstream of a change, previews of changed queries, and text from manifests that must not
break the Markdown."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.preview import judge_preview
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.contracts import ContractFacts, Known, Reader, SinkHolds
from flink_sql_runner.model.lineage import Lineage, build_lineage
from flink_sql_runner.model.preview import Preview, PreviewFacts, Slice, SlicePart
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.graphs import catalog, pipeline_job
from tests.support.jobs import BASE, QUERY, ROOT, SINK, fake_world, make_job, stored_of
from tests.support.stateful import decide_change, kafka_job

#: A secret a job sets: no rendering of a plan may show it.
SECRET = "s3cr3t-Value"
#: Text that would be HTML, a link or a table cell in Markdown, were it not escaped.
HOSTILE = "<script>alert(1)</script> ](javascript:alert(1)) | `x` *y* _z_ <img src=x onerror=1>"


@dataclass(frozen=True)
class PlanCase:
    """A plan and what its Markdown is rendered with: the lineage, the previews (`rows`: with
    their rows, `--preview-rows`)."""

    plan: Plan
    lineage: Lineage | None = None
    previews: tuple[Preview, ...] | None = None
    rows: bool = False
    jobs: list[Job] = field(default_factory=list)


def scenario() -> tuple[Plan, Lineage]:
    """producer's query changes (running); its consumer, and the consumer's consumer, do not;
    `tuned` changes a secret and its description; `lost` is stopped without a checkpoint;
    `fresh` is new."""
    before = {
        "producer": pipeline_job("producer", "/in", "/out/p"),
        "consumer": pipeline_job("consumer", "/out/p", "/out/c"),
        "last": pipeline_job("last", "/out/c", "/out/l"),
        "tuned": pipeline_job(
            "tuned", "/in", "/out/t", sparkProperties={"spark.x.password": SECRET}
        ),
        "lost": pipeline_job("lost", "/in", "/out/lost"),
    }
    after = dict(before)
    after["producer"] = pipeline_job(
        "producer", "/in", "/out/p", sql="SELECT id, ts\nFROM producer_in\nWHERE id > 100\n"
    )
    after["tuned"] = pipeline_job(
        "tuned",
        "/in",
        "/out/t",
        description="pipes | and `ticks` and <b>tags</b>",
        sparkProperties={"spark.x.password": SECRET + "-new"},
    )
    after["fresh"] = pipeline_job("fresh", "/in", "/out/f")
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    for name, job in before.items():
        store.put(StoredManifest(copy.deepcopy(job.spec), copy.deepcopy(job.tables), Meta.new(1)))
        if name != "lost":
            target.add_run(Run(name, 1, f"run-{name}", f"pid {len(name)}"))
            storage.add_checkpoint(f"/ckpt/{name}/1", 5)
    jobs = sorted(after.values(), key=lambda j: j.name)
    plan = build_plan(gather(jobs, store, target, storage, workers=1))
    return plan, build_lineage(jobs)


def _lifecycle(prune: bool = True) -> PlanCase:
    """A job told to stop, one restarted from its checkpoint (its run is gone), one pruned
    (its file left --path; without `prune`, orphaned), one left alone unchanged, one whose
    text from its manifest would be HTML, one whose new field is a date (YAML's), in a lineage
    with a catalog table no job uses."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    jobs = {
        "halted": pipeline_job("halted", "/in", "/out/h"),
        "revived": pipeline_job("revived", "/in", "/out/r"),
        "gone": pipeline_job("gone", "/in", "/out/g"),
        "quiet": pipeline_job("quiet", "/in", "/out/q"),
        "hostile": pipeline_job("hostile", "/in", "/out/x"),
    }
    for name, job in jobs.items():
        store.put(stored_of(job, 2))
        if name != "revived":
            target.add_run(Run(name, 2, f"run-{name}", f"pid {len(name)}0"))
        storage.add_checkpoint(f"/ckpt/{name}/2", 4)
    desired = [
        pipeline_job("halted", "/in", "/out/h", **{"desired-state": "stopped"}),
        jobs["revived"],
        jobs["quiet"],
        pipeline_job(
            "hostile", "/in", "/out/x", description=HOSTILE,
            sparkProperties={"spark.sql.shuffle.partitions": "4", "spark.app.tag": HOSTILE},
            trigger={"processingTime": "5 seconds", "since": datetime.date(2026, 1, 2)},
        ),
    ]  # fmt: skip
    plan = build_plan(gather(desired, store, target, storage, workers=1), prune=prune)
    return PlanCase(plan, build_lineage(desired, catalog=catalog("spare")), jobs=desired)


def _contract(output: tuple[dict, ...], readers: tuple[Reader, ...] = ()) -> ContractFacts:
    v1 = ({"name": "value", "type": "bigint", "nullable": True},
          {"name": "tick_time", "type": "timestamp", "nullable": True})  # fmt: skip
    return ContractFacts(
        sink="/out", format="parquet", policy="additive", policy_from="the default",
        output=Known(output), holds=SinkHolds((v1,), ("v1 of job orders",)), spark="4.3.0",
        readers=readers,
    )  # fmt: skip


def _schema_refused() -> PlanCase:
    """A query change whose new output retypes a column, adds a NOT NULL one and renames
    another, read by a job that declares the old type: refused by the sink's contract."""
    output = (
        {"name": "value", "type": "string", "nullable": True},
        {"name": "tick_time", "type": "timestamp", "nullable": True},
        {"name": "tag", "type": "string", "nullable": False},
    )
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE))
    target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage.add_checkpoint(f"{ROOT}/orders/1", 3)
    facts = gather([QUERY], store, target, storage, workers=1)
    contract = _contract(output, (Reader("audit", "raw"),))
    plan = build_plan([replace(x, contracts=(contract,)) for x in facts])
    return PlanCase(plan, build_lineage([QUERY]))


def _schema_additive() -> PlanCase:
    """A query change that adds a column its sink's readers can take: said, not refused."""
    output = (
        {"name": "value", "type": "bigint", "nullable": True},
        {"name": "tick_time", "type": "timestamp", "nullable": True},
        {"name": "note", "type": "string", "nullable": True},
    )
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE))
    target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage.add_checkpoint(f"{ROOT}/orders/1", 3)
    facts = gather([QUERY], store, target, storage, workers=1)
    plan = build_plan([replace(x, contracts=(_contract(output),)) for x in facts])
    return PlanCase(plan, build_lineage([QUERY]))


def _state(refused: bool) -> PlanCase:
    """A stateful query change: refused for the windows it would write partial, or rebuilt."""
    if refused:
        decision = decide_change(kafka_job())
    else:
        decision = decide_change(make_job(sql="SELECT id, sum(id) AS c FROM src GROUP BY id"))
    return PlanCase(Plan((decision,)))


def _swap() -> PlanCase:
    """Two jobs that swap sinks: one starts once the other has stopped."""

    def writing(name: str, path: str) -> Job:
        return make_job(name=name, tables={"out": {**SINK, "options": {"path": path}}})

    store, target, state, _ = fake_world()
    for name, path in (("a", "/out/x"), ("b", "/out/y")):
        store.put(stored_of(writing(name, path), 1))
        target.add_run(Run(name, 1, f"old-{name}", f"pid {len(name)}"))
        state.add_checkpoint(f"{ROOT}/{name}/1", 5)
    now = [writing("a", "/out/y"), writing("b", "/out/x")]
    plan = build_plan(gather(now, store, target, state, workers=1))
    return PlanCase(plan, build_lineage(now), jobs=now)


FIELDS = [{"name": "order_id", "type": "bigint", "nullable": True},
          {"name": "note", "type": "string", "nullable": True}]  # fmt: skip


def previews() -> tuple[Preview, ...]:
    """A query change's preview with rows only the new query writes (one of them text that
    would be HTML), a key's changed rows and a secret column; one whose new query failed; one
    not run; one of Kafka offsets."""
    secret = [*FIELDS, {"name": "api_token", "type": "string", "nullable": True}]
    answer = {
        "spark": "4.3.0",
        "inputs": {"orders": 3},
        "old": {"fields": secret, "rows": [[1, "a", "tok-1"], [3, "c", "tok-3"]]},
        "new": {"fields": secret, "rows": [[1, "a", "tok-1"], [2, HOSTILE, "tok-2"],
                                           [3, "d", "tok-3"]]},
    }  # fmt: skip
    part = SlicePart("orders", "files", files=("file:///in/a.json", "file:///in/b.json"))
    shown = judge_preview(
        PreviewFacts("expensive", 1, 2, Slice(1, 3, 12, (part,)), answer, key=("order_id",)),
        rows=5,
    )
    failed = judge_preview(
        PreviewFacts(
            "broken", 3, 4, Slice(3, 0, 1, (part,)),
            {"spark": "4.3.0", "inputs": {"orders": 1}, "old": {"fields": FIELDS, "rows": []},
             "new": {"error": "[CAST_INVALID_INPUT] The value 'sk-live-1' cannot be cast. "
                              "SQLSTATE: 22018\n  at line 2"}},
        ),
        rows=5,
    )  # fmt: skip
    missing = judge_preview(
        PreviewFacts("idle", 1, 2, Slice(1, missing="version 1 has committed no batch"), {}),
        rows=5,
    )
    kafka = SlicePart(
        "src", "kafka", start={"orders": {"0": 5, "1": -2}}, end={"orders": {"0": 9, "1": 4}}
    )
    counted = judge_preview(
        PreviewFacts(
            "streamed", 2, 3, Slice(2, 4, 6, (kafka,)),
            {"spark": "4.3.0", "inputs": {"src": 4}, "old": {"fields": FIELDS, "rows": [[1, "a"]]},
             "new": {"fields": FIELDS[:1], "rows": [[1], [2]]}},
        ),
        rows=5,
    )  # fmt: skip
    return (shown, failed, missing, counted)


def _previewed(rows: bool) -> PlanCase:
    plan, lineage = scenario()
    return PlanCase(plan, lineage, previews(), rows)


def _many(count: int) -> PlanCase:
    """`count` new jobs: past GitHub's size limit, the Markdown's shorter forms."""
    jobs = [pipeline_job(f"job-{i:04d}", "/in", f"/out/{i}") for i in range(count)]
    plan = build_plan(gather(jobs, FakeStore(), FakeTarget(), FakeStorage(), workers=1))
    return PlanCase(plan, build_lineage(jobs), jobs=jobs)


def _quiet() -> PlanCase:
    """One job, running as stored: nothing to do."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    job = pipeline_job("quiet", "/in", "/out/q")
    store.put(stored_of(job, 3))
    target.add_run(Run("quiet", 3, "run-q", "pid 7"))
    plan = build_plan(gather([job], store, target, storage, workers=1))
    return PlanCase(plan, build_lineage([job]), jobs=[job])


def _scenario(lineage: bool) -> PlanCase:
    plan, found = scenario()
    return PlanCase(plan, found if lineage else None)


#: Each kind of plan, by a name for test ids.
CASES: dict[str, Callable[[], PlanCase]] = {
    "changes-downstream-lineage": lambda: _scenario(True),
    "changes-without-lineage": lambda: _scenario(False),
    "stop-restart-prune-hostile": _lifecycle,
    "orphaned": lambda: _lifecycle(prune=False),
    "schema-refused": _schema_refused,
    "schema-additive": _schema_additive,
    "state-refused": lambda: _state(True),
    "state-rebuilt": lambda: _state(False),
    "sink-swap": _swap,
    "previews-counts": lambda: _previewed(False),
    "previews-rows": lambda: _previewed(True),
    "no-jobs": lambda: PlanCase(Plan(())),
    "nothing-to-do": lambda: _quiet(),
    "shortened-400": lambda: _many(400),
    "shortened-700": lambda: _many(700),
}
