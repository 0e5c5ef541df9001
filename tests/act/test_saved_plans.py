"""Saved plans on fakes (the real loader, over files in a temp folder): `deploy --plan` carries
out exactly the saved steps, and refuses the whole plan, touching nothing, when anything it was
decided from changed: a job file, a table file, the template, an environment value a job names,
the store, the runs it was decided on, the Spark it was judged for. A job the plan leaves alone
stays alone; `watch`'s restarts never make a plan stale."""

from __future__ import annotations

import io
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from flink_sql_runner.act.saved_plan import BadSavedPlan, StalePlan, read_saved_plan, sealed
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.watch.events import Notifier
from flink_sql_runner.watch.watcher import Watcher, WatchSettings
from tests.support.jobs import probe
from tests.support.saved_plans import SQL, TABLE, PlanWorld


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlanWorld:
    """Both jobs deployed (v1, running); then `orders`' description changes (a config
    change) and `clicks`' SQL (a query change)."""
    for name in PlanWorld.names:
        monkeypatch.setenv(f"{name.upper()}_MAX_FILES", "10")
    made = PlanWorld(tmp_path)
    _, results = made.deploy()
    assert all(r.ok for r in results.values()), results
    made.write_job("orders", description="reworded")
    made.write_job("clicks", sql=SQL + " WHERE id > 0")
    return made


def actions(plan) -> dict[str, str]:
    return {d.name: d.action.value for d in plan.decisions}


def test_a_saved_plan_is_carried_out_exactly_as_saved(world: PlanWorld) -> None:
    saved = world.save()
    assert saved.acting == ["clicks", "orders"]
    plan, results = world.deploy_saved()
    assert all(r.ok for r in results.values()), results
    assert [d.to_dict()["steps"] for d in plan.decisions] == [
        d["steps"] for d in saved.doc["jobs"]
    ], "the steps carried out are the saved ones"
    assert world.description("orders") == "reworded" and world.version("orders") == 1
    assert world.version("clicks") == 2
    assert world.target.double_starts == []


def test_a_job_the_plan_leaves_alone_stays_alone_though_its_file_changed(
    world: PlanWorld,
) -> None:
    world.write_job("clicks")  # as deployed: the plan changes orders only
    saved = world.save()
    assert saved.acting == ["orders"]
    world.write_job("clicks", description="edited after the review")
    plan, results = world.deploy_saved()
    assert actions(plan) == {"clicks": "noop", "orders": "stop-and-restart-from-checkpoint"}
    assert "left alone" in plan.decisions[0].reason
    assert results["orders"].ok
    assert world.description("clicks") == "as first written", "the next plan shows it"
    assert "clicks" not in world.target.stops


def edit_job(world: PlanWorld) -> None:
    world.write_job("orders", description="edited after the review")


def edit_table(world: PlanWorld) -> None:
    text = world.tables_file.read_text()
    world.tables_file.write_text(text.replace("path: /out/orders", "path: /out/orders2"))


def edit_template(world: PlanWorld) -> None:
    world.template.write_text(world.template.read_text().replace('"4"', '"8"'))


def change_env(world: PlanWorld) -> None:
    os.environ["ORDERS_MAX_FILES"] = "20"  # the fixture's monkeypatch restores it


def deployed_by_another_run(world: PlanWorld) -> None:
    stored = world.store.read("orders")
    assert stored.manifest is not None
    meta = replace(stored.manifest.meta, query_version=2, query_id="another-run")
    world.store.write(replace(stored.manifest, meta=meta), stored.token)


def stopped_by_hand(world: PlanWorld) -> None:
    stored = world.store.read("clicks")
    assert stored.manifest is not None
    job = {**stored.manifest.job, "desired-state": "stopped"}
    world.store.write(replace(stored.manifest, job=job), stored.token)


def run_died(world: PlanWorld) -> None:
    world.target.runs.pop("orders")


def other_spark(world: PlanWorld) -> None:
    world.target.spark = "4.0.1"


