"""What the cluster targets share, without a cluster: reading spark-submit's failures, the
submission record, which listed applications are our jobs, and the standalone REST request."""

from __future__ import annotations

import pytest

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Liveness
from flink_sql_runner.targets.base import StopNotConfirmed, Submission
from flink_sql_runner.targets.cluster import (
    ClusterError,
    ClusterTarget,
    DriverState,
    Listed,
    SubmissionRecord,
    runs_of,
)
from flink_sql_runner.targets.sparksubmit import failure_message
from flink_sql_runner.targets.standalone import (
    StandaloneTarget,
    first_line,
    rest_base,
    runner_resource,
)
from tests.support.fakes import FakeStorage

# What spark-submit 4.0.1 printed (trimmed), against no YARN config and a closed API server.
YARN_WITHOUT_CONF = """WARNING: Using incubator modules: jdk.incubator.vector
26/11/23 04:01:44 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address
Exception in thread "main" org.apache.spark.SparkException: When running with master 'yarn' \
either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment.
\tat org.apache.spark.deploy.SparkSubmitArguments.error(SparkSubmitArguments.scala:650)
\tat org.apache.spark.deploy.SparkSubmit.main(SparkSubmit.scala)
"""
K8S_REFUSED = """Submitting a request for the status of submission default:x* in k8s://https://127.0.0.1:1.
Exception in thread "main" io.fabric8.kubernetes.client.KubernetesClientException: Operation: \
[list]  for kind: [Pod]  with name: [null]  in namespace: [default]  failed.
\tat io.fabric8.kubernetes.client.KubernetesClientException.launderThrowable(Kubernetes...)
Caused by: java.io.IOException: Connection refused: /127.0.0.1:1
\t... 14 more
Caused by: java.net.ConnectException: Connection refused
"""


def test_failure_message_is_the_main_exception_with_its_first_cause():
    assert failure_message(YARN_WITHOUT_CONF) == (
        "org.apache.spark.SparkException: When running with master 'yarn' either "
        "HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment."
    )
    assert failure_message(K8S_REFUSED).endswith(
        "failed. (caused by java.io.IOException: Connection refused: /127.0.0.1:1)"
    )
    assert failure_message("Error: Missing application resource.\nUsage: spark-submit") == (
        "Missing application resource."
    )
    assert failure_message("26/11/23 04:01:44 INFO X: noise\nsomething broke\n") == (
        "something broke"
    )
    assert failure_message("") == "no output"


def test_the_submission_record_sits_beside_the_stop_marker_and_round_trips():
    control = ControlFiles.of("s3a://bucket/ckpt/orders", 3)
    assert control.submission_record == "s3a://bucket/ckpt/orders/_control/v3.submission.json"
    record = SubmissionRecord(
        "yarn", "yarn", "application_1_0001", "flink-sql-runner-o-v3", "r", "t"
    )
    assert SubmissionRecord.from_json(record.to_json(), "x") == record
    with pytest.raises(ClusterError, match="not readable"):
        SubmissionRecord.from_json('{"schema-version": 99}', "x")


def test_only_our_applications_are_jobs_and_every_run_of_one_counts():
    listed = [
        Listed("flink-sql-runner-orders-v2", "app-2", "sub-2", "run-2", started=2.0),
        Listed("flink-sql-runner-orders-v1", "app-1", started=1.0, liveness=Liveness.UNKNOWN),
        Listed("someone-elses-app", "app-3"),
        Listed("flink-sql-runner-Bad-v1", "app-4"),
    ]
    listing = runs_of(listed)
    assert list(listing.runs) == ["orders"]
    old, new = listing.of("orders")
    assert (old.version, old.detail, old.liveness) == (1, "app-1", Liveness.UNKNOWN)
    assert (new.version, new.submission_id, new.run_id) == (2, "sub-2", "run-2")


