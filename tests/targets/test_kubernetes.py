"""The kubernetes target with a stand-in spark-submit (tests/support/fake_kubernetes.py) that
answers `--status` and `--kill` in Spark 4.0's own output format; two tests run the real
spark-submit against no cluster, to see its own errors come back."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings, make_target
from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Liveness
from flink_sql_runner.stores.storage import FileStorage
from flink_sql_runner.targets.base import Submission
from flink_sql_runner.targets.cluster import ClusterError
from flink_sql_runner.targets.kubernetes import KubernetesTarget, parse_status, pod_name
from tests.support.fake_kubernetes import FAKE_SPARK_SUBMIT
from tests.support.fakes import stand_in
from tests.support.standalone_cluster import free_port
from tests.support.workspace import Workspace

MASTER = "k8s://https://127.0.0.1:6443"
RUNNER = "local:///opt/flink-sql-runner/job_runner.py"
RUN_ID = "5d0c7c0e-aaaa-4bbb-8ccc-123456789abc"


@pytest.fixture
def spark_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = stand_in(tmp_path / "spark-submit", FAKE_SPARK_SUBMIT)
    monkeypatch.setenv("FAKE_ARGS_FILE", str(tmp_path / "args.jsonl"))
    monkeypatch.setenv("FAKE_K8S_STATE", str(tmp_path / "pods.json"))
    return script


def calls(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "args.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def target_for(spark_submit: Path | None, **kw) -> KubernetesTarget:
    storage = FileStorage()
    kw.setdefault("runner", RUNNER)
    script = str(spark_submit) if spark_submit else None
    return KubernetesTarget(storage, MASTER, "jobs", script, poll=0.05, **kw)


def submission(root: Path, name: str = "orders_daily", **overrides) -> Submission:
    control = ControlFiles.of(f"{root}/{name}", 3)
    Path(control.runtime_manifest).parent.mkdir(parents=True, exist_ok=True)
    manifest = {"run-id": RUN_ID, "stop-marker": control.stop_marker}
    Path(control.runtime_manifest).write_text(
        json.dumps({**manifest, "status-file": control.status_file})
    )
    fields = dict(
        name=name,
        version=3,
        run_id=RUN_ID,
        app_name=f"flink-sql-runner-{name}-v3",
        runtime_manifest=control.runtime_manifest,
        spark_conf={"spark.kubernetes.container.image": "registry.local/spark-py:4.0.1"},
        secret_conf={"spark.kubernetes.authenticate.submission.oauthToken": "t0ps3cret"},
        stop_marker=control.stop_marker,
        status_file=control.status_file,
    )
    return Submission(**{**fields, **overrides})


def test_submit_list_and_stop_gracefully_through_the_stop_marker(
    tmp_path: Path, spark_submit: Path
):
    target = target_for(spark_submit)
    sub = submission(tmp_path)
    started = target.submit(sub)

    pod = "flink-sql-runner-orders-daily-v3-5d0c7c0e"
    assert started.run.submission_id == f"jobs:{pod}"
    (args,) = calls(tmp_path)
    assert args[:6] == ["--master", MASTER, "--deploy-mode", "cluster", "--name", sub.app_name]
    confs = [args[i + 1] for i, a in enumerate(args) if a == "--conf"]
    assert confs == [
        "spark.kubernetes.container.image=registry.local/spark-py:4.0.1",
        "spark.kubernetes.namespace=jobs",
        f"spark.kubernetes.driver.pod.name={pod}",
        "spark.kubernetes.submission.waitAppCompletion=false",
        "spark.kubernetes.driver.label.flink-sql-runner/job=orders_daily",
        "spark.kubernetes.driver.label.flink-sql-runner/version=3",
        f"spark.kubernetes.driver.label.flink-sql-runner/run-id={RUN_ID}",
    ]
    assert "--properties-file" in args and not any("t0ps3cret" in a for a in args)
    assert args[-5:-1] == [RUNNER, "--manifest", sub.runtime_manifest, "--package"]
    # The rest of the runner travels beside the runtime manifest, as a zip of its modules.
    package = Path(args[-1])
    assert package.parent == Path(sub.runtime_manifest).parent
    assert "flink_sql_runner_job/lifecycle.py" in zipfile.ZipFile(package).namelist()
    record = json.loads(
        Path(ControlFiles.of(f"{tmp_path}/orders_daily", 3).submission_record).read_text()
    )
    assert (record["target"], record["submission_id"]) == ("kubernetes", f"jobs:{pod}")

    running = target.list_runs()
    assert list(running.runs) == ["orders_daily"], "the exact job name, from the pod's labels"
    (job,) = running.of("orders_daily")
    assert (job.version, job.run_id, job.submission_id) == (3, RUN_ID, f"jobs:{pod}")
    assert calls(tmp_path)[-1] == ["--master", MASTER, "--status", "jobs:flink-sql-runner-*"]

    stopped = target.stop(job, sub.stop_marker, timeout=30)
    assert stopped.graceful and "stopped gracefully" in stopped.how
    assert not any("--kill" in c for c in calls(tmp_path))
    assert target.list_runs().runs == {}, "a Succeeded pod is not running"


def test_a_driver_ignoring_the_stop_marker_is_killed_with_spark_submit(
    tmp_path: Path, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    # Its waits cut to 0.2 s: one between two questions is 5 s (`state_ttl`, the cost of a real
    # spark-submit's JVM), here a stand-in's.
    target = target_for(spark_submit, sleep=lambda seconds: time.sleep(min(seconds, 0.2)))
    sub = submission(tmp_path)
    running = target.submit(sub).run
    monkeypatch.setenv("FAKE_K8S_IGNORE_MARKER", "1")

    stopped = target.stop(running, sub.stop_marker, timeout=0.2)

    assert not stopped.graceful and "spark-submit --kill" in stopped.how
    kills = [c for c in calls(tmp_path) if "--kill" in c]
    assert kills == [["--master", MASTER, "--kill", running.submission_id]]
    assert target.liveness(running) is Liveness.GONE
    assert target.failure_detail(running).endswith(
        "not found: no driver pod " + running.submission_id
    )


def test_a_refused_submission_brings_back_the_api_servers_message(
    tmp_path: Path, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_K8S_SUBMIT_FAILS", "1")
    with pytest.raises(ClusterError) as failed:
        target_for(spark_submit).submit(submission(tmp_path))
    message = str(failed.value)
    assert message.startswith("spark-submit to Kubernetes failed: io.fabric8.kubernetes.client.")
    assert 'pods is forbidden: User "system:serviceaccount:ci:deployer" cannot create' in message


def test_a_failed_driver_pod_says_how_it_ended(
    tmp_path: Path, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_K8S_DRIVER_FAILS", "1")
    target = target_for(spark_submit)
    running = target.submit(submission(tmp_path)).run
    assert target.liveness(running) is Liveness.GONE
    assert target.failure_detail(running) == (
        f"kubernetes reports {running.submission_id} Failed: container terminated, exit code 1 "
        f"(Error); driver log: kubectl logs -n jobs {running.submission_id.split(':')[1]}"
    )


def test_names_that_cannot_be_labels_and_foreign_namespaces_are_refused(
    tmp_path: Path, spark_submit: Path
):
    target = target_for(spark_submit)
    with pytest.raises(ClusterError, match="must end with a letter or digit"):
        target.submit(submission(tmp_path, name="orders-"))
    other = submission(tmp_path, spark_conf={"spark.kubernetes.namespace": "elsewhere"})
    with pytest.raises(ClusterError, match="--namespace jobs"):
        target.submit(other)
    assert calls(tmp_path) == []


def test_pod_names_are_dns_names_unique_per_run():
    long = "a_" * 40 + "z"
    name = pod_name(long, 12, RUN_ID)
    assert len(name) <= 63 and name.endswith("-v12-5d0c7c0e") and "_" not in name
    assert pod_name("orders", 1, RUN_ID) != pod_name("orders", 1, "ffffffff-0000")


def test_status_output_is_read_as_spark_prints_it():
    output = (
        "Application status (driver): \n\t pod name: p\n\t namespace: ns\n\t labels: "
        "(spark-role,driver), (flink-sql-runner/job,orders)\n\t phase: Pending\n\t container "
        "status: \n\t\t container name: spark-kubernetes-driver\n\t\t container state: waiting"
        "\n\t\t pending reason: ImagePullBackOff\n"
    )
    (pod,) = parse_status(output)
    assert pod["labels"] == {"spark-role": "driver", "flink-sql-runner/job": "orders"}
    assert (pod["pod name"], pod["phase"]) == ("p", "Pending")
    assert pod["containers"] == [
        {
            "container name": "spark-kubernetes-driver",
            "container state": "waiting",
            "pending reason": "ImagePullBackOff",
        }
    ]
    assert parse_status("Submitting a request...\nNo applications found.\n") == []


def test_deploy_and_status_through_the_cli(tmp_path: Path, spark_submit: Path):
    ws = Workspace(
        tmp_path / "ws",
        MASTER,
        "kubernetes",
        ("--namespace", "jobs", "--spark-submit", str(spark_submit), "--runner-path", RUNNER),
    )
    # an empty folder: the plan has no sink to read (one it cannot list, it asks Spark to read)
    ws.write_one_job("orders", str(tmp_path / "out"))
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "started v1 (jobs:flink-sql-runner-orders-v1-" in result.stdout
    status = ws.cli("status", "--output", "json")
    (row,) = json.loads(status.stdout)["jobs"]
    assert (row["running"], row["running-version"]) == (True, 1)
    assert row["where"].startswith("jobs:flink-sql-runner-orders-v1-")
    result = ws.cli("stop", "orders", paths=False)
    assert result.returncode == 0 and "stopped gracefully" in result.stdout


def test_a_warm_handover_through_the_cli_prepares_a_pod_beside_the_old(
    tmp_path: Path, spark_submit: Path
):
    """The prepared run is a driver pod of its own (its name carries its run id): the old pod
    is stopped only once the new one is ready, then the new one gets its go."""
    ws = Workspace(
        tmp_path / "ws",
        MASTER,
        "kubernetes",
        ("--namespace", "jobs", "--spark-submit", str(spark_submit), "--runner-path", RUNNER),
    )
    out = str(tmp_path / "out")  # nothing there yet: the plan reads no sink schema
    ws.write_one_job("orders", out)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    ws.write_one_job("orders", out, description="new words")
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "prepared v1 in" in result.stdout and "stopped gracefully" in result.stdout
    status = ws.cli("status", "--output", "json")
    (row,) = json.loads(status.stdout)["jobs"]
    assert (row["running"], row["running-version"]) == (True, 1)
    started = [line for line in result.stdout.splitlines() if "started v1 (" in line]
    assert started and row["where"] in started[0], (row, started)


@pytest.mark.spark
def test_the_real_spark_submit_errors_come_back(tmp_path: Path):
    """The real spark-submit: the packaged runner without spark.kubernetes.file.upload.path is
    refused before any cluster is asked; a listing against a closed port says so."""
    target = target_for(None, runner=None)
    with pytest.raises(ClusterError) as failed:
        target.submit(submission(tmp_path, secret_conf={}))
    assert str(failed.value) == (
        "spark-submit to Kubernetes failed: org.apache.spark.SparkException: Please specify "
        "spark.kubernetes.file.upload.path property."
    )
    closed = KubernetesTarget(FileStorage(), f"k8s://https://127.0.0.1:{free_port()}", "jobs")
    with pytest.raises(ClusterError, match="Connection refused"):
        closed.list_runs()


def test_settings_make_a_kubernetes_target():
    settings = Settings(target="kubernetes", master=MASTER, namespace="jobs")
    target = Deployment(settings).target
    assert isinstance(target, KubernetesTarget) and target.namespace == "jobs"
    with pytest.raises(FsrError, match="needs --master"):
        make_target(Settings(target="kubernetes"))
    with pytest.raises(FsrError, match="k8s://"):
        make_target(Settings(target="kubernetes", master="spark://x:7077"))


def test_a_pod_in_phase_unknown_is_a_run_that_may_be_alive(tmp_path: Path, spark_submit: Path):
    """Kubernetes says Unknown when it lost touch with the pod's node: the driver may still
    write. Before, such a pod was left out of the listing and read as "not running"."""
    target = target_for(spark_submit)
    run = target.submit(submission(tmp_path)).run
    state = tmp_path / "pods.json"
    pods = json.loads(state.read_text())
    for pod in pods.values():
        pod["phase"] = "Unknown"
    state.write_text(json.dumps(pods))
    (listed,) = target.list_runs().of("orders_daily")
    assert listed.liveness is Liveness.UNKNOWN
    target.state_ttl = 0
    assert target.liveness(run) is Liveness.UNKNOWN


def _set_pods(tmp_path: Path, **fields: str) -> None:
    state = tmp_path / "pods.json"
    pods = json.loads(state.read_text())
    for pod in pods.values():
        pod.update(fields)
    state.write_text(json.dumps(pods))


def test_a_pod_phase_the_deployer_does_not_know_is_unknown_not_gone(
    tmp_path: Path, spark_submit: Path
):
    """Only Succeeded and Failed are known to be final: a phase some later Kubernetes adds (or
    a word the deployer cannot read) may be a driver that still writes. Before, it was gone."""
    target = target_for(spark_submit)
    run = target.submit(submission(tmp_path)).run
    _set_pods(tmp_path, phase="Terminating")
    (listed,) = target.list_runs().of("orders_daily")
    assert listed.liveness is Liveness.UNKNOWN
    target.state_ttl = 0
    assert target.liveness(run) is Liveness.UNKNOWN
    _set_pods(tmp_path, phase="Succeeded", container="terminated", exit="0", reason="Completed")
    assert target.list_runs().of("orders_daily") == ()
    assert target.liveness(run) is Liveness.GONE


def test_a_pod_whose_version_cannot_be_read_is_an_unknown_run_of_its_job(
    tmp_path: Path, spark_submit: Path
):
    """The job's label is readable, its version is not: that job cannot be decided, every
    other job still can."""
    target = target_for(spark_submit)
    target.submit(submission(tmp_path))
    state = tmp_path / "pods.json"
    pods = json.loads(state.read_text())
    for pod in pods.values():
        pod["labels"]["flink-sql-runner/version"] = "three"
    state.write_text(json.dumps(pods))
    (listed,) = target.list_runs().of("orders_daily")
    assert (listed.liveness, listed.version) == (Liveness.UNKNOWN, None)


def test_status_output_the_deployer_cannot_read_fails_the_listing(
    tmp_path: Path, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    """spark-submit answered, but in words the deployer does not recognise (another Spark's
    format, a truncated answer): no job may be read as stopped. Before, the listing was empty
    and every job looked stopped."""
    target = target_for(spark_submit)
    run = target.submit(submission(tmp_path)).run
    monkeypatch.setenv("FAKE_K8S_STATUS_FORMAT", "unreadable")
    with pytest.raises(ClusterError, match="cannot read"):
        target.list_runs()
    target.state_ttl = 0
    assert target.liveness(run) is Liveness.UNKNOWN


def test_a_pod_block_without_readable_labels_fails_the_listing(
    tmp_path: Path, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    """A driver pod of ours whose labels cannot be read may be any job's: the listing fails
    rather than leave it out."""
    target = target_for(spark_submit)
    target.submit(submission(tmp_path))
    monkeypatch.setenv("FAKE_K8S_STATUS_FORMAT", "labels-as-json")
    with pytest.raises(ClusterError, match="labels"):
        target.list_runs()


def test_status_of_a_stopped_driver_pod_says_gone_only_when_spark_says_not_found(
    tmp_path: Path, spark_submit: Path
):
    target = target_for(spark_submit, timeout=30)
    run = target.submit(submission(tmp_path)).run
    target.kill(run.submission_id)
    target.state_ttl = 0
    assert target.liveness(run) is Liveness.GONE
    assert target.list_runs().of("orders_daily") == ()


def test_a_pod_that_cannot_be_read_holds_back_its_job_only(tmp_path: Path, spark_submit: Path):
    """Through the CLI: the job whose pod's version cannot be read is an error ("cannot tell
    whether it runs"), the other job is decided as usual."""
    ws = Workspace(
        tmp_path / "ws",
        MASTER,
        "kubernetes",
        ("--namespace", "jobs", "--spark-submit", str(spark_submit), "--runner-path", RUNNER),
    )
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}},
            # empty folders: the plan has no sink to read
            {"name": "out1", "format": "parquet", "options": {"path": str(tmp_path / "out1")}},
            {"name": "out2", "format": "parquet", "options": {"path": str(tmp_path / "out2")}},
        ]
    )
    ws.write_job("orders", **{"target-table": "out1", "sql": "SELECT value FROM ticks"})
    ws.write_job("clicks", **{"target-table": "out2", "sql": "SELECT value FROM ticks"})
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    state = tmp_path / "pods.json"
    pods = json.loads(state.read_text())
    for pod in pods.values():
        if pod["labels"]["flink-sql-runner/job"] == "orders":
            pod["labels"]["flink-sql-runner/version"] = "one"
    state.write_text(json.dumps(pods))
    plan = ws.plan_json()
    assert plan["orders"]["action"] == "error"
    assert "cannot tell whether it runs" in plan["orders"]["reason"]
    assert plan["clicks"]["action"] == "noop", plan["clicks"]
