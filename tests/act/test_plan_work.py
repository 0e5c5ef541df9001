"""What one `plan` does per job, counted: the lineage is built once, every job is decided once
(its sink's contract gathered before, with the other facts), the probe is asked once, and new
jobs into empty sinks cost their contract check one look at the sink each, no runtime
manifest."""

from __future__ import annotations

from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide import plan as plan_module
from flink_sql_runner.decide import tree as tree_module
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.gather import schemas as schemas_module
from flink_sql_runner.model import lineage as lineage_module
from tests.support.graphs import pipeline_job
from tests.support.jobs import fake_world, probe


def deployment_on_fakes() -> tuple[Deployment, Any]:
    store, target, storage, _ = fake_world()
    deployment = Deployment(Settings(), store=store, target=target)
    deployment.storage, deployment.schema_cache, deployment.ask_spark = storage, None, probe
    return deployment, storage


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    real, calls = getattr(module, name), [0]

    def count(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, count)
    return calls


def test_the_lineage_is_built_once_and_every_job_decided_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, storage = deployment_on_fakes()
    storage.files["/data/a/part-0.parquet"] = "PAR1"  # a new job into a sink with files
    jobs = [pipeline_job("a", "/in", "/data/a"), pipeline_job("b", "/data/a", "/data/b")]
    builds = counted(monkeypatch, lineage_module, "build_lineage")
    decided = counted(monkeypatch, plan_module, "decide")  # each job's tree, per plan
    plan = deployment.plan(jobs)
    assert decided[0] == len(jobs), "decided once: the contract was gathered before"
    assert builds[0] == 1
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["a"].schema is not None and by_name["a"].schema.readers == ("b",)
    assert by_name["b"].action is Action.START_CLEAN


def test_a_contract_is_judged_in_the_one_pass_that_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 40: the sink's contract is a gathered fact, so the plan is decided in one pass:
    the probe is asked once, before the tree runs, and the tree's own decision carries the
    verdict (here a type change, refused: nothing is stopped or started)."""
    from flink_sql_runner.model.runs import Run
    from tests.support.jobs import BASE, stored_of

    store, target, storage, _ = fake_world()
    tables = {**BASE.tables, "out": {"format": "parquet", "options": {"path": "/out/o"}}}
    stored = stored_of(BASE, 1)
    store.put(type(stored)(stored.job, tables, stored.meta))
    target.add_run(Run("orders", 1, "run-1", "pid 1"))
    storage.add_checkpoint("/ckpt/orders/1", 3)
    storage.files["/out/o/part-0.parquet"] = "PAR1"
    changed = type(BASE)({**BASE.spec, "sql": "SELECT CAST(id AS STRING) AS id FROM src"},
                         tables, BASE.source_tables, BASE.file)  # fmt: skip
    order: list[str] = []

    def retyping(request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        order.append("probe")
        answers, _ = probe(request)
        retyped = [{"name": "id", "type": "string", "nullable": True}]
        return {**answers, "jobs": {j["key"]: {"fields": retyped} for j in request["jobs"]}}, None

    real = tree_module.decide

    def deciding(*args: Any, **kwargs: Any) -> Any:
        order.append("decide")
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_module, "decide", deciding)
    deployment = Deployment(Settings(), store=store, target=target)
    deployment.storage, deployment.schema_cache, deployment.ask_spark = storage, None, retyping
    (decision,) = deployment.plan([changed]).decisions
    assert order == ["probe", "decide"], "gathered, then decided once"
    assert decision.action is Action.REFUSED and decision.steps == ()
    assert decision.schema is not None and decision.schema.verdict == "breaking"


def test_new_jobs_into_empty_sinks_build_no_runtime_manifest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, storage = deployment_on_fakes()
    jobs = [pipeline_job(f"j{i:03d}", "/in", f"/data/j{i:03d}") for i in range(50)]
    storage.files["/data/j007/part-0.parquet"] = "PAR1"
    built = counted(monkeypatch, schemas_module, "probe_manifest")
    looks = counted(monkeypatch, type(storage), "is_empty")
    lineages = counted(monkeypatch, lineage_module, "_Writers")
    plan = deployment.plan(jobs)
    assert built[0] == 1, "only the job whose sink holds files is analysed"
    assert looks[0] == len(jobs) + 1  # its sink is looked at again by the full check
    assert lineages[0] == 1
    schemas = {d.name: d.schema for d in plan.decisions if d.schema is not None}
    assert list(schemas) == ["j007"]


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "no-cache"])
def test_sql_is_tokenised_once_per_text_and_not_again_by_the_next_plan(
    cache: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query change compares the stored and desired SQL by fingerprint: each text is
    tokenised once, and the next plan (its state folder kept) tokenises neither again; with
    --no-cache every plan tokenises them, and nothing is written."""
    from flink_sql_runner.model.runs import Run
    from flink_sql_runner.read import sqlinfo
    from tests.support.jobs import BASE, stored_of

    state = tmp_path / "state"
    state.mkdir()
    store, target, storage, _ = fake_world()
    desired = []
    for n in range(3):
        name = f"orders{n}"
        tables = {**BASE.tables, "out": {"format": "parquet", "options": {"path": f"/out/{n}"}}}
        stored = stored_of(BASE, 1)
        store.put(type(stored)({**stored.job, "name": name}, tables, stored.meta))
        target.add_run(Run(name, 1, f"run-{n}", f"pid {n}"))
        storage.add_checkpoint(f"/ckpt/{name}/1", 3)
        sql = f"SELECT id, ts FROM src WHERE id > {100 + n}"
        desired.append(type(BASE)({**BASE.spec, "name": name, "sql": sql}, tables,
                                  BASE.source_tables, BASE.file))  # fmt: skip
    tokenised = counted(monkeypatch, sqlinfo, "_fingerprint")
    plans = []
    for _ in range(2):
        deployment = Deployment(Settings(state_dir=state, cache=cache), store=store, target=target)
        deployment.storage, deployment.schema_cache, deployment.ask_spark = storage, None, probe
        plans.append([d.to_dict() for d in deployment.plan(desired).decisions])
    assert plans[0] == plans[1], plans[0][0]["reason"]
    assert {d["action"] for d in plans[0]} == {Action.STOP_AND_START_CLEAN.value}, plans[0][0][
        "reason"
    ]
    # One stored SQL for all three, three desired ones; each once, or each once per plan.
    assert tokenised[0] == (4 if cache else 8)
    assert (state / "cache" / "fingerprints.json").exists() is cache


