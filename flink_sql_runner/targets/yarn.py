"""YARN: `spark-submit --master yarn --deploy-mode cluster`; what runs, state and kill through the
ResourceManager's REST API (`/ws/v1/cluster/apps`).

Every run is tagged `flink-sql-runner` and `flink-sql-runner-run-<run id>` (`spark.yarn.tags`):
the listing asks the ResourceManager for running SPARK applications with the first tag, and after
spark-submit returns the second one finds the new application's id. The ResourceManager's address
is --cluster-api, else `yarn.resourcemanager.webapp.address` in yarn-site.xml (YARN_CONF_DIR or
HADOOP_CONF_DIR, which spark-submit needs anyway). Requests carry `user.name` (the ResourceManager's
simple authentication): HADOOP_USER_NAME, else the login name.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.stores import hadoop_conf
from flink_sql_runner.targets import http
from flink_sql_runner.targets.base import DriverLog, Submission, SubmitOutcomeUnknown
from flink_sql_runner.targets.cluster import ClusterError, DriverState, Listed, SparkSubmitTarget

TAG = "flink-sql-runner"
RUN_TAG = f"{TAG}-run-"
#: YarnApplicationState values of an application that has not ended.
ALIVE_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")
#: YarnApplicationState values of an application that has ended; any other word is unknown.
GONE_STATES = ("FINISHED", "FAILED", "KILLED")
SUBMIT_TIMEOUT = 300.0


def run_tag(run_id: str) -> str:
    return f"{RUN_TAG}{run_id}"


def newest(apps: list[dict[str, Any]]) -> str:
    """The id of the application a run's tag names: the newest of those still alive, else the
    newest. One run id is one submission, but the ResourceManager lists in no promised order,
    and an application that ended under the same tag must never stand for a live one."""
    alive = [app for app in apps if str(app.get("state")) in ALIVE_STATES]
    return str(max(alive or apps, key=lambda app: float(app.get("startedTime") or 0))["id"])


def resource_manager_url(env: dict[str, str] | None = None) -> str:
    """The ResourceManager's web address from yarn-site.xml, as spark-submit finds that file."""
    for folder in hadoop_conf.conf_dirs(env):
        conf = hadoop_conf.site_properties(folder / "yarn-site.xml")
        https = conf.get("yarn.http.policy") == "HTTPS_ONLY"
        key = (
            "yarn.resourcemanager.webapp.https.address"
            if https
            else "yarn.resourcemanager.webapp.address"
        )
        host = conf.get("yarn.resourcemanager.hostname")
        address = conf.get(key) or (host and f"{host}:{8090 if https else 8088}")
        if address:
            return f"{'https' if https else 'http'}://{address}"
    raise FsrError(
        "--target yarn: no ResourceManager address; set --cluster-api http://RM-HOST:8088, or "
        "YARN_CONF_DIR / HADOOP_CONF_DIR to a folder with yarn-site.xml"
    )


def rm_message(reply: http.Reply) -> str:
    """The ResourceManager's own words: its RemoteException, else the body, else the status."""
    doc = reply.doc if isinstance(reply.doc, dict) else {}
    remote = doc.get("RemoteException")
    if isinstance(remote, dict) and remote.get("message"):
        return f"{remote.get('exception', 'error')}: {remote['message']}"
    return reply.text.strip().splitlines()[0] if reply.text.strip() else f"HTTP {reply.status}"


