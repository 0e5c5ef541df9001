"""What `watch` must never do (issue 20's findings 2, 4 and 11, and a handover's gap): revert a
deploy, undo a stop, start a new version, or restart a job into a sink another recorded job
writes. Each test failed before its fix."""

from __future__ import annotations

import json
from dataclasses import replace

from flink_sql_runner.model.intents import IntentLog, Kind, Phase, new_intent
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import StoredManifest
from tests.support.jobs import BASE, QUERY, ROOT, make_job, stored_of
from tests.support.watch_world import World, status_of


def test_watch_does_not_revert_a_deploy_whose_record_is_missing():
    """Finding 2: a deploy's new v2 was healthy, then the deployer died before recording it (or
    S3 refused the record); v2's run died later. Before, `watch` took the stored v1 as the
    desired job, saw a query change and started v1's SQL clean as v3: the old query
    reprocessed into the sink. Now it records v2, as the deploy would have, and restarts it."""
    world = World()
    world.deployed()  # v1 recorded and running
    v2 = StoredManifest(QUERY.spec, QUERY.tables, stored_of(QUERY, 2).meta)
    world.target.runs.pop("orders")  # the deploy stopped v1, started v2 ...
    IntentLog(world.store).write(
        new_intent(v2, "stop-and-start-clean", "run-2").at(Phase.HEALTHY)  # ... healthy ...
    )
    world.storage.add_checkpoint(f"{ROOT}/orders/2", 3)  # ... and v2's run died since
    watcher = world.watcher()
    world.look(watcher)
    world.look(watcher)
    (submission,) = world.target.submissions
    assert submission.version == 2, "v2 restarted from its checkpoint, not v1's SQL as v3"
    assert world.store.manifests["orders"].meta.query_version == 2
    assert world.store.manifests["orders"].job["sql"] == QUERY.spec["sql"]
    assert not [k for k in world.store.side if k.startswith("_intents/")], "settled"


def test_watch_leaves_a_job_with_an_unsettled_intent_to_the_next_deploy_and_says_so():
    """An interrupted start whose run may still show up: `watch` starts nothing beside it."""
    world = World()
    world.deployed(running=False)
    world.storage.files[status_of("orders")] = json.dumps({"run-id": "x", "state": "failed"})
    IntentLog(world.store).write(
        new_intent(stored_of(BASE, 1), "restart-from-checkpoint", "run-9").at(Phase.SUBMITTING)
    )
    watcher = world.watcher()
    world.look(watcher)
    world.look(watcher)
    assert world.target.submissions == []
    said = [e for e in world.events() if e["event"] == "cannot-act"]
    assert said and "it may still appear" in said[-1]["message"]


def test_watch_does_not_undo_a_stop_that_was_done_but_not_recorded():
    """Finding 4: `stop NAME` stopped the run and died before recording "stopped". Before, the
    intent (if any) counted as "did not take effect" and `watch` restarted the job. Now the
    stop is completed: recorded, and the job stays down."""
    world = World()
    world.deployed()
    world.target.runs.pop("orders")  # stopped ...
    stopped = stored_of(make_job(**{"desired-state": "stopped"}), 1)
    stopped = StoredManifest(stopped.job, stopped.tables, world.store.manifests["orders"].meta)
    IntentLog(world.store).write(new_intent(stopped, "stop", "-", Kind.STOP).at(Phase.STOPPING))
    watcher = world.watcher()
    for _ in range(3):
        world.look(watcher)
    assert world.target.submissions == [], "not restarted"
    assert world.store.manifests["orders"].job["desired-state"] == "stopped"
    assert not [k for k in world.store.side if k.startswith("_intents/")], "settled"


def test_a_stalled_run_of_a_job_recorded_stopped_is_stopped_not_restarted():
    """Finding 11: replacing a stalled run ignored the desired state (and the run's version,
    and the Spark-version rule): a job recorded as stopped whose run hung was restarted."""
    world = World()
    world.deployed()
    meta = world.store.manifests["orders"].meta
    stopped = stored_of(make_job(**{"desired-state": "stopped"}), 1)
    world.store.put(StoredManifest(stopped.job, stopped.tables, meta))
    watcher = world.watcher()
    for _ in range(8):  # its heartbeat never moves
        world.look(watcher)
    assert world.target.submissions == [], "a stopped job is not started again"


