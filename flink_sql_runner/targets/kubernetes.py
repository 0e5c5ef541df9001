"""Kubernetes: `spark-submit --master k8s://... --deploy-mode cluster`; what runs, state and kill
through spark-submit's own `--status` / `--kill`, which reach the API server with the same
credentials (kubeconfig, `spark.kubernetes.authenticate.*`) as the submission.

The deployer names each run's driver pod `flink-sql-runner-<job>-v<version>-<run id>` (its
submission id is `<namespace>:<pod>`) and labels it `flink-sql-runner/job`,
`flink-sql-runner/version` and `flink-sql-runner/run-id`. One `spark-submit --status
'<namespace>:flink-sql-runner-*'` lists every driver pod of the namespace; a Pending or Running
pod is a running job, told apart by its labels; a Succeeded or Failed one has ended. Any other
phase (Kubernetes' own Unknown, a word a later version adds) is a run that may be alive, and
output the deployer cannot read fails the listing rather than read as "nothing runs".
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.control import APP_NAME_PREFIX, app_name
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.targets import sparksubmit
from flink_sql_runner.targets.base import DriverLog, LogQuery, Submission
from flink_sql_runner.targets.cluster import (
    ClusterError,
    DriverState,
    Listed,
    SparkSubmitTarget,
    runs_of,
)

LABEL = "flink-sql-runner"
ALIVE_PHASES = ("Pending", "Running")
#: Phases of a pod whose containers have all ended. Any other phase (Unknown: the API server
#: lost touch with the pod's node) may still run.
GONE_PHASES = ("Succeeded", "Failed")
MAX_POD_NAME = 63
CALL_TIMEOUT = 300.0
_STATUS_HEADER = "Application status (driver):"
#: What spark-submit --status prints when no pod matches (K8SSparkSubmitOperation).
_NONE_FOUND = ("No applications found.", "Application not found.")
_PAIR = re.compile(r"^(?P<tabs>\t+) (?P<key>[a-z ]+): (?P<value>.*)$")
_LABEL_VALUE = re.compile(r"^[a-z0-9]([a-z0-9_.-]*[a-z0-9])?$")
#: The labels line prints a Scala map's entries as tuples: "(spark-role,driver), (k,v)".
_LABEL = re.compile(r"\(([^,()]+),([^()]*)\)")


def pod_name(name: str, version: int, run_id: str) -> str:
    """A DNS-1123 name, unique per run: Kubernetes keeps finished driver pods."""
    suffix = f"-v{version}-{run_id.replace('-', '')[:8]}"
    head = f"{APP_NAME_PREFIX}{name.replace('_', '-')}"[: MAX_POD_NAME - len(suffix)]
    return head.rstrip("-") + suffix


def parse_status(output: str) -> list[dict[str, Any]]:
    """The driver pods in `spark-submit --status` output (KubernetesUtils.formatPodState):
    pod-level `\\t key: value` lines, then the containers' `\\t\\t key: value` lines."""
    pods: list[dict[str, Any]] = []
    for block in output.split(_STATUS_HEADER)[1:]:
        pod: dict[str, Any] = {"containers": []}
        for line in block.splitlines():
            match = _PAIR.match(line)
            if not match:
                continue
            key, value = match["key"], match["value"].strip()
            if len(match["tabs"]) == 1:
                pod[key] = value
            elif key == "container name" or not pod["containers"]:
                pod["containers"].append({key: value})
            else:
                pod["containers"][-1][key] = value
        pod["labels"] = dict(_LABEL.findall(pod.get("labels", "")))
        pods.append(pod)
    return pods


def _created(pod: dict[str, Any]) -> float:
    try:
        return datetime.fromisoformat(
            str(pod.get("creation time")).replace("Z", "+00:00")
        ).timestamp()
    except ValueError:
        return 0.0


def _container_words(pod: dict[str, Any]) -> str:
    """ "container terminated, exit code 1 (Error)" and the like, from the first container."""
    if not pod["containers"]:
        return ""
    container = pod["containers"][0]
    words = f"container {container.get('container state', 'N/A')}"
    if container.get("exit code"):
        words += f", exit code {container['exit code']}"
    reason = container.get("termination reason") or container.get("pending reason")
    if reason and reason != "N/A":
        words += f" ({reason})"
    return words


