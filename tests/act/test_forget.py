"""Forgetting jobs on fakes: what is stopped, archived and deleted, in which order, what is never
touched (the sink), what refuses a job (a run that may be alive, a submission that may still
appear), and a forget that fails halfway and is finished by the next one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flink_sql_runner.act.forget import ForgetResult, Places, forget_jobs, survey_jobs
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.errors import FsrError, UnknownJob
from flink_sql_runner.gather.checkpoint_reader import highest_version
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.intents import IntentLog, Kind, Phase, new_intent
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import WATCH_FOLDER
from flink_sql_runner.targets.local import LocalTarget
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import ROOT, fake_world, make_job, stored_of

STATE = Path("/state")
#: What the job's sink holds: never deleted.
SINK = {
    "/out/part-0000.parquet": "rows",
    "/out/_spark_metadata/0": "v1",
    "/out/_flink-sql-runner/claims/000000000001-0.json": "{}",
    # Another job's status beacon, beside this job's: never this job's.
    f"{ROOT}/_status/orders-2.v1.json": '{"state": "active"}',
}


def world(name: str = "orders", version: int = 2, running: bool = True):
    """A job deployed twice (so at v2), running, with all a deployer keeps of it."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    job = make_job(name=name)
    store.put(stored_of(job, version))
    for v in range(1, version + 1):
        storage.add_checkpoint(f"{ROOT}/{name}/{v}")
        for suffix in ("manifest.json", "status.json"):
            storage.files[f"{ROOT}/{name}/_control/v{v}.{suffix}"] = "{}"
        storage.files[f"{ROOT}/_status/{name}.v{v}.json"] = '{"state": "stopped"}'
    storage.files[f"{STATE}/runs/{name}/run-1.json"] = "{}"
    storage.files[f"{STATE}/logs/{name}/20261125T010000.000Z-run-1.log"] = "log line\n" * 10
    storage.files.update(SINK)
    store.write_side(f"{WATCH_FOLDER}/{name}.json", "{}")
    if running:
        target.add_run(Run(name, version, "run-1", "pid 4242"))
    return store, target, storage


def forget(store, target, storage, names) -> list[ForgetResult]:
    places = Places(store, target, storage, STATE)
    return list(forget_jobs(places, survey_jobs(places, names), stop_timeout=5))


def next_deploy(store, target, storage, name: str = "orders"):
    """What a deploy of the same job would do now."""
    facts = gather([make_job(name=name)], store, target, storage)
    return build_plan(facts).decisions[0]


def test_a_forgotten_job_is_stopped_archived_and_its_state_deleted_and_comes_back_as_v1():
    store, target, storage = world()
    assert highest_version(storage, f"{ROOT}/orders") == 2, "the finding: re-added at v3"
    order: list[str] = []
    target.before_stop = lambda run: order.append(f"stop with {len(storage.deleted)} deleted")
    store.before_archive = lambda name: order.append(f"archive with {len(storage.deleted)} deleted")

    [result] = forget(store, target, storage, ["orders"])

    assert result.outcome == "forgotten", result.message
    assert order == ["stop with 0 deleted", "archive with 0 deleted"]
    assert target.stops == ["orders"] and not target.list_runs().of("orders")
    assert "orders" not in store.manifests
    assert store.archived["orders"].job["desired-state"] == "stopped"
    assert store.side == {}, "no watch or intent record is left"
    kinds = [location.split("/")[:4] for location in storage.deleted]
    assert list(dict.fromkeys(map(tuple, kinds))) == [
        ("", "state", "runs", "orders"),
        ("", "state", "logs", "orders"),
        ("", "ckpt", "orders", "1"),
        ("", "ckpt", "orders", "2"),
        ("", "ckpt", "orders", "_control"),
        ("", "ckpt", "_status", "orders.v1.json"),
        ("", "ckpt", "_status", "orders.v2.json"),
    ], "run records and logs, then each version oldest first, the control files, the beacons"
    assert storage.files == SINK, "only the sink is left, whole"
    assert highest_version(storage, f"{ROOT}/orders") == 0
    decision = next_deploy(store, target, storage)
    assert (decision.action.value, decision.version) == ("start-clean", 1)
    assert result.message.startswith(
        "orders: forgotten: stopped gracefully; manifest archived to memory://archive/orders; "
        "deleted 7 items ("
    )


def test_a_forgotten_job_leaves_no_beat_file_and_another_jobs_stays():
    """On a local folder or HDFS each version's beacon has a beat file beside it (the runner's
    heartbeat): forgotten with it; another job's, whose name begins the same, is not touched."""
    store, target, storage = world()
    storage.files[f"{ROOT}/_status/orders.v2.beat"] = ""
    storage.files[f"{ROOT}/_status/orders-2.v1.beat"] = ""
    places = Places(store, target, storage, STATE)
    [survey] = survey_jobs(places, ["orders"])
    beacons = [line for line in survey.listing() if "beacon" in line]
    assert beacons == [
        "  delete   beacon v1       /ckpt/_status/orders.v1.json  (1 file, 20 B)",
        "  delete   beacon v2       /ckpt/_status/orders.v2.beat  (1 file, 0 B)",
        "  delete   beacon v2       /ckpt/_status/orders.v2.json  (1 file, 20 B)",
    ]
    [result] = forget(store, target, storage, ["orders"])
    assert result.outcome == "forgotten", result.message
    assert f"{ROOT}/_status/orders.v2.beat" in storage.deleted
    assert storage.files == {**SINK, f"{ROOT}/_status/orders-2.v1.beat": ""}