def test_a_stalled_run_of_another_version_is_not_replaced_with_the_stored_one():
    from flink_sql_runner.decide.decisions import Action
    from flink_sql_runner.decide.tree import replace_stalled
    from flink_sql_runner.model.facts import JobFacts

    run = Run("orders", 7, "run-7", "pid 7")
    facts = JobFacts("orders", None, stored_of(BASE, 1), (run,))
    decision = replace_stalled(facts, "stalled (no heartbeat for 60 s)")
    assert decision.action is Action.ERROR
    assert "it runs v7 and the store records v1: not replaced" in decision.reason


def test_a_stalled_run_is_not_restored_onto_an_older_spark():
    world = World()
    world.deployed()
    meta = world.store.manifests["orders"].meta

    world.store.put(
        replace(world.store.manifests["orders"], meta=replace(meta, spark_version="4.1.0"))
    )
    world.target.spark = "3.5.3"
    watcher = world.watcher()
    for _ in range(8):
        world.look(watcher)
    assert world.target.submissions == [], "a 4.1 checkpoint is not restored on 3.5"


def test_watch_does_not_restart_a_job_into_a_sink_another_recorded_job_writes():
    """A handover a deploy did not finish: `a` took over folder /out/y from `b` (recorded), and
    `b`'s start into its new sink failed, so the store still records `b` writing /out/y.
    `watch` must not restart `b` into /out/y beside `a`."""
    world = World()
    y = {"format": "parquet", "options": {"path": "/out/y"}}
    a = make_job(name="a", tables={"src": BASE.tables["src"], "out": y})
    b = make_job(name="b", tables={"src": BASE.tables["src"], "out": y})
    world.deployed(a)
    world.deployed(b, running=False)
    world.storage.files[status_of("b")] = json.dumps({"run-id": "x", "state": "failed"})
    watcher = world.watcher()
    world.look(watcher)
    world.look(watcher)
    assert world.target.submissions == []
    said = [e for e in world.events() if e["event"] == "cannot-act" and e.get("job") == "b"]
    assert said and "is recorded as written by a" in said[-1]["message"]


def test_restarts_that_keep_overlapping_let_the_lock_go_for_a_waiting_deploy():
    """Before, a restart begun while another was under way extended the watcher's hold of the
    store's lock, without end while jobs kept failing: a deploy could wait past its
    --lock-timeout. Now, once held for HOLD_LIMIT, no restart begins until the lock was
    released in between."""
    import threading
    import time

    from flink_sql_runner.watch.restarts import HOLD_LIMIT
    from flink_sql_runner.watch.watcher import WatchSettings

    world = World()
    names = ["a", "b", "c"]
    for name in names:
        path = {"format": "parquet", "options": {"path": f"/out/{name}"}}
        world.deployed(make_job(name=name, tables={"src": BASE.tables["src"], "out": path}))
    settings = WatchSettings(interval=10, backoff_first=10, stall_timeout=3600, leader_ttl=600)
    watcher = world.watcher(settings, parallelism=3)
    world.look(watcher)
    gates = {name: threading.Event() for name in names}
    world.target.before_submit = lambda s: gates[s.name].wait(30)
    world.dies("a")
    watcher.step()  # a's restart begins: the lock is taken
    world.clock.now += HOLD_LIMIT
    world.dies("b")
    watcher.step()  # held for HOLD_LIMIT: b's restart waits
    time.sleep(0.2)
    assert [e for e in world.events() if "restarts wait until" in e.get("message", "")]
    gates["a"].set()
    watcher.settle()
    assert world.store.data.lock.holder is None, "released in between"
    gates["b"].set()
    world.clock.now += 10
    watcher.step()
    watcher.settle()
    assert sorted(s.name for s in world.target.submissions) == ["a", "b"]


def test_watch_leaves_an_interrupted_prune_to_the_next_deploy():
    """Found by the simulation (seed 283): a prune stopped `orders`, and writing its intent's
    next phase landed but its answer was lost. Before this, watch (whose desired job is always
    the stored one) read the prune as "back under --path", dropped it and restarted the job."""
    world = World()
    world.deployed()
    world.target.runs.pop("orders")
    manifest = world.store.manifests["orders"]
    IntentLog(world.store).write(
        new_intent(manifest, "prune", "-", Kind.PRUNE).at(Phase.OLD_STOPPED)
    )
    watcher = world.watcher()
    for _ in range(3):
        world.look(watcher)
    assert world.target.submissions == [], "not restarted"
    said = [e for e in world.events() if e["event"] == "cannot-act"]
    assert said and "an interrupted prune is left to the next deploy" in said[-1]["message"]
