"""A saved plan against a store on S3 (moto's server on 127.0.0.1): another run's deploy since
the plan (a config change of the same job, same version) changed what the store holds, and
`deploy --plan` refuses the whole plan, under the store's lock, before anything is touched; the
plan made again is carried out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.act.saved_plan import StalePlan
from flink_sql_runner.stores.s3 import S3Store
from tests.support.saved_plans import PlanWorld

pytestmark = pytest.mark.s3


def test_a_plan_made_stale_by_another_deploy_on_s3_is_refused(
    tmp_path: Path, s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PlanWorld.names:
        monkeypatch.setenv(f"{name.upper()}_MAX_FILES", "10")
    world = PlanWorld(tmp_path, store=S3Store(s3_bucket, "jobs/", s3_client))
    _, results = world.deploy()
    assert all(r.ok for r in results.values()), results
    world.write_job("orders", description="reworded")
    world.save()

    other = S3Store(s3_bucket, "jobs/", s3_client)  # another run's deployer
    stored = other.read("orders")
    assert stored.manifest is not None
    job = {**stored.manifest.job, "description": "deployed by another run"}
    other.write(replace(stored.manifest, job=job), stored.token)

    before = world.touched()
    with pytest.raises(StalePlan) as refused:
        world.deploy_saved()
    assert refused.value.lines == [
        "store: orders was recorded again with other content since the plan (v1)"
    ]
    assert world.touched() == before, "nothing touched, the lock released"

    world.save()  # planned again, from what is
    plan, results = world.deploy_saved()
    assert results["orders"].ok, results
    assert world.description("orders") == "reworded" and world.version("orders") == 1
