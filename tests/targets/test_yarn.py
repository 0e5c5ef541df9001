"""The yarn target against a fake ResourceManager (tests/support/fake_yarn.py, which checks every
request against the documented REST API) and a stand-in spark-submit that records its argument list.
One test also runs the real spark-submit, to see YARN's own refusal come back."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.stores.storage import FileStorage
from flink_sql_runner.targets.base import Submission, SubmitOutcomeUnknown
from flink_sql_runner.targets.cluster import ClusterError
from flink_sql_runner.targets.yarn import YarnTarget, resource_manager_url
from tests.support.fake_yarn import FAKE_SPARK_SUBMIT, FakeResourceManager
from tests.support.fakes import stand_in
from tests.support.faultproxy import FaultProxy
from tests.support.workspace import Workspace

RUNNER = "/opt/flink-sql-runner/job_runner.py"


@pytest.fixture
def rm():
    with FakeResourceManager() as fake:
        yield fake
        assert fake.violations == [], "requests a real ResourceManager would not take"


@pytest.fixture
def spark_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rm: FakeResourceManager) -> Path:
    script = stand_in(tmp_path / "spark-submit", FAKE_SPARK_SUBMIT)
    monkeypatch.setenv("FAKE_ARGS_FILE", str(tmp_path / "args.jsonl"))
    monkeypatch.setenv("FAKE_RM", rm.url)
    return script


def target_for(rm: FakeResourceManager, spark_submit: Path, **kw) -> YarnTarget:
    storage = FileStorage()
    return YarnTarget(
        storage, "yarn", rm.url, str(spark_submit), RUNNER, user="ci", poll=0.05, **kw
    )


def submission(root: str, version: int = 1, run_id: str = "0f0e0d0c-1111-2222-3333-444455556666"):
    control = ControlFiles.of(f"{root}/orders", version)
    manifest = {"run-id": run_id, "stop-marker": control.stop_marker}
    manifest["status-file"] = control.status_file
    FileStorage().write_text(control.runtime_manifest, json.dumps(manifest))
    return Submission(
        name="orders",
        version=version,
        run_id=run_id,
        app_name=f"flink-sql-runner-orders-v{version}",
        runtime_manifest=control.runtime_manifest,
        spark_conf={"spark.executor.memory": "2g", "spark.yarn.tags": "team-a"},
        secret_conf={"spark.hadoop.fs.s3a.secret.key": "hunter2"},
        stop_marker=control.stop_marker,
        status_file=control.status_file,
    )


def cli_workspace(tmp_path: Path, rm: FakeResourceManager, spark_submit: Path) -> Workspace:
    """A workspace whose CLI runs against the fake ResourceManager and the stand-in submit."""
    options = ("--cluster-api", rm.url, "--spark-submit", str(spark_submit))
    return Workspace(tmp_path / "ws", "yarn", "yarn", options)


def submitted_args(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "args.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_submit_list_and_stop_gracefully_through_the_stop_marker(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    target = target_for(rm, spark_submit)
    sub = submission(str(tmp_path / "ckpt"))
    started = target.submit(sub)

    (args,) = submitted_args(tmp_path)
    assert args[:6] == ["--master", "yarn", "--deploy-mode", "cluster", "--name", sub.app_name]
    confs = [args[i + 1] for i, a in enumerate(args) if a == "--conf"]
    assert confs == [
        "spark.executor.memory=2g",
        f"spark.yarn.tags=team-a,flink-sql-runner,flink-sql-runner-run-{sub.run_id}",
        "spark.yarn.submit.waitAppCompletion=false",
    ]
    assert args[-5:-1] == [RUNNER, "--manifest", sub.runtime_manifest, "--package"]
    # The rest of the runner travels beside the runtime manifest, as a zip of its modules.
    package = Path(args[-1])
    assert package.parent == Path(sub.runtime_manifest).parent
    assert "flink_sql_runner_job/lifecycle.py" in zipfile.ZipFile(package).namelist()
    assert not any("hunter2" in a for a in args), "secrets never on the command line"
    assert rm.submissions[0]["properties"] == "spark.hadoop.fs.s3a.secret.key=hunter2\n"
    assert not Path(args[args.index("--properties-file") + 1]).exists(), "removed afterwards"
    assert "--load-spark-defaults" in args, "the cluster's spark-defaults.conf still counts"

    app_id = started.run.submission_id
    assert app_id == f"application_{1795400000000}_0001"
    record = json.loads(
        Path(ControlFiles.of(str(tmp_path / "ckpt/orders"), 1).submission_record).read_text()
    )
    assert (record["target"], record["submission_id"], record["run_id"]) == (
        "yarn",
        app_id,
        sub.run_id,
    )
    # found by the run's own tag right after spark-submit returned
    method, path, query = rm.api_requests()[0]
    assert (method, path) == ("GET", "/ws/v1/cluster/apps")
    assert query["applicationTags"] == [f"flink-sql-runner-run-{sub.run_id}"]

    assert target.liveness(started.run) is Liveness.ALIVE
    rm.requests.clear()
    (run,) = target.list_runs().of("orders")
    assert (run.version, run.submission_id, run.run_id) == (1, app_id, sub.run_id)
    (listing,) = rm.requests  # one call for every job
    assert listing[2] == {
        "states": ["NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"],
        "applicationTypes": ["SPARK"],
        "applicationTags": ["flink-sql-runner"],
        "user.name": ["ci"],
    }

    stopped = target.stop(run, sub.stop_marker, timeout=30)
    assert stopped.graceful and "stopped gracefully" in stopped.how
    assert Path(sub.stop_marker).exists()
    assert rm.api_requests("PUT") == [], "no kill when the marker works"
    assert target.list_runs().runs == {}


def test_a_run_that_ignores_the_stop_marker_is_killed_through_the_resource_manager(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    target = target_for(rm, spark_submit)
    sub = submission(str(tmp_path / "ckpt"))
    running = target.submit(sub).run
    rm.honour_marker = False

    stopped = target.stop(running, sub.stop_marker, timeout=0.3)

    assert not stopped.graceful
    assert "killed application_" in stopped.how and "ResourceManager's REST API" in stopped.how
    ((method, path, query),) = rm.api_requests("PUT")
    assert path == f"/ws/v1/cluster/apps/{running.submission_id}/state"
    assert query == {"user.name": ["ci"]}
    assert target.liveness(running) is Liveness.GONE
    assert "KILLED" in target.failure_detail(running)


def test_stop_finds_the_run_from_the_listing_and_the_record(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    """A later deploy (another machine, no memory of the submit) stops what the cluster lists."""
    sub = submission(str(tmp_path / "ckpt"))
    target_for(rm, spark_submit).submit(sub)
    later = target_for(rm, spark_submit)
    (running,) = later.list_runs().of("orders")
    assert later.stop(running, sub.stop_marker, timeout=30).graceful


def test_a_refused_submission_brings_back_yarns_message(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_SUBMIT_FAILS", "1")
    sub = submission(str(tmp_path / "ckpt"))
    with pytest.raises(ClusterError) as failed:
        target_for(rm, spark_submit).submit(sub)
    message = str(failed.value)
    assert message.startswith("spark-submit to YARN failed: org.apache.hadoop.yarn.exceptions.")
    assert "Requested resource=<memory:66560, vCores:1>, maximum allowed" in message
    assert not Path(ControlFiles.of(str(tmp_path / "ckpt/orders"), 1).submission_record).exists()


def test_a_failed_application_brings_back_the_resource_managers_diagnostics(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    target = target_for(rm, spark_submit)
    running = target.submit(submission(str(tmp_path / "ckpt"))).run
    rm.fail(
        running.submission_id,
        "Application application_1795400000000_0001 failed 2 times due to AM Container for "
        "appattempt_1795400000000_0001_000002 exited with  exitCode: 1\nFailing this attempt.",
    )
    assert target.liveness(running) is Liveness.GONE
    detail = target.failure_detail(running)
    assert detail.startswith(f"yarn reports {running.submission_id} FAILED (FAILED): Application")
    assert "exited with  exitCode: 1" in detail and "Failing this attempt" not in detail
    assert detail.splitlines()[-1].startswith("log: YARN keeps it with the application")
    assert f"yarn logs -applicationId {running.submission_id}" in detail.splitlines()[-1]


def test_a_run_tag_listed_twice_stands_for_its_live_application_not_the_first_listed(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    """The ResourceManager lists in no promised order (the fake: oldest first). An application
    killed under a run's tag, listed before the live one under the same tag, must not be taken
    for it: the submission's id and the run's liveness come from the live one."""
    target = target_for(rm, spark_submit)
    sub = submission(str(tmp_path / "ckpt"))
    first = target.submit(sub).run.submission_id
    rm.apps[first].end("KILLED", "KILLED", f"Application {first} was killed by user ci")
    second = target.submit(sub).run.submission_id
    assert (first, second) == ("application_1795400000000_0001", "application_1795400000000_0002")
    assert target.find_run(Run("orders", 1, sub.run_id, "x")) is Liveness.ALIVE
    rm.apps[second].end("FINISHED", "SUCCEEDED")
    assert target.find_run(Run("orders", 1, sub.run_id, "x")) is Liveness.GONE


def test_an_unknown_application_is_not_running(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    target = target_for(rm, spark_submit)
    gone = Run("orders", 1, "r", "x", "application_1795400000000_0042")
    assert target.liveness(gone) is Liveness.GONE
    assert "NotFoundException: java.lang.Exception: app with id" in target.failure_detail(gone)


def test_the_resource_manager_comes_from_yarn_site(tmp_path: Path):
    (tmp_path / "yarn-site.xml").write_text(
        """<configuration>
        <property><name>yarn.resourcemanager.hostname</name><value>rm.internal</value></property>
        <property><name>yarn.resourcemanager.webapp.address</name>
                  <value>${yarn.resourcemanager.hostname}:8088</value></property>
        </configuration>"""
    )
    assert resource_manager_url({"HADOOP_CONF_DIR": str(tmp_path)}) == "http://rm.internal:8088"
    with pytest.raises(Exception, match="--cluster-api"):
        resource_manager_url({})


@pytest.mark.s3
def test_deploy_status_and_stop_through_the_cli_with_checkpoints_on_s3(
    tmp_path: Path, spark_submit: Path, s3_env, s3_client, s3_bucket, monkeypatch
):
    """The CLI, with control files on S3 (s3a://): the deployer writes the runtime manifest,
    the submission record and the stop marker with boto3; the fake reads them the same way."""
    with FakeResourceManager(s3_client=s3_client) as rm:
        monkeypatch.setenv("FAKE_RM", rm.url)
        ws = cli_workspace(tmp_path, rm, spark_submit)
        ws.template.write_text(
            ws.template.read_text().replace(
                "'{state_dir}/checkpoints'", f"s3a://{s3_bucket}/checkpoints"
            )
        )
        # a sink the plan can list, empty: it has nothing to read there (one it cannot list,
        # it would ask Spark to read)
        sink = f"s3a://{s3_bucket}/out"
        ws.write_one_job("orders", sink)

        result = ws.deploy()
        assert result.returncode == 0, result.stdout + result.stderr
        assert "started v1 (application_1795400000000_0001)" in result.stdout
        key = "checkpoints/orders/_control/v1.submission.json"
        record = json.loads(s3_client.get_object(Bucket=s3_bucket, Key=key)["Body"].read())
        assert record["submission_id"] == "application_1795400000000_0001"

        rm.requests.clear()
        status = ws.cli("status", "--output", "json")
        assert status.returncode == 0, status.stderr
        assert len(rm.api_requests()) == 1, "status asks the cluster once"
        (row,) = json.loads(status.stdout)["jobs"]
        assert (row["running"], row["running-version"]) == (True, 1)
        assert row["where"] == "application_1795400000000_0001"

        ws.write_one_job("orders", sink, description="new words")
        result = ws.deploy()
        assert result.returncode == 0, result.stdout + result.stderr
        assert "stopped gracefully" in result.stdout
        assert "started v1 (application_1795400000000_0002)" in result.stdout

        rm.honour_marker = False
        result = ws.cli("stop", "orders", "--stop-timeout", "1", paths=False)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "killed application_1795400000000_0002" in result.stdout
        assert rm.violations == []


def test_a_warm_handover_through_the_cli_prepares_the_new_application_beside_the_old(
    tmp_path: Path, spark_submit: Path, rm: FakeResourceManager
):
    """On YARN the prepared run is an application of its own, tagged with its run id: the
    listing tells it from the one it replaces; the old one is stopped only once the new one
    is ready, and the version's submission record names the new one after the go."""
    ws = cli_workspace(tmp_path, rm, spark_submit)
    ws.write_one_job("orders", str(tmp_path / "out"))
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    ws.write_one_job("orders", str(tmp_path / "out"), description="new words")
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "prepared v1 in" in result.stdout and "stopped gracefully" in result.stdout
    assert "started v1 (application_1795400000000_0002)" in result.stdout
    first, second = (
        rm.apps["application_1795400000000_0001"],
        rm.apps["application_1795400000000_0002"],
    )
    assert first.state == "FINISHED" and second.state == "RUNNING"
    assert second.manifest["prepare"]["status-file"].endswith(".status.json")
    assert second.started <= first.finished, "the new one was up before the old one stopped"
    record = ws.state / "checkpoints" / "orders" / "_control" / "v1.submission.json"
    assert json.loads(record.read_text())["submission_id"] == second.id
    assert rm.violations == []


def test_a_warm_handover_that_falls_back_cold_is_judged_by_the_application_it_started(
    tmp_path: Path, spark_submit: Path, rm: FakeResourceManager
):
    """The prepared application is never placed; the deployer kills it and goes the cold way.
    The cold start's application is found by a run tag of its own: the killed one, listed
    first (oldest first), never stands for it (issue 40: the deploy failed with "yarn reports
    application_..._0002 KILLED", the application the deployer itself had killed)."""
    ws = cli_workspace(tmp_path, rm, spark_submit)
    ws.write_one_job("orders", str(tmp_path / "out"))
    assert ws.deploy().returncode == 0
    ws.write_one_job("orders", str(tmp_path / "out"), description="new words")
    rm.hold_prepared = True
    result = ws.deploy("--handover", "warm", "--start-timeout", "3", "--stop-timeout", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "handing over the cold way" in result.stdout
    assert "started v1 (application_1795400000000_0003)" in result.stdout
    old, prepared, cold = (rm.apps[f"application_1795400000000_000{i}"] for i in (1, 2, 3))
    assert (old.state, prepared.state, cold.state) == ("FINISHED", "KILLED", "RUNNING")
    prepared_tag, cold_tag = (
        next(t for t in app.tags if t.startswith("flink-sql-runner-run-"))
        for app in (prepared, cold)
    )
    assert prepared_tag != cold_tag, "the cold start has a run id of its own"
    record = ws.state / "checkpoints" / "orders" / "_control" / "v1.submission.json"
    assert json.loads(record.read_text())["submission_id"] == cold.id
    assert rm.violations == []


@pytest.mark.spark
def test_the_real_spark_submit_refusal_comes_back(
    tmp_path: Path, rm: FakeResourceManager, monkeypatch
):
    """The real spark-submit, with no Hadoop configuration: its own message, in one line."""
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    target = YarnTarget(FileStorage(), "yarn", rm.url, user="ci")
    with pytest.raises(ClusterError) as failed:
        target.submit(submission(str(tmp_path / "ckpt")))
    assert str(failed.value) == (
        "spark-submit to YARN failed: org.apache.spark.SparkException: When running with master "
        "'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment."
    )


def test_settings_make_a_yarn_target(rm: FakeResourceManager):
    settings = Settings(target="yarn", cluster_api=rm.url, timeouts=Timeouts())
    target = Deployment(settings).target
    assert isinstance(target, YarnTarget) and target.master == "yarn" and target.rm == rm.url


def test_an_application_state_yarn_does_not_document_is_unknown_not_gone(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    """Only FINISHED, FAILED and KILLED are final: an answer without a state, or with a word
    this deployer does not know, may be a driver that still writes. Before, it was gone."""
    target = target_for(rm, spark_submit)
    running = target.submit(submission(str(tmp_path / "ckpt"))).run
    target.state_ttl = 0
    for state in ("SUSPENDED", ""):
        rm.apps[running.submission_id].state = state
        assert target.liveness(running) is Liveness.UNKNOWN, state
    rm.apps[running.submission_id].end("KILLED", "KILLED")
    assert target.liveness(running) is Liveness.GONE


def test_a_resource_manager_that_answers_503_or_loses_an_answer_is_never_taken_for_no_run(
    tmp_path: Path, rm: FakeResourceManager, spark_submit: Path
):
    """What a real ResourceManager (tests/yarn/ runs one) does not do on cue, through a
    fault-injecting proxy in front of the fake: a lost answer to the lookup after spark-submit
    leaves the run unknown (it may run), a 503 to the listing is an error (nothing is decided on
    it), a 503 to a run's state is unknown, and a stop waits through it for the run's end."""
    with FaultProxy(rm.url) as proxy:
        target = YarnTarget(FileStorage(), "yarn", proxy.url, str(spark_submit), RUNNER,
                            user="ci", poll=0.05, timeout=5)  # fmt: skip
        sub = submission(str(tmp_path / "ckpt"))
        proxy.inject("reset", method="GET", path="/ws/v1/cluster/apps")
        with pytest.raises(SubmitOutcomeUnknown, match="its application cannot be found"):
            target.submit(sub)
        assert len(rm.submissions) == 1, "spark-submit did submit: the run is there"

        proxy.inject("slowdown", method="GET", path="/ws/v1/cluster/apps")
        with pytest.raises(ClusterError, match="did not list applications"):
            target.list_runs()
        (running,) = target.list_runs().of("orders")
        assert running.run_id == sub.run_id
        assert target.find_run(replace(running, submission_id=None)) is Liveness.ALIVE

        state = f"/ws/v1/cluster/apps/{running.submission_id}"
        asked = len(proxy.seen("GET", state))
        proxy.inject("slowdown", times=3, method="GET", path=state)
        assert target.liveness(running) is Liveness.UNKNOWN
        stopped = target.stop(running, sub.stop_marker, timeout=30)
        assert stopped.graceful, stopped.how
        faults = [seen.fault for seen in proxy.seen("GET", state)[asked:]]
        assert faults[:3] == ["slowdown"] * 3 and faults[-1] is None
        assert rm.api_requests("PUT") == [], "no kill: the marker worked, the 503s were waited out"
        assert target.liveness(running) is Liveness.GONE