class YarnTarget(SparkSubmitTarget):
    name = "yarn"
    cluster = "YARN"
    kill_via = "the ResourceManager's REST API"

    def __init__(
        self,
        storage: Any,
        master: str = "yarn",
        resource_manager: str | None = None,
        spark_submit: str | None = None,
        runner: str | None = None,
        user: str | None = None,
        timeout: float = http.DEFAULT_TIMEOUT,
        submit_timeout: float = SUBMIT_TIMEOUT,
        **kwargs: Any,
    ):
        super().__init__(storage, master, spark_submit, runner, submit_timeout, **kwargs)
        self.rm = (resource_manager or resource_manager_url()).rstrip("/")
        self.user = user or hadoop_conf.hadoop_user()
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None, **query: str) -> http.Reply:
        query["user.name"] = self.user
        url = f"{self.rm}{path}?{urllib.parse.urlencode(query)}"
        return http.call(
            method, url, what="the YARN ResourceManager", body=body, timeout=self.timeout
        )

    def _apps(self, **query: str) -> list[dict[str, Any]]:
        reply = self._call("GET", "/ws/v1/cluster/apps", applicationTypes="SPARK", **query)
        if reply.status != 200 or not isinstance(reply.doc, dict):
            raise ClusterError(
                f"the ResourceManager did not list applications: {rm_message(reply)}"
            )
        apps = (reply.doc.get("apps") or {}).get("app") or []  # {"apps": null} when none
        return [app for app in apps if isinstance(app, dict) and app.get("id")]

    def listing(self) -> list[Listed]:
        listed = []
        for app in self._apps(states=",".join(ALIVE_STATES), applicationTags=TAG):
            tags = str(app.get("applicationTags") or "").split(",")
            run = next((t[len(RUN_TAG) :] for t in tags if t.startswith(RUN_TAG)), None)
            started = float(app.get("startedTime") or 0)
            listed.append(Listed(str(app.get("name")), app["id"], app["id"], run, started))
        return listed

    def submit_run(self, submission: Submission) -> str:
        tags = [submission.spark_conf.get("spark.yarn.tags", ""), TAG, run_tag(submission.run_id)]
        conf = {
            "spark.yarn.submit.waitAppCompletion": "false",
            "spark.yarn.tags": ",".join(t for t in tags if t),
        }
        self.spark_submit_cluster_mode(submission, conf)
        run = Run(submission.name, submission.version, submission.run_id, "submission unknown")
        try:
            apps = self._apps(applicationTags=run_tag(submission.run_id))
        except FsrError as exc:
            raise SubmitOutcomeUnknown(
                f"spark-submit returned, but its application cannot be found: {exc}", run
            ) from None
        if not apps:
            raise SubmitOutcomeUnknown(
                f"spark-submit returned, but the ResourceManager at {self.rm} lists no SPARK "
                f"application tagged {run_tag(submission.run_id)}",
                run,
            )
        return newest(apps)

    def find_run(self, run: Run) -> Liveness:
        """A run whose application id was not learned: looked up by its run tag."""
        if not run.run_id:
            return Liveness.UNKNOWN
        try:
            apps = self._apps(applicationTags=run_tag(run.run_id))
        except FsrError:
            return Liveness.UNKNOWN
        if not apps:
            return Liveness.GONE
        return self._state(newest(apps), fresh=True).liveness

    def driver_state(self, submission_id: str) -> DriverState:
        reply = self._call("GET", f"/ws/v1/cluster/apps/{submission_id}")
        app = reply.doc.get("app") if isinstance(reply.doc, dict) else None
        if reply.status == 404:
            return DriverState(Liveness.GONE, "unknown to the ResourceManager", rm_message(reply))
        if reply.status != 200 or not isinstance(app, dict):
            return DriverState(Liveness.UNKNOWN, f"HTTP {reply.status}", rm_message(reply))
        state = str(app.get("state", "UNKNOWN"))
        final = app.get("finalStatus")
        diagnostics = str(app.get("diagnostics") or "").strip()
        said = diagnostics.splitlines()[0] if diagnostics else ""
        if final and final != "UNDEFINED":
            state = f"{state} ({final})"
        liveness = Liveness.of(str(app.get("state")), ALIVE_STATES, GONE_STATES)
        return DriverState(liveness, state, said)

    def failure_detail(self, run: Run) -> str:
        """The ResourceManager's word on the run, and where its log is."""
        said = super().failure_detail(run)
        if not run.submission_id:
            return said
        where = self.log_of(run.submission_id, run.run_id, run.version).where
        return f"{said}\nlog: {where}".lstrip("\n")

    def log_of(self, submission_id: str, run_id: str | None, version: int | None) -> DriverLog:
        """YARN keeps a driver's log with its container; the deployer does not read it."""
        where = (
            f"YARN keeps it with the application (not read from here): `yarn logs -applicationId "
            f"{submission_id}` once log aggregation has it, or the ResourceManager's page "
            f"{self.rm}/cluster/app/{submission_id}"
        )
        return DriverLog(where, "", run_id, version)

    def kill(self, submission_id: str) -> None:
        path = f"/ws/v1/cluster/apps/{submission_id}/state"
        reply = self._call("PUT", path, body={"state": "KILLED"})
        if reply.status in (200, 202):
            return
        hint = ""
        if reply.status in (401, 403):
            hint = " (the ResourceManager needs an authenticated user allowed to modify the app)"
        raise ClusterError(
            f"the ResourceManager refused to kill {submission_id}: {rm_message(reply)}{hint}"
        )