STALE: list[tuple[str, Callable[[PlanWorld], None], str]] = [
    ("job-file", edit_job, "orders: {root}/queries/orders.yaml changed since the plan"),
    ("table-file", edit_table, "orders: {root}/tables/tables.yaml changed since the plan"),
    ("template", edit_template, "template: {root}/template.yaml changed since the plan"),
    ("environment", change_env, "orders: environment variable ORDERS_MAX_FILES changed since"),
    ("store", deployed_by_another_run,
     "store: orders was deployed by another run since the plan (v1 -> v2)"),
    ("store-same-version", stopped_by_hand,
     "store: clicks was recorded again with other content since the plan (v1)"),
    ("runs", run_died, "orders: deploy would now do otherwise (planned "
     "stop-and-restart-from-checkpoint: prepare v1, stop v1, start v1, record v1; now "),
    ("spark", other_spark, "spark: the target runs Spark 4.0.1, the plan was judged for 4.3.0"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "line"), [c[1:] for c in STALE], ids=[c[0] for c in STALE])
def test_a_stale_plan_is_refused_whole_and_nothing_is_touched(
    world: PlanWorld, change: Callable[[PlanWorld], None], line: str
) -> None:
    world.save()
    change(world)
    before = world.touched()
    with pytest.raises(StalePlan) as refused:
        world.deploy_saved()
    assert refused.value.exit_code == 2
    assert any(found.startswith(line.format(root=world.root)) for found in refused.value.lines), (
        refused.value.lines
    )
    assert world.touched() == before, "nothing touched, the lock released"


def test_a_deployer_killed_while_carrying_out_a_plan_leaves_it_to_a_fresh_plan(
    world: PlanWorld,
) -> None:
    """The saved plan's steps are a deploy's own: a kill leaves the same evidence (an intent
    record), which the next plain deploy settles; the saved plan is then stale."""

    class Killed(BaseException):
        pass

    def kill(manifest) -> None:
        raise Killed

    world.save()
    world.store.before_write = kill
    with pytest.raises(Killed):
        world.deploy_saved()
    world.store.before_write = None
    with pytest.raises(StalePlan) as refused:
        world.deploy_saved()
    assert any("interrupted command's record" in line for line in refused.value.lines)
    _, results = world.deploy()
    assert all(r.ok for r in results.values()), results
    assert world.store.read_side_folder("_intents") == {}
    assert world.target.double_starts == []


def watcher(world: PlanWorld) -> Watcher:
    settings = WatchSettings(interval=10, backoff_first=10, backoff_max=40, max_failures=4,
                             stall_timeout=60, leader_ttl=30)  # fmt: skip
    return Watcher(world.deployment(), settings, Notifier(io.StringIO(), "json"),
                   clock=world.clock)  # fmt: skip


@pytest.mark.parametrize("dies", ["orders", "clicks"])
def test_a_restart_by_watch_does_not_make_a_saved_plan_stale(world: PlanWorld, dies: str) -> None:
    """`watch` records the manifest of a job it restarted again (the store's token moves): the
    saved plan is decided by what decides, and stops whichever run of the version is up."""
    world.write_job("clicks")  # the plan changes orders' config only
    world.save()
    token = world.store.read(dies).token
    (old,) = world.target.runs.pop(dies)
    watching = watcher(world)
    watching.step()
    watching.settle()
    (restarted,) = world.target.runs[dies]
    assert restarted.run_id != old.run_id and restarted.version == 1
    assert world.store.read(dies).token != token, "watch recorded it again"
    plan, results = world.deploy_saved()
    assert all(r.ok for r in results.values()), results
    assert world.description("orders") == "reworded"
    assert world.target.double_starts == []


def test_a_saved_plan_is_carried_out_with_the_handover_it_was_decided_with(
    world: PlanWorld,
) -> None:
    world.handover = "cold"
    saved = world.save()
    world.handover = "warm"  # the deploy's own option: the plan's wins
    plan, results = world.deploy_saved()
    assert all(r.ok for r in results.values()), results
    steps = [[s["step"] for s in d.to_dict()["steps"]] for d in plan.decisions]
    assert steps == [[s["step"] for s in d["steps"]] for d in saved.doc["jobs"]]
    assert "prepare" not in {step for job in steps for step in job}


def test_deploy_job_carries_out_one_job_of_the_plan(world: PlanWorld) -> None:
    world.save()
    plan, results = world.deploy_saved(acting=["orders"])
    assert actions(plan) == {"clicks": "noop", "orders": Action.STOP_AND_RESTART.value}
    assert results["orders"].ok and world.version("clicks") == 1
    world.write_job("clicks", description="edited after the review")
    with pytest.raises(StalePlan, match="clicks: .*clicks.yaml changed since the plan"):
        world.deploy_saved(acting=["clicks"])