def test_standalone_finds_the_rest_gateway_of_one_master():
    assert rest_base("spark://m:7077") == "http://m:6066", "the master's usual URL"
    assert rest_base("spark://m:6066") == "http://m:6066", "the gateway's own URL"
    assert rest_base("spark://m:7077", "http://gw:16066/") == "http://gw:16066"
    for bad in ("spark://a:7077,b:7077", "yarn", "local[2]"):
        with pytest.raises(FsrError, match="needs one master, spark://HOST:PORT"):
            rest_base(bad)


def test_the_runner_becomes_a_uri_a_worker_can_fetch(tmp_path):
    assert runner_resource("s3a://b/runner/job_runner.py") == "s3a://b/runner/job_runner.py"
    assert runner_resource(str(tmp_path / "r.py")) == f"file://{tmp_path}/r.py"
    assert runner_resource(None).startswith("file:///")
    assert runner_resource(None).endswith("/job_runner.py")


def test_the_clusters_message_without_the_java_stack():
    message = "Exception from the cluster:\njava.nio.file.NoSuchFileException: /x.py\n\tat a.b(C)"
    assert first_line(message) == "java.nio.file.NoSuchFileException: /x.py"


def test_the_standalone_request_runs_the_runner_through_pythonrunner():
    target = StandaloneTarget(None, "spark://m:6066", runner="http://files/job_runner.py")
    submission = Submission(
        name="orders",
        version=2,
        run_id="r",
        app_name="flink-sql-runner-orders-v2",
        runtime_manifest="s3a://b/ckpt/orders/_control/v2.manifest.json",
        spark_conf={"spark.cores.max": "1"},
        secret_conf={"spark.hadoop.fs.s3a.secret.key": "hunter2"},
        stop_marker="s3a://b/ckpt/orders/_control/v2.stop",
    )
    request = target.request(submission)
    assert request["action"] == "CreateSubmissionRequest"
    assert request["mainClass"] == "org.apache.spark.deploy.PythonRunner"
    assert request["appResource"] == "http://files/job_runner.py"
    assert request["appArgs"] == ["job_runner.py", "", "--manifest", submission.runtime_manifest]
    properties = request["sparkProperties"]
    assert properties["spark.app.name"] == "flink-sql-runner-orders-v2"
    assert properties["spark.submit.deployMode"] == "cluster"
    assert properties["spark.cores.max"] == "1"
    assert properties["spark.hadoop.fs.s3a.secret.key"] == "hunter2"  # in the body only
    assert target.web_ui == "http://m:8080"


class MemoryCluster(ClusterTarget):
    """The shared logic over an in-memory cluster: submissions run until stopped or killed."""

    name = "memory"

    def __init__(self, storage, **kw):
        kw = {"sleep": lambda _: None, "poll": 0, **kw}
        super().__init__(storage, "memory://", **kw)
        self.alive: dict[str, bool] = {}
        self.killed: list[str] = []
        self.asked: list[float] = []  # when driver_state was asked, by the target's clock

    def listing(self):
        return [Listed("flink-sql-runner-orders-v1", sid) for sid, up in self.alive.items() if up]

    def submit_run(self, submission):
        self.alive[f"sub-{len(self.alive) + 1}"] = True
        return f"sub-{len(self.alive)}"

    def driver_state(self, submission_id):
        self.asked.append(self.clock())
        up = self.alive.get(submission_id, False)
        return DriverState(Liveness.ALIVE if up else Liveness.GONE, "RUNNING" if up else "GONE")

    def kill(self, submission_id):
        self.killed.append(submission_id)
        self.alive[submission_id] = False


def orders_submission() -> Submission:
    control = ControlFiles.of("s3a://b/ckpt/orders", 1)
    return Submission(
        name="orders",
        version=1,
        run_id="r",
        app_name="flink-sql-runner-orders-v1",
        runtime_manifest=control.runtime_manifest,
        stop_marker=control.stop_marker,
    )


def test_a_run_that_cannot_be_recorded_is_killed_not_left_behind():
    class Refusing(FakeStorage):
        def write_text(self, location, text, *, private=False):
            raise FsrError("access denied")

    cluster = MemoryCluster(Refusing())
    with pytest.raises(ClusterError, match=r"sub-1 was submitted but cannot be recorded .*killed"):
        cluster.submit(orders_submission())
    assert cluster.killed == ["sub-1"]


