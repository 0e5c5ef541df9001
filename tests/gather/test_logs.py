"""Finding and reading a job's driver log (`logs NAME`, `status`'s `log`), on each target's
idea of where it is (finding 3 of issue 26)."""

from __future__ import annotations

from pathlib import Path

from flink_sql_runner.gather.logs import follow, last_lines, log_query, still_up
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.runs import Run
from flink_sql_runner.targets.base import LogQuery
from flink_sql_runner.targets.cluster import SubmissionRecord
from flink_sql_runner.targets.kubernetes import KubernetesTarget, pod_name
from flink_sql_runner.targets.local import LocalTarget
from flink_sql_runner.targets.standalone import StandaloneTarget
from flink_sql_runner.targets.yarn import YarnTarget
from tests.support.fakes import FakeStorage, FakeTarget
from tests.support.jobs import BASE, ROOT, stored_of


def write_log(state: Path, name: str, stamp: str, run_id: str, version: int, *lines: str) -> Path:
    path = state / "logs" / name / f"{stamp}-{run_id}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"==== 2026-11-25T02:27:39 flink-sql-runner-{name}-v{version} run {run_id}\n"
    path.write_text(header + "".join(f"{line}\n" for line in lines))
    return path


def test_the_local_target_finds_the_newest_log_of_a_run_or_version(tmp_path):
    target = LocalTarget(tmp_path)
    old = write_log(tmp_path, "orders", "20261125T010000.000Z", "run-a", 1, "first")
    new = write_log(tmp_path, "orders", "20261125T020000.000Z", "run-b", 2, "second")
    write_log(tmp_path, "other", "20261125T030000.000Z", "run-c", 1)
    newest = target.driver_log(LogQuery("orders"))
    assert newest is not None
    assert (newest.path, newest.run_id, newest.version) == (str(new.absolute()), "run-b", 2)
    assert newest.where == newest.path
    by_version = target.driver_log(LogQuery("orders", version=1))
    assert by_version is not None and by_version.path == str(old.absolute())
    by_run = target.driver_log(LogQuery("orders", run_id="run-a"))
    assert by_run is not None and by_run.run_id == "run-a"
    assert target.driver_log(LogQuery("orders", run_id="nope")) is None
    assert target.driver_log(LogQuery("none-yet")) is None