# -- the file itself --------------------------------------------------------------------------


def rewritten(world: PlanWorld, edit: Callable[[dict], None], seal: bool) -> None:
    """The plan file edited, and with `seal` its digest computed again (as anyone holding the
    file can; a signature it had is kept, as one without the key can do no better)."""
    doc = json.loads(world.plan_file.read_text())
    edit(doc)
    if seal:
        signature = doc.pop("signature", None)
        doc = sealed({k: v for k, v in doc.items() if k != "digest"})
        if signature is not None:
            doc["signature"] = signature
    world.plan_file.write_text(json.dumps(doc))


def test_an_edited_plan_is_refused_by_its_digest(world: PlanWorld) -> None:
    world.save()
    rewritten(world, lambda doc: doc["jobs"][0]["steps"].pop(), seal=False)
    with pytest.raises(BadSavedPlan, match=r"plan\.json: digest: does not match"):
        world.read()


def test_a_plan_edited_and_sealed_again_is_refused_naming_the_field(world: PlanWorld) -> None:
    world.save()
    rewritten(world, lambda doc: doc["inputs"]["orders"].pop("env"), seal=True)
    with pytest.raises(
        BadSavedPlan, match=r"plan\.json: inputs\.orders: 'env' is a required property"
    ):
        world.read()


def test_a_salt_with_a_line_break_after_it_is_refused_as_json_schema_reads_its_pattern(
    world: PlanWorld,
) -> None:
    """`^[0-9a-f]{32}$` as ECMA-262 reads it: Python's `$` also matched before a final newline."""
    world.save()
    rewritten(world, lambda doc: doc.update(salt=doc["salt"] + "\n"), seal=True)
    with pytest.raises(BadSavedPlan, match=r"plan\.json: salt: .* does not match"):
        world.read()


def test_a_plan_of_another_release_is_refused(world: PlanWorld) -> None:
    world.save()
    rewritten(world, lambda doc: doc.update(deployer="0.0.9"), seal=True)
    with pytest.raises(BadSavedPlan, match="deployer: made by flink-sql-runner 0.0.9, this is"):
        world.read()