def test_stopping_what_the_listing_shows_needs_its_record():
    state = FakeStorage()
    cluster = MemoryCluster(state)
    sub = orders_submission()
    cluster.submit(sub)
    (listed,) = cluster.list_runs().of("orders")  # no submission id in this listing
    record = ControlFiles.of("s3a://b/ckpt/orders", 1).submission_record
    state.files[record] = state.files[record].replace("orders-v1", "orders-v7")
    with pytest.raises(StopNotConfirmed, match="records flink-sql-runner-orders-v7, but the"):
        cluster.stop(listed, sub.stop_marker, timeout=0)
    del state.files[record]
    with pytest.raises(StopNotConfirmed, match="v1.submission.json does not exist"):
        cluster.stop(listed, sub.stop_marker, timeout=0)


@pytest.mark.parametrize(
    ("timeout", "state_ttl", "asked"),
    [
        (0.2, 5.0, [0.0, 0.0, 0.2]),  # Kubernetes' 5 s between questions, a short stop timeout
        (12.0, 5.0, [0.0, 0.0, 5.0, 10.0, 12.0]),
        (2.5, 0.0, [0.0, 0.0, 1.0, 2.0, 2.5]),  # every poll (1 s)
    ],
)
def test_a_driver_ignoring_its_stop_marker_is_killed_at_the_stop_timeout_not_later(
    timeout: float, state_ttl: float, asked: list[float]
):
    """Where each question is costly (`state_ttl`), the stop still asks once more at its
    deadline and kills then, not at the next question's time (a 0.2 s timeout waited 5 s)."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    cluster = MemoryCluster(FakeStorage(), clock=lambda: now[0], sleep=sleep, poll=1.0)
    cluster.state_ttl = state_ttl
    sub = orders_submission()
    run = cluster.submit(sub).run  # its driver ignores the stop marker: up until killed
    cluster.asked.clear()
    stopped = cluster.stop(run, sub.stop_marker, timeout=timeout)
    assert cluster.killed == ["sub-1"]
    assert not stopped.graceful
    assert stopped.seconds == pytest.approx(timeout)
    assert cluster.asked[: len(asked)] == pytest.approx(asked)  # then: gone, after the kill
    assert cluster.asked[len(asked) :] == pytest.approx([timeout])


def test_a_spark_3_master_gets_the_drivers_java_17_options_from_the_request():
    """A Spark 3.5 worker starts a REST-submitted driver without Java 17's --add-opens."""
    target = StandaloneTarget(None, "spark://m:7077", runner="http://files/job_runner.py")
    submission = Submission(
        name="orders", version=1, run_id="r", app_name="flink-sql-runner-orders-v1",
        runtime_manifest="/m.json", spark_conf={"spark.driver.extraJavaOptions": "-Dmine=1"},
    )  # fmt: skip
    target._server_version = "3.5.9"
    options = target.request(submission)["sparkProperties"]["spark.driver.extraJavaOptions"]
    assert "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED" in options
    assert options.endswith(" -Dmine=1"), "the job's own options come after, and win"
    target._server_version = "4.3.0"
    options = target.request(submission)["sparkProperties"]["spark.driver.extraJavaOptions"]
    assert options == "-Dmine=1"


@pytest.mark.parametrize(
    "state, liveness",
    [
        ("RUNNING", Liveness.ALIVE),
        ("FINISHED", Liveness.GONE),
        ("UNKNOWN", Liveness.UNKNOWN),
        ("DECOMMISSIONED", Liveness.UNKNOWN),  # a word this deployer does not know
        ("", Liveness.UNKNOWN),
    ],
)
def test_only_states_known_to_be_final_are_gone(state: str, liveness: Liveness):
    """Before, any state outside the alive and unknown lists was gone: a driver in a state a
    later Spark adds was taken for stopped, and a second one started beside it."""
    assert Liveness.of(state, ("RUNNING",), ("FINISHED", "FAILED")) is liveness
