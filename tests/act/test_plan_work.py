"""What one `plan` does per job, counted: the lineage is built once however often the plan is
decided (once more after a sink's contract was gathered), and new jobs into empty sinks cost
their contract check one look at the sink each, no runtime manifest."""

from __future__ import annotations

from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.decide import plan as plan_module
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.gather import schemas as schemas_module
from flink_sql_runner.model import lineage as lineage_module
from tests.support.graphs import pipeline_job
from tests.support.jobs import fake_world

FIELDS = [{"name": "id", "type": "bigint", "nullable": True}]


def probe(request: dict[str, Any]) -> tuple[dict[str, Any], None]:
    """Plays the runner's probe: every query writes `id`, every sink holds `id`."""
    return {
        "spark": "4.3.0",
        "jobs": {j["key"]: {"fields": FIELDS} for j in request["jobs"]},
        "sinks": {
            s["key"]: {"history": [{"fields": FIELDS, "from": "v1"}]} for s in request["sinks"]
        },  # fmt: skip
        "ddl": {},
    }, None


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


def test_the_lineage_is_built_once_though_the_plan_is_decided_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, storage = deployment_on_fakes()
    storage.files["/data/a/part-0.parquet"] = "PAR1"  # a new job into a sink with files
    jobs = [pipeline_job("a", "/in", "/data/a"), pipeline_job("b", "/data/a", "/data/b")]
    builds = counted(monkeypatch, lineage_module, "build_lineage")
    decided = counted(monkeypatch, plan_module, "decide")  # each job's tree, per plan
    plan = deployment.plan(jobs)
    assert decided[0] == 2 * len(jobs), "decided twice: after the contract was gathered"
    assert builds[0] == 1
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["a"].schema is not None and by_name["a"].schema.readers == ("b",)
    assert by_name["b"].action is Action.START_CLEAN


def test_new_jobs_into_empty_sinks_build_no_runtime_manifest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, storage = deployment_on_fakes()
    jobs = [pipeline_job(f"j{i:03d}", "/in", f"/data/j{i:03d}") for i in range(50)]
    storage.files["/data/j007/part-0.parquet"] = "PAR1"
    built = counted(monkeypatch, schemas_module, "runtime_manifest")
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