def test_the_listing_shows_every_item_with_its_size_before_anything_is_done():
    store, target, storage = world()
    places = Places(store, target, storage, STATE)
    [survey] = survey_jobs(places, ["orders"])
    assert survey.listing() == [
        "orders:",
        "  stop     run v2          pid 4242 (gracefully, with its checkpoint)",
        "  archive  manifest        memory://store/orders.yaml",
        "  delete   watch record    memory://store/_watch/orders.json",
        "  delete   run records     /state/runs/orders  (1 file, 2 B)",
        "  delete   logs            /state/logs/orders  (1 file, 90 B)",
        "  delete   checkpoint v1   /ckpt/orders/1  (9 files, 66 B)",
        "  delete   checkpoint v2   /ckpt/orders/2  (9 files, 66 B)",
        "  delete   control files   /ckpt/orders/_control  (4 files, 8 B)",
        "  delete   beacon v1       /ckpt/_status/orders.v1.json  (1 file, 20 B)",
        "  delete   beacon v2       /ckpt/_status/orders.v2.json  (1 file, 20 B)",
        "  keep     sink            /out  (its data, _spark_metadata and the runner's claims)",
    ]
    assert target.stops == [] and storage.deleted == [] and "orders" in store.manifests


def test_a_job_whose_run_may_be_alive_is_not_forgotten_and_the_others_are():
    store, target, storage = world("orders")
    other_store, _, other_storage = world("clicks")
    store.put(other_store.manifests["clicks"])
    storage.files.update(other_storage.files)
    target.add_run(Run("clicks", 2, "run-2", "pid 5151"))
    target.unknown.add("orders")  # the target cannot say whether its run is alive

    results = forget(store, target, storage, ["orders", "clicks"])

    assert [(r.name, r.outcome) for r in results] == [("orders", "failed"), ("clicks", "forgotten")]
    assert results[0].exit_code == 1
    assert results[0].message.startswith("orders: not forgotten: cannot tell whether it runs")
    assert "orders" not in target.stops and "orders" in store.manifests
    assert highest_version(storage, f"{ROOT}/orders") == 2, "its checkpoints are all there"
    assert storage.files[f"{STATE}/logs/orders/20261125T010000.000Z-run-1.log"]


def test_a_job_a_killed_deploy_may_still_be_submitting_for_is_not_forgotten():
    store, target, storage = world(running=False)
    intent = new_intent(stored_of(make_job(), 3), "stop-and-start-clean", "run-9", Kind.START, 300)
    IntentLog(store).write(intent.at(Phase.SUBMITTED))  # written just now: may still appear

    [result] = forget(store, target, storage, ["orders"])

    assert result.outcome == "failed"
    assert "may still appear" in result.message and "not forgotten yet" in result.message
    assert storage.deleted == [] and "orders" in store.manifests


def test_a_name_of_which_nothing_is_anywhere_touches_nothing():
    store, target, storage = world()
    before = dict(storage.files)
    places = Places(store, target, storage, STATE)
    with pytest.raises(UnknownJob, match="unknown job 'nope': nothing of it in memory://store/"):
        survey_jobs(places, ["orders", "nope"])
    with pytest.raises(UnknownJob, match="'../etc' is not a job name"):
        survey_jobs(places, ["../etc"])
    assert storage.files == before and target.stops == [] and "orders" in store.manifests


def test_a_forget_that_fails_halfway_leaves_a_clean_start_and_the_next_forget_finishes():
    store, target, storage = world()
    storage.deletes_left = 12  # run records, logs, v1's 9 files, one of v2's: then a 503

    [failed] = forget(store, target, storage, ["orders"])

    assert failed.outcome == "failed" and failed.exit_code == 1
    assert "manifest archived to memory://archive/orders" in failed.message
    assert failed.message.endswith("(HTTP 503) (switch); `forget orders` again finishes it")
    assert "orders" not in store.manifests, "archived before any checkpoint file went"
    assert highest_version(storage, f"{ROOT}/orders") == 2
    # Meanwhile a deploy starts clean above every folder left, never from a half-deleted one.
    decision = next_deploy(store, target, storage)
    assert (decision.action.value, decision.version) == ("start-clean", 3)

    storage.deletes_left = None
    [finished] = forget(store, target, storage, ["orders"])

    assert finished.outcome == "forgotten", finished.message
    assert storage.files == SINK
    assert (next_deploy(store, target, storage).version) == 1
    [again] = forget(store, target, storage, ["orders"])
    assert (again.outcome, again.message) == ("nothing-left", "orders: nothing left to forget")