def test_a_plan_too_old_or_dated_in_the_future_is_refused(world: PlanWorld) -> None:
    saved = world.save()
    made = saved.doc["created"]
    at = datetime.strptime(made, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    world.read(now=at + 6 * 86400)  # within a week
    with pytest.raises(BadSavedPlan, match=r"older than --max-plan-age \(7\.0 days\)"):
        world.read(now=at + 8 * 86400)
    with pytest.raises(BadSavedPlan, match=r"older than --max-plan-age \(1\.0 h\)"):
        world.read(now=at + 7200, max_age=3600)
    world.read(now=at - 60)  # a clock a minute behind: tolerated
    with pytest.raises(BadSavedPlan, match="in the future"):
        world.read(now=at - 3600)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not a saved plan (not JSON"),
        ('{"jobs": []}', "format: not a saved plan of flink-sql-runner"),
    ],
)
def test_what_is_not_a_saved_plan_is_refused_naming_the_file(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(BadSavedPlan, match=re.escape(f"{path}: {said}")):
        read_saved_plan(path, deployer="0.1.0", now=0.0, max_age=1.0)


def test_no_secret_in_a_saved_plan(world: PlanWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_MAX_FILES", "hunter2-secret-value")
    world.write_job("orders", description="reworded")
    text = world.tables_file.read_text()
    world.tables_file.write_text(
        text.replace("path: /out/orders", "path: /out/orders\n      password: pw-in-a-file")
    )
    world.save()
    saved = world.plan_file.read_text()
    assert "hunter2" not in saved and "pw-in-a-file" not in saved


KAFKA_TABLES = """\
tables:
  - name: orders_in
    format: kafka
    options:
      kafka.bootstrap.servers: b1:9092
      subscribe: orders
  - name: orders_out
    format: parquet
    options:
      path: /out/orders
"""


def test_a_saved_plan_starts_now_minus_at_the_time_it_showed(tmp_path: Path) -> None:
    """Review of issue 52, finding 11: `plan --out` shows `orders_in from now - 2 hours
    (<time>)`; `deploy --plan` carries it out three days later. Before: the time was made
    again when the deploy acted, three days after the one the reviewer approved, and nothing
    refused it. Now the plan makes the time, on the store's clock, and the saved plan keeps it."""
    world = PlanWorld(tmp_path)
    world.names = ("orders",)
    world.job_file("clicks").unlink()
    world.tables_file.write_text(KAFKA_TABLES)
    world.job_file("orders").write_text(
        "name: orders\ndescription: d\ntarget-table: orders_out\n"
        "sql: SELECT CAST(value AS STRING) AS v FROM orders_in\n"
        "kafka-start: now - 2 hours\n"
        "sparkProperties:\n"
        "  spark.jars.packages: org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0\n"
    )
    planned = float(int(time.time()))  # the store's clock, to the second, as S3's Date
    world.store.data.clock.now = planned
    saved = world.save()
    made = int(planned * 1000) - 7_200_000
    iso = datetime.fromtimestamp(made / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason = saved.decisions["orders"]["reason"]
    assert f"orders_in from now - 2 hours ({iso}) (the job's kafka-start)" in reason, reason
    assert saved.doc["store-now-ms"] == int(planned * 1000)
    world.store.data.clock.now += 3 * 86400  # carried out three days later
    _, results = world.deploy_saved(world.read(now=time.time() + 3 * 86400))
    assert results["orders"].ok, results["orders"]
    [submission] = [s for s in world.target.submissions if s.name == "orders"]
    doc = json.loads(world.storage.files[submission.runtime_manifest])
    start = doc["tables"]["orders_in"]["start"]["options"]["startingTimestamp"]
    assert start == str(made)


RATE_TABLES = """\
tables:
  - name: orders_in
    format: rate
    options:
      rowsPerSecond: "5"
  - name: orders_out
    format: parquet
    options:
      path: /out/orders
"""
WINDOWED = "SELECT count(*) AS n FROM {name}_in GROUP BY window(timestamp, '%s')"


def test_a_saved_plan_keeps_the_deploy_s_on_state_change(tmp_path: Path) -> None:
    """A windowed count on a rate source changed: refused for its state unless the deploy says
    `--on-state-change partial`; a plan saved with it is carried out with it, without the
    option given again (it is part of what the reviewer approved)."""
    from tests.support.stateful import op

    def window(doc):  # the probe's answer: the window the query counts in
        return "30 seconds" if "30 seconds" in json.dumps(doc) else "20 seconds"

    world = PlanWorld(tmp_path)
    world.names = ("orders",)
    world.job_file("clicks").unlink()
    world.tables_file.write_text(RATE_TABLES)
    world.ask = lambda request: (
        {
            **probe(request)[0],
            "state": {s["key"]: {"operators": [op(window(s))]} for s in request["state"]},
        },  # fmt: skip
        None,
    )
    world.write_job("orders", sql=WINDOWED % "20 seconds")
    _, results = world.deploy()
    assert results["orders"].ok, results["orders"]
    world.write_job("orders", sql=WINDOWED % "30 seconds")
    refused = world.save()
    assert refused.decisions["orders"]["action"] == "refused"
    assert refused.decisions["orders"]["state"]["on-state-change"] == "refuse"
    world.on_state_change = "partial"
    saved = world.save()
    assert saved.doc["on-state-change"] == "partial"
    decision = saved.decisions["orders"]
    assert decision["action"] == "stop-and-start-clean", decision["reason"]
    assert "accepted (the deploy says on-state-change: partial)" in decision["state"]["summary"]
    world.on_state_change = None  # `deploy --plan FILE` alone
    _, results = world.deploy_saved()
    assert results["orders"].ok, results["orders"]
    assert world.version("orders") == 2


# -- bound to its review (issue 54) -----------------------------------------------------------

KEY = b"a-key-only-ci-holds-0123456789"


def test_a_plan_edited_after_review_and_sealed_again_is_refused_by_the_approved_digest(
    world: PlanWorld,
) -> None:
    """Finding 1: the job file edited after the review, its inputs taken out of the plan and
    the file sealed again: the approved digest refuses it, and without it the job the plan acts
    on without inputs is stale."""
    approved = world.save().digest
    world.write_job("orders", description="not reviewed")
    rewritten(world, lambda doc: doc["inputs"].pop("orders"), seal=True)
    with pytest.raises(BadSavedPlan, match=f"is not the approved one .--expect-digest {approved}"):
        world.read(expect_digest=approved)
    before = world.touched()
    with pytest.raises(StalePlan, match="orders: deployed from .*orders.yaml now; the plan"):
        world.deploy_saved(world.read())
    assert world.touched() == before


def test_a_plan_acting_on_a_new_job_without_its_inputs_is_not_a_plan(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRESH_MAX_FILES", "10")
    with world.tables_file.open("a") as tables:
        tables.write(TABLE.format(name="fresh", name_upper="FRESH"))
    world.write_job("fresh")
    world.save()
    rewritten(world, lambda doc: doc["inputs"].pop("fresh"), seal=True)
    with pytest.raises(BadSavedPlan, match="inputs.fresh: missing: the plan acts on fresh"):
        world.read()


@pytest.mark.parametrize(
    "edit",
    [
        lambda doc: doc.update(created="2099-01-01T00:00:00Z"),
        lambda doc: doc.update({"kafka-start": "earliest"}),
        lambda doc: doc.update(handover="cold"),
    ],
    ids=["created", "kafka-start", "handover"],
)
def test_a_signed_plan_sealed_again_without_the_key_is_refused(world: PlanWorld, edit) -> None:
    world.save(key=KEY)
    rewritten(world, edit, seal=True)
    with pytest.raises(BadSavedPlan, match="signature: not made with this plan key"):
        world.read(key=KEY)

    def unsigned(doc: dict) -> None:
        doc.pop("signature", None)
        doc["keyed"] = False

    rewritten(world, unsigned, seal=True)
    with pytest.raises(BadSavedPlan, match="signature: none: the plan was not made with"):
        world.read(key=KEY)


def test_a_signed_plan_needs_the_key_and_an_unsigned_one_is_refused_by_it(
    world: PlanWorld,
) -> None:
    world.save(key=KEY)
    assert world.read(key=KEY).bound == "signed"
    with pytest.raises(BadSavedPlan, match="signed with a plan key and this deploy has none"):
        world.read()
    world.save()
    assert world.read().bound == ""
    with pytest.raises(BadSavedPlan, match="signature: none"):
        world.read(key=KEY)


@pytest.mark.parametrize("field", ["store", "jobs", "target", "salt"])
def test_a_sealed_plan_missing_a_field_is_refused_in_one_line(world: PlanWorld, field) -> None:
    world.save()
    rewritten(world, lambda doc: doc.pop(field), seal=True)
    with pytest.raises(BadSavedPlan, match=f"plan.json: .*'{field}' is a required property"):
        world.read()
    rewritten(world, lambda doc: None, seal=True)


def test_a_sealed_plan_whose_step_has_no_action_is_refused(world: PlanWorld) -> None:
    world.save()
    rewritten(world, lambda doc: doc["jobs"][0].pop("action"), seal=True)
    with pytest.raises(BadSavedPlan, match=r"jobs\.0: 'action' is a required property"):
        world.read()


def salted(salt: str, value: str) -> str:
    import hashlib

    return hashlib.sha256(salt.encode() + b"\0" + value.encode()).hexdigest()


def test_no_environment_value_can_be_guessed_from_a_plan(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 2: a secret-named value is recorded as set, never digested without the key;
    with the key every digest is keyed (a word list needs the key)."""
    monkeypatch.setenv("ORDERS_PASSWORD", "Summer2026!")
    text = world.tables_file.read_text()
    world.tables_file.write_text(
        text.replace("path: /out/orders", 'path: /out/orders\n      password: "${ORDERS_PASSWORD}"')
    )
    saved = world.save()
    env = saved.doc["inputs"]["orders"]["env"]
    assert env["ORDERS_PASSWORD"].startswith("set ")
    assert env["ORDERS_MAX_FILES"] == salted(saved.doc["salt"], "10")
    signed = world.save(key=KEY)
    found = signed.doc["inputs"]["orders"]["env"]
    assert salted(signed.doc["salt"], "Summer2026!") != found["ORDERS_PASSWORD"]
    assert salted(signed.doc["salt"], "10") != found["ORDERS_MAX_FILES"]
    monkeypatch.setenv("ORDERS_PASSWORD", "Autumn2026!")
    with pytest.raises(StalePlan, match="environment variable ORDERS_PASSWORD changed"):
        world.deploy_saved(world.read(key=KEY))


def test_a_plan_made_for_one_master_is_refused_on_another(world: PlanWorld) -> None:
    """Finding 3."""
    world.master = "spark://prod:7077"
    world.save()
    world.master = "spark://staging:7077"
    with pytest.raises(StalePlan) as refused:
        world.deploy_saved()
    assert refused.value.lines == [
        "target: master: the plan was made for spark://prod:7077, this deploy's is "
        "spark://staging:7077"
    ]
    world.master = "spark://user:pw@prod:7077"
    world.save()
    assert "pw@" not in world.plan_file.read_text()


def test_a_plan_holds_in_another_build_folder_for_jobs_without_relative_paths(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Finding 4: CI build folders differ between pipelines; only a job with relative paths
    depends on the folder."""
    import shutil

    monkeypatch.chdir(world.root)
    saved = world.save()
    assert saved.doc["inputs"]["orders"]["file"] == "queries/orders.yaml"
    assert saved.doc["inputs"]["orders"]["base"] is None
    other = tmp_path / "builds" / "1"
    for part in ("queries", "tables", "template.yaml", "plan.json"):
        source = world.root / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, other / part)
    monkeypatch.chdir(other)
    world.root, world.queries, world.tables = other, other / "queries", other / "tables"
    world.template, world.plan_file = other / "template.yaml", other / "plan.json"
    plan, results = world.deploy_saved()
    assert all(r.ok for r in results.values()), results


def pipeline(world: PlanWorld) -> None:
    """`clicks` reads what `orders` writes: a plan changing `orders` is decided against it."""
    text = world.tables_file.read_text()
    world.tables_file.write_text(
        text.replace(
            "  - name: orders_out\n    format: parquet\n",
            '  - name: orders_out\n    format: parquet\n    schema: "id BIGINT, ts TIMESTAMP"\n',
        )
    )
    world.write_job("clicks", sql="SELECT id, ts FROM orders_out")
    _, results = world.deploy()
    assert all(r.ok for r in results.values()), results
    world.write_job("orders", description="reworded again")


def test_deploy_job_checks_the_jobs_its_job_was_decided_against(world: PlanWorld) -> None:
    """Finding 5: `deploy-job --plan FILE orders` refuses what `deploy --plan` refuses: the
    store of `clicks`, which reads what `orders` writes, changed since the plan."""
    pipeline(world)
    saved = world.save()
    assert saved.acting == ["orders"] and saved.doc["against"] == {"orders": ["clicks"]}
    stopped_by_hand(world)
    for acting in (None, ["orders"]):
        with pytest.raises(StalePlan, match="store: clicks was recorded again"):
            world.deploy_saved(acting=acting)


def test_a_reviewed_plan_prunes_a_job_removed_from_git(world: PlanWorld) -> None:
    """Finding 6: `plan --prune --out` then `deploy --plan` stops and archives it."""
    world.write_job("clicks")
    world.write_job("orders")
    world.job_file("clicks").unlink()
    saved = world.save(prune=True)
    assert saved.acting == ["clicks"] and saved.decisions["clicks"]["action"] == "prune"
    plan, results = world.deploy_saved()
    assert results["clicks"].ok, results
    assert "clicks" not in world.store.list_names()
    assert "clicks" in world.target.stops


def test_deploy_job_refuses_a_job_whose_steps_are_ordered_with_another_s(
    world: PlanWorld,
) -> None:
    """Review of issue 54, findings R1 and R8: `orders` moves to a new sink and `clicks` takes
    its old one, so clicks starts only once orders stopped. `deploy-job --plan FILE clicks`
    carried out alone started clicks while orders still wrote the sink (two writers, exit 0);
    `deploy-job ... orders` first made the plan stale for clicks. Both are refused: deploy
    --plan carries them out together."""
    with world.tables_file.open("a") as tables:
        tables.write("  - name: orders_new\n    format: parquet\n    options:\n      path: /o/n\n")
    world.job_file("orders").write_text(
        "name: orders\ndescription: moved\ntarget-table: orders_new\n"
        f"sql: {SQL.format(name='orders')}\n"
    )
    world.job_file("clicks").write_text(
        "name: clicks\ndescription: takes the sink\ntarget-table: orders_out\n"
        f"sql: {SQL.format(name='clicks')}\n"
    )
    saved = world.save()
    assert saved.decisions["clicks"]["after"] == ["orders"]
    before = world.touched()
    for name, other in (("clicks", "orders"), ("orders", "clicks")):
        with pytest.raises(
            BadSavedPlan, match=f"{name}: its steps are ordered with those of {other}"
        ):
            world.deploy_saved(acting=[name])
    assert world.touched() == before
    plan, results = world.deploy_saved()
    assert all(r.ok for r in results.values()), results


def test_no_environment_value_a_sink_names_is_shown_in_a_plan(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of issue 54, R2: a pull request moves a sink to a path naming CI's secrets; the
    plan resolved it to read the sink and wrote the values in clear into the saved plan, its
    JSON and the pull request's Markdown. The path is shown as written."""
    from flink_sql_runner.model.lineage import build_lineage
    from flink_sql_runner.render.markdown import plan_markdown
    from flink_sql_runner.render.plan import plan_json

    monkeypatch.setenv("ORDERS_TOKEN", "tok-0123456789abcdef")
    text = world.tables_file.read_text()
    world.tables_file.write_text(
        text.replace("path: /out/orders\n", "path: /out/orders/${ORDERS_TOKEN}\n")
    )
    saved = world.save(key=KEY)
    deployment = world.deployment()
    jobs = deployment.load()
    plan = deployment.plan(jobs, read_only=True)
    shown = [
        world.plan_file.read_text(),
        plan_json(plan),
        plan_markdown(plan, build_lineage(jobs, catalog=deployment.catalog()), saved=("p", "d")),
    ]
    assert saved.decisions["orders"]["schema"]["sink"] == "/out/orders/${ORDERS_TOKEN}"
    assert not [i for i, text in enumerate(shown) if "tok-0123456789abcdef" in text]


def test_no_job_may_read_the_plan_key(world: PlanWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """R2: the plan key is the deployer's alone: a job naming it is refused when its run is
    built, and no child process (probe, spark-submit) gets it."""
    from flink_sql_runner.errors import FsrError
    from flink_sql_runner.host.processes import DEPLOYER_ONLY, child_env
    from flink_sql_runner.model.runtime import resolved_table
    from flink_sql_runner.read.secrets import PLAN_KEY_VARIABLE

    monkeypatch.setenv(PLAN_KEY_VARIABLE, KEY.decode())
    assert DEPLOYER_ONLY == (PLAN_KEY_VARIABLE,)
    assert PLAN_KEY_VARIABLE not in child_env() and "PATH" in child_env()
    stored = world.store.read("orders").manifest
    assert stored is not None
    tables = {**stored.tables, "orders_out": {"format": "parquet", "options": {
        "path": "/out/${FLINK_SQL_RUNNER_PLAN_KEY}"}}}  # fmt: skip
    with pytest.raises(FsrError, match="FLINK_SQL_RUNNER_PLAN_KEY is the deployer's plan key"):
        resolved_table(replace(stored, tables=tables), "orders_out")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 200_000 + "]" * 200_000, "not a saved plan (nested too deep)"),
        (" " * ((1 << 20) + 1), "not a saved plan (larger than 1 MiB)"),
    ],
    ids=["deep", "huge"],
)
def test_a_file_no_plan_could_be_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    """Review of issue 54, R3: a file nested deep enough crashed the deploy with a traceback
    (RecursionError, exit 1); one that never ends (/dev/zero) was read until memory ran out
    (here the limit is 1 MiB, not 256)."""
    from flink_sql_runner.act import saved_plan

    monkeypatch.setattr(saved_plan, "MAX_BYTES", 1 << 20)
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(BadSavedPlan, match=re.escape(f"{path}: {said}")):
        read_saved_plan(path, deployer="0.1.0", now=0.0, max_age=1.0)


@pytest.mark.parametrize("found", ["hmac-sha256:\u00e9", 7, "hmac-sha256:" + "A" * 64])
def test_a_signature_no_deployer_writes_is_refused_in_one_line(world: PlanWorld, found) -> None:
    """R3: the signature is outside the digest; a non-ASCII one made compare_digest raise
    TypeError (a traceback, exit 1)."""
    world.save(key=KEY)
    rewritten(world, lambda doc: doc.update(signature=found), seal=False)
    with pytest.raises(BadSavedPlan, match="signature: not one flink-sql-runner writes"):
        world.read(key=KEY)


@pytest.mark.parametrize(
    ("variable", "option"),
    [
        ("DB_PASS", "connection"),
        ("KAFKA_PWD", "connection"),
        ("API_KEY", "connection"),
        ("ORDERS_DB", "password-of-db"),
    ],
)
def test_no_secret_environment_value_is_digested_without_the_key(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch, variable: str, option: str
) -> None:
    """Review of issue 54, R5: `DB_PASS`, `KAFKA_PWD`, `API_KEY` were not secret names, so
    their values were salted digests a word list recovered (`Summer2024!`); a value used under a
    secret option is a secret whatever its variable's name."""
    monkeypatch.setenv(variable, "Summer2024!")
    text = world.tables_file.read_text()
    world.tables_file.write_text(
        text.replace("path: /out/orders", f'path: /out/orders\n      {option}: "${{{variable}}}"')
    )
    saved = world.save()
    assert saved.doc["inputs"]["orders"]["env"][variable].startswith("set ")
    assert salted(saved.doc["salt"], "Summer2024!") not in world.plan_file.read_text()


def test_a_plan_made_for_one_yarn_cluster_is_refused_on_another(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Review of issue 54, R6: with --target yarn and no --cluster-api, the cluster is the one
    HADOOP_CONF_DIR's site files name (and the default file system, where a checkpoint path
    without a scheme is): a plan made for prod compared equal on staging."""
    from flink_sql_runner.act.settings import Settings, where_jobs_run

    def conf(name: str) -> str:
        folder = tmp_path / name
        folder.mkdir()
        for site, key, value in (("yarn", "yarn.resourcemanager.hostname", f"rm.{name}"),
                                 ("core", "fs.defaultFS", f"hdfs://nn.{name}:8020")):  # fmt: skip
            (folder / f"{site}-site.xml").write_text(
                f"<configuration><property><name>{key}</name><value>{value}</value></property>"
                "</configuration>"
            )
        return str(folder)

    seen = []
    for name in ("prod", "staging"):
        monkeypatch.setenv("HADOOP_CONF_DIR", conf(name))
        seen.append(where_jobs_run(Settings(target="yarn")))
    assert seen[0]["cluster-api"] == "http://rm.prod:8088"
    assert seen[1]["default-fs"] == "hdfs://nn.staging:8020"
    assert seen[0] != seen[1]


def test_a_connector_jar_swapped_after_the_plan_makes_it_stale(tmp_path: Path) -> None:
    """Review of issue 54, R10: the folder of connector jars was recorded by its path only."""
    from flink_sql_runner.act.settings import Settings, where_jobs_run

    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-sql-kafka.jar").write_bytes(b"the reviewed connector")
    before = where_jobs_run(Settings(connector_jars=jars))["connector-jars"]
    assert before is not None and "1 jars, sha256:" in before
    (jars / "spark-sql-kafka.jar").write_bytes(b"another connector")
    assert where_jobs_run(Settings(connector_jars=jars))["connector-jars"] != before


def test_a_local_store_is_named_by_its_absolute_folder(
    world: PlanWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of issue 54, R11: the local store was compared as the text given: `state/...` in
    two folders (two stores) compared equal, and `state/...` and its absolute path (one store)
    did not."""
    from flink_sql_runner.act.plan_inputs import store_where

    monkeypatch.chdir(world.root)
    assert store_where("state/manifests") == str(world.root / "state" / "manifests")
    assert store_where("s3://bucket/jobs/") == "s3://bucket/jobs/"


def test_a_plan_of_the_format_before_is_refused_by_its_version(world: PlanWorld) -> None:
    """Issue 54 changed what a saved plan holds (the binding, where jobs run, its paths): one
    saved before says so, not which field it lacks."""
    world.save()
    rewritten(world, lambda doc: doc.update({"schema-version": 1}), seal=True)
    with pytest.raises(BadSavedPlan, match=r"schema-version: 1 is not supported .this "
                       r"flink-sql-runner reads 2.; plan again"):  # fmt: skip
        world.read()