def _first_words(output: str) -> str:
    """The last non-empty line of an answer (spark-submit's own log lines come first), short."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return (lines[-1][:200] if lines else "nothing").replace("\t", " ")


class KubernetesTarget(SparkSubmitTarget):
    name = "kubernetes"
    cluster = "Kubernetes"
    kill_via = "spark-submit --kill (deletes the driver pod)"
    state_ttl = 5.0  # every question starts a spark-submit JVM

    def __init__(
        self,
        storage: Any,
        master: str,
        namespace: str | None = None,
        spark_submit: str | None = None,
        runner: str | None = None,
        timeout: float = CALL_TIMEOUT,
        **kwargs: Any,
    ):
        if not master.startswith("k8s://"):
            raise FsrError(
                f"--master {master}: the kubernetes target needs k8s://https://HOST:PORT"
            )
        super().__init__(storage, master, spark_submit, runner, timeout, **kwargs)
        self.namespace = namespace or "default"
        self.timeout = timeout

    def spark_version(self) -> str | None:
        """The driver image decides which Spark runs: unknown here (the version the last run
        reported stands in)."""
        return None

    def _operation(self, option: str, submission_id: str) -> str:
        args = [sparksubmit.find_spark_submit(self.spark_submit), "--master", self.master]
        done = sparksubmit.run([*args, option, submission_id], self.timeout)
        if done.returncode != 0:
            raise ClusterError(
                f"spark-submit {option} {submission_id} failed: "
                f"{sparksubmit.failure_message(done.output)}"
            )
        return done.output

    def listing(self) -> list[Listed]:
        return self._pods()[0]

    def list_runs(self) -> Listing:
        listed, unknown = self._pods()
        listing = runs_of(listed)
        return Listing.of_runs([run for runs in listing.runs.values() for run in runs] + unknown)

    def _pods(self) -> tuple[list[Listed], list[Run]]:
        """Our driver pods that have not ended, and runs of a job whose version cannot be read
        (unknown). ClusterError when the answer cannot be read, or a pod cannot be told apart:
        leaving it out would read a job that may run as stopped."""
        submission = f"{self.namespace}:{APP_NAME_PREFIX}*"
        output = self._operation("--status", submission)
        pods = parse_status(output)
        if not pods and not any(line.strip() in _NONE_FOUND for line in output.splitlines()):
            raise ClusterError(
                f"cannot read what spark-submit --status {submission} printed (neither driver "
                f"pods nor 'No applications found.'): {_first_words(output)}"
            )
        listed, unknown = [], []
        for pod in pods:
            labels = pod["labels"]
            phase = str(pod.get("phase"))
            if phase in GONE_PHASES:
                continue
            job, version = labels.get(f"{LABEL}/job"), labels.get(f"{LABEL}/version", "")
            submission_id = f"{pod.get('namespace', self.namespace)}:{pod.get('pod name')}"
            if not job:
                if "spark-role" in labels:
                    continue  # readable labels without ours: not a pod this deployer made
                raise ClusterError(
                    f"cannot read the labels of driver pod {submission_id} (phase {phase}) in "
                    "what spark-submit --status printed: it may be any job's run"
                )
            liveness = Liveness.of(phase, ALIVE_PHASES, GONE_PHASES)
            run_id = labels.get(f"{LABEL}/run-id")
            if not version.isdigit():
                unknown.append(Run(job, None, run_id, submission_id, submission_id,
                                   Liveness.UNKNOWN))  # fmt: skip
                continue
            listed.append(
                Listed(
                    app_name(job, int(version)),
                    submission_id,
                    submission_id,
                    run_id,
                    _created(pod),
                    liveness,
                )
            )
        return listed, unknown

    def submit_run(self, submission: Submission) -> str:
        name = submission.name
        if not _LABEL_VALUE.match(name):
            raise ClusterError(
                f"job name {name!r} cannot be a Kubernetes label value (it must end with a "
                "letter or digit)"
            )
        namespace = submission.spark_conf.get("spark.kubernetes.namespace", self.namespace)
        if namespace != self.namespace:
            raise ClusterError(
                f"sparkProperties.spark.kubernetes.namespace is {namespace}, but the deployer "
                f"lists and stops jobs in --namespace {self.namespace}"
            )
        pod = pod_name(name, submission.version, submission.run_id)
        label = "spark.kubernetes.driver.label"
        conf = {
            "spark.kubernetes.namespace": self.namespace,
            "spark.kubernetes.driver.pod.name": pod,
            "spark.kubernetes.submission.waitAppCompletion": "false",
            f"{label}.{LABEL}/job": name,
            f"{label}.{LABEL}/version": str(submission.version),
            f"{label}.{LABEL}/run-id": submission.run_id,
        }
        self.spark_submit_cluster_mode(submission, conf, submission_id=f"{self.namespace}:{pod}")
        return f"{self.namespace}:{pod}"

    def driver_state(self, submission_id: str) -> DriverState:
        output = self._operation("--status", submission_id)
        pods = parse_status(output)
        if not pods:
            if any(line.strip() in _NONE_FOUND for line in output.splitlines()):
                return DriverState(Liveness.GONE, "not found", f"no driver pod {submission_id}")
            return DriverState(
                Liveness.UNKNOWN, "not readable", f"spark-submit --status: {_first_words(output)}"
            )
        pod = pods[0]
        phase = str(pod.get("phase", "Unknown"))
        namespace, _, name = submission_id.partition(":")
        said = _container_words(pod)
        if phase not in ("Pending",):
            said += f"; driver log: kubectl logs -n {namespace} {name}"
        liveness = Liveness.of(phase, ALIVE_PHASES, GONE_PHASES)
        return DriverState(liveness, phase, said.strip("; "))

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        """A run's pod is named after its run id: known without asking the cluster."""
        found = super().driver_log(query)
        if found is None and query.run_id is not None and query.version is not None:
            pod = pod_name(query.name, query.version, query.run_id)
            found = self.log_of(f"{self.namespace}:{pod}", query.run_id, query.version)
        return found

    def log_of(self, submission_id: str, run_id: str | None, version: int | None) -> DriverLog:
        """The driver pod's log is Kubernetes': the deployer does not read it."""
        namespace, _, pod = submission_id.partition(":")
        where = (
            f"Kubernetes keeps it with the driver pod (not read from here): "
            f"kubectl logs -n {namespace} {pod}"
        )
        return DriverLog(where, "", run_id, version)

    def kill(self, submission_id: str) -> None:
        self._operation("--kill", submission_id)