def test_cluster_targets_say_where_the_log_is_and_do_not_pretend_to_read_it(monkeypatch):
    monkeypatch.delenv("SPARK_WORKER_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    storage = FakeStorage()
    record = f"{ROOT}/orders/_control/v1.submission.json"
    storage.files[record] = SubmissionRecord(
        "yarn", "yarn", "application_1_0004", "flink-sql-runner-orders-v1", "run-1", "t"
    ).to_json()
    yarn = YarnTarget(storage, "yarn", resource_manager="http://127.0.0.1:8088")
    found = yarn.driver_log(LogQuery("orders", submission_record=record))
    assert found is not None and found.path == "" and found.version == 1
    assert "yarn logs -applicationId application_1_0004" in found.where
    assert "http://127.0.0.1:8088/cluster/app/application_1_0004" in found.where
    assert yarn.driver_log(LogQuery("orders", run_id="other", submission_record=record)) is None

    kube = KubernetesTarget(storage, "k8s://https://127.0.0.1:6443", namespace="jobs")
    found = kube.driver_log(LogQuery("orders", version=3, run_id="0123abcd-ef"))
    assert found is not None and found.path == ""
    assert found.where.endswith(f"kubectl logs -n jobs {pod_name('orders', 3, '0123abcd-ef')}")

    standalone = StandaloneTarget(storage, "spark://127.0.0.1:7077")
    up = Run("orders", 1, "run-1", "app-1", "driver-20261125-0001")
    found = standalone.driver_log(LogQuery("orders", run=up))
    assert found is not None and found.path == ""
    assert "driver-20261125-0001/stderr (and stdout) in the work folder" in found.where


def test_a_standalone_driver_log_on_this_machine_is_read(tmp_path, monkeypatch):
    stderr = tmp_path / "work" / "driver-20261125-0001" / "stderr"
    stderr.parent.mkdir(parents=True)
    stderr.write_text("driver says hello\n")
    stdout = stderr.with_name("stdout")
    stdout.write_text("[flink-sql-runner] the runner's own lines\n")
    monkeypatch.setenv("SPARK_WORKER_DIR", str(tmp_path / "work"))
    standalone = StandaloneTarget(FakeStorage(), "spark://127.0.0.1:7077")
    up = Run("orders", 1, "run-1", "app-1", "driver-20261125-0001")
    found = standalone.driver_log(LogQuery("orders", run=up))
    assert found is not None and found.files == (str(stderr), str(stdout))


def test_which_log_the_query_asks_for():
    stored = stored_of(BASE, 2)
    up = Run("orders", 2, "run-2", "pid 9")
    facts = JobFacts("orders", None, stored, (up,))
    query = log_query(facts)
    assert (query.version, query.run_id, query.run) == (2, "run-2", up)
    assert query.submission_record == f"{ROOT}/orders/_control/v2.submission.json"
    older = log_query(facts, version=1)
    assert (older.version, older.run_id, older.run) == (1, None, None)
    assert older.submission_record == f"{ROOT}/orders/_control/v1.submission.json"
    down = log_query(JobFacts("orders", None, stored, ()))
    assert (down.version, down.run_id, down.run) == (None, None, None)


def test_last_lines_and_following_until_the_run_ends(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("".join(f"line {i}\n" for i in range(1, 201)))
    lines, end = last_lines(str(path), 3)
    assert lines == ["line 198", "line 199", "line 200"] and end == path.stat().st_size
    assert last_lines(str(path), 0)[0] == []
    assert len(last_lines(str(path), None)[0]) == 200
    written: list[str] = []
    looks = iter([True, True, False])

    def alive() -> bool:
        up = next(looks)
        with path.open("a") as handle:
            handle.write("more\n" if up else "last words, no newline")
        return up

    other = tmp_path / "other.log"
    other.write_text("")
    follow({str(path): end, str(other): 0}, alive, lambda at, text: written.append(text), poll=0)
    assert "".join(written) == "more\nmore\nlast words, no newline"


def test_a_run_whose_liveness_is_unknown_is_followed_and_a_gone_one_is_not():
    target = FakeTarget()
    run = Run("orders", 1, "run-1", "fake 1")
    target.add_run(run)
    target.unknown.add("orders")
    assert still_up(target, run)() is True
    target.unknown.clear()
    target.runs.clear()
    assert still_up(target, run)() is False
    assert still_up(target, None)() is False


def test_a_failed_local_run_s_detail_names_its_log_file_wherever_the_deploy_ran(
    tmp_path, monkeypatch
):
    state = tmp_path / "state"
    log = write_log(state, "orders", "20261125T010000.000Z", "run-a", 1, "Traceback", "boom")
    record = state / "runs" / "orders" / "run-a.json"
    record.parent.mkdir(parents=True)
    relative = "state/logs/orders/" + log.name  # as a deploy run in tmp_path wrote it
    record.write_text(
        '{"name": "orders", "version": 1, "run-id": "run-a", "pid": 1, "started": "gone", '
        f'"log": "{relative}"}}'
    )
    monkeypatch.chdir(tmp_path / "state")  # another folder than the deploy's
    detail = LocalTarget(state).failure_detail(Run("orders", 1, "run-a", "pid 1"))
    assert detail.splitlines()[0] == f"last lines of {log}:"
    assert detail.splitlines()[-1] == "boom"
    record.unlink()  # a run stopped after it reported its failure: its record is gone
    assert LocalTarget(state).failure_detail(Run("orders", 1, "run-a", "pid 1")) == detail