@pytest.mark.parametrize(
    "change, action, verdict",
    [
        (
            {"sql": "SELECT id, ts FROM src WHERE id > 7"},
            Action.STOP_AND_START_CLEAN,
            "new-location",
        ),
        ({"metadata-columns": {"enabled": False}}, Action.STOP_AND_RESTART, "same"),
    ],
    ids=["query: a new version, a new place", "config: the same version, the same place"],
)
def test_a_sink_whose_place_follows_the_version_is_judged_where_the_start_writes(
    change: dict[str, Any], action: Action, verdict: str
) -> None:
    """`{query_version}` in the sink's path: which version the start takes is decided, not
    gathered, so the sink's facts are gathered for both (the stored version's place holds
    files, the next one's nothing), the query analysed once, and the tree judges the place its
    own start writes."""
    from flink_sql_runner.model.runs import Run
    from tests.support.jobs import BASE, stored_of

    store, target, storage, _ = fake_world()
    tables = {
        **BASE.tables,
        "out": {"format": "parquet", "options": {"path": "/o/v{query_version}"}},
    }
    stored = stored_of(BASE, 1)
    store.put(type(stored)(stored.job, tables, stored.meta))
    target.add_run(Run("orders", 1, "run-1", "pid 1"))
    storage.add_checkpoint("/ckpt/orders/1", 3)
    storage.files["/o/v1/part-0.parquet"] = "PAR1"
    requests: list[dict[str, Any]] = []

    def asked(request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        requests.append(request)
        return probe(request)

    deployment = Deployment(Settings(), store=store, target=target)
    deployment.storage, deployment.schema_cache, deployment.ask_spark = storage, None, asked
    desired = type(BASE)({**BASE.spec, **change}, tables, BASE.source_tables, BASE.file)
    (decision,) = deployment.plan([desired]).decisions
    assert decision.action is action, decision.reason
    assert decision.schema is not None and decision.schema.verdict == verdict
    assert decision.schema.sink == f"/o/v{decision.version}"
    assert len(requests) == 1 and len(requests[0]["jobs"]) == 1
    assert [s["path"] for s in requests[0]["sinks"]] == ["/o/v1"]