def test_a_forget_killed_before_the_archive_deleted_nothing_and_the_next_one_finishes():
    store, target, storage = world()

    def killed(name: str) -> None:
        raise FsrError("killed (switch)")

    store.before_archive = killed
    [failed] = forget(store, target, storage, ["orders"])
    assert failed.outcome == "failed" and storage.deleted == []
    assert store.manifests["orders"].job["desired-state"] == "stopped", "watch leaves it down"

    store.before_archive = None
    [finished] = forget(store, target, storage, ["orders"])
    assert finished.outcome == "forgotten", finished.message
    assert storage.files == SINK


def test_a_pruned_job_is_found_by_its_archived_manifest():
    store, target, storage = world(running=False)
    store.archive("orders", store.token("orders"))  # deploy --prune: checkpoints kept
    assert next_deploy(store, target, storage).version == 3, "the finding"

    [result] = forget(store, target, storage, ["orders"])

    assert result.outcome == "forgotten", result.message
    assert storage.files == SINK
    assert next_deploy(store, target, storage).version == 1


def test_a_settled_intent_is_deleted_with_the_job():
    store, target, storage = world(running=False)
    intent = new_intent(stored_of(make_job(), 3), "stop-and-start-clean", "run-9", Kind.START, 300)
    IntentLog(store).write(intent)  # never submitted: settled as not taken

    [result] = forget(store, target, storage, ["orders"])

    assert result.outcome == "forgotten", result.message
    assert store.side == {}


def test_all_names_every_job_stored_running_or_with_records_left():
    store, target, storage = world("orders")
    storage.files[f"{STATE}/logs/bad-job/20261125T010000.000Z-run-7.log"] = "error\n"
    storage.files[f"{STATE}/runs/.secrets/run-7.properties"] = "x"
    places = Places(store, target, storage, STATE)
    assert [s.name for s in survey_jobs(places, None)] == ["bad-job", "orders"]


def test_the_state_folders_are_the_local_targets():
    target = LocalTarget(STATE)
    places = Places(FakeStore(), target, FakeStorage(), STATE)
    folders = dict(places.state_folders("orders"))
    assert folders["run records"] == str(target.runs / "orders")
    assert folders["logs"] == str(target.logs / "orders")


def test_json_of_a_result_names_each_item():
    store, target, storage = world(running=False)
    [result] = forget(store, target, storage, ["orders"])
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["outcome"] == "forgotten"
    assert doc["items"][0] == {
        "action": "archive",
        "what": "manifest",
        "location": "memory://store/orders.yaml",
    }
    assert doc["items"][-3] == {
        "action": "delete",
        "what": "control files",
        "location": "/ckpt/orders/_control",
        "files": 4,
        "bytes": 8,
    }
    assert doc["items"][-1] == {
        "action": "delete",
        "what": "beacon v2",
        "location": "/ckpt/_status/orders.v2.json",
        "files": 1,
        "bytes": 20,
    }


def test_a_job_whose_first_start_failed_is_forgotten_and_comes_back_as_v1():
    """Known only by its failure record (an intent at phase failed), its control files and its
    log: forget finds it by that record and removes it all."""
    store, target, storage, executor = fake_world(on_submit="failed")
    job = make_job()
    executor.apply(build_plan(gather([job], store, target, storage)))
    assert IntentLog(store).read_all().intents["orders"].phase is Phase.FAILED
    assert next_deploy(store, target, storage).version == 2, "v1's control files exist"

    [result] = forget(store, target, storage, ["orders"])

    assert result.outcome == "forgotten", result.message
    assert IntentLog(store).read_all().intents == {}
    assert not [path for path in storage.files if path.startswith(f"{ROOT}/orders/")]
    decision = next_deploy(store, target, storage)
    assert (decision.version, decision.failed_start) == (1, None)


def test_ctrl_c_leaves_the_job_in_progress_in_flight_and_reports_the_others_not_begun():
    """Ctrl-C (or SIGTERM) while `b` is being forgotten: `a` was forgotten, `b` is reported
    `left-in-flight` (forgetting it again finishes it), `c` `not-begun`; then the interrupt goes
    on."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    for name in ("a", "b", "c"):
        store.put(stored_of(make_job(name=name)))
        target.add_run(Run(name, 1, f"run-{name}", f"pid of {name}"))

    def interrupt(run: Run) -> None:
        if run.name == "b":
            raise KeyboardInterrupt

    target.before_stop = interrupt
    places = Places(store, target, storage, STATE)
    results: list[ForgetResult] = []
    with pytest.raises(KeyboardInterrupt):
        for result in forget_jobs(places, survey_jobs(places, None), stop_timeout=5):
            results.append(result)
    assert [(r.name, r.outcome) for r in results] == [
        ("a", "forgotten"),
        ("b", "left-in-flight"),
        ("c", "not-begun"),
    ]
    assert store.read("c").manifest is not None and target.list_runs().of("c")
