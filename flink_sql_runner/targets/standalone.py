"""Spark standalone: drivers in cluster deploy mode through the master's REST gateway.

spark-submit refuses cluster deploy mode for Python applications on standalone clusters, but the
master's REST gateway (`spark.master.rest.enabled=true`, port 6066 by default) runs any main
class on a worker: the deployer posts a CreateSubmissionRequest whose main class is Spark's
`PythonRunner` and whose application resource is the runner file. The worker fetches that file
into the driver's own folder and `PythonRunner` runs it from there.

    --master spark://HOST:7077          the master, as drivers and Spark users know it
    --rest-gateway http://HOST:6066     its REST gateway: submit, status, kill
                                        [default: port 6066 on the master's host]
    --cluster-api http://HOST:8080      the master's web UI, whose /json/ lists the applications
                                        [default: port 8080 on the master's host]

The gateway's own URL as --master (spark://HOST:6066) works too: the gateway then tells the
driver the master's real address itself. When the gateway does not answer, the master's web UI
page, which shows "REST URL: spark://HOST:PORT" while the gateway is on, tells the one line the
user gets which URL to give, or that the gateway is off.
"""

from __future__ import annotations

import importlib.metadata
import os
import posixpath
import re
import urllib.parse
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.sparkversion import version_tuple
from flink_sql_runner.targets import http
from flink_sql_runner.targets.base import DriverLog, Submission, SubmitOutcomeUnknown
from flink_sql_runner.targets.cluster import ClusterError, ClusterTarget, DriverState, Listed
from flink_sql_runner.targets.runner_files import runner_script

PYTHON_RUNNER = "org.apache.spark.deploy.PythonRunner"
#: Driver states in which the driver is, or will again be, running.
ALIVE_STATES = ("SUBMITTED", "RUNNING", "RELAUNCHING")
#: DriverState values of a driver that has ended; any other (the master's UNKNOWN while it
#: recovers, a word it does not know) is unknown.
GONE_STATES = ("FINISHED", "KILLED", "FAILED", "ERROR")
#: Application states of the master's listing in which the application runs or will.
ALIVE_APP_STATES = ("RUNNING", "WAITING")
#: What Spark's launcher gives a JVM on Java 17 (JavaModuleOptions). A Spark 3.x worker does not
#: give them to a driver the REST gateway asked for, which then fails on Java 17
#: (IllegalAccessError ... sun.nio.ch.DirectBuffer); Spark 4 workers do.
JAVA_17_OPTIONS = " ".join(
    ["-XX:+IgnoreUnrecognizedVMOptions"]
    + [
        f"--add-opens=java.base/{package}=ALL-UNNAMED"
        for package in (
            "java.lang",
            "java.lang.invoke",
            "java.lang.reflect",
            "java.io",
            "java.net",
            "java.nio",
            "java.util",
            "java.util.concurrent",
            "java.util.concurrent.atomic",
            "jdk.internal.ref",
            "sun.nio.ch",
            "sun.nio.cs",
            "sun.security.action",
            "sun.util.calendar",
        )
    ]  # fmt: skip
    + ["--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED"]
)
#: Answers that may come from a proxy or gateway before or after the master acted.
AMBIGUOUS_STATUSES = (408, 429, 502, 503, 504)
DEFAULT_UI_PORT = 8080
DEFAULT_REST_PORT = 6066


def rest_base(master: str, gateway: str | None = None) -> str:
    """The REST gateway: `gateway` if given, else port 6066 on the master's host (spark://h:7077
    -> http://h:6066; spark://h:6066, the gateway itself, -> http://h:6066). One master: a list
    of masters is not supported."""
    parsed = urllib.parse.urlsplit(master)
    if parsed.scheme != "spark" or not parsed.hostname or "," in parsed.netloc:
        raise FsrError(
            f"--master {master}: the standalone target needs one master, spark://HOST:PORT "
            "(its REST gateway listens on port 6066 unless --rest-gateway says otherwise)"
        )
    if gateway:
        return gateway.rstrip("/")
    return f"http://{parsed.hostname}:{DEFAULT_REST_PORT}"


#: How the master's web UI page shows its REST gateway while it is on (MasterPage).
_REST_URL_ON_PAGE = re.compile(r"REST URL:\s*(?:</strong>)?\s*spark://([^\s<]+)")


def rest_url_on_page(html: str) -> str | None:
    """The REST gateway the master's web UI page shows ("REST URL: spark://h:6066 (cluster
    mode)"), as http://h:6066; None when it shows none (the gateway is off)."""
    found = _REST_URL_ON_PAGE.search(html)
    return f"http://{found.group(1).rstrip('/')}" if found else None


def runner_resource(runner: str | None) -> str:
    """The runner as a URI a worker can fetch: file: (same path on every worker), http(s):,
    hdfs:, s3a: (when the workers have hadoop-aws)."""
    if runner and ("://" in runner or runner.startswith("file:")):
        return runner
    return Path(runner or runner_script()).resolve().as_uri()


def first_line(message: str) -> str:
    """The cluster's message without Java stack lines or its "Exception from the cluster" lead."""
    lines = [
        line.strip()
        for line in message.splitlines()
        if line.strip()
        and not line.startswith("\t")
        and line.strip() != "Exception from the cluster:"
    ]
    return lines[0] if lines else ""


def worker_dirs() -> list[Path]:
    """Where a worker on this machine keeps its drivers' folders: $SPARK_WORKER_DIR, else
    $SPARK_HOME/work (the worker's own default)."""
    found = [os.environ.get("SPARK_WORKER_DIR", "")]
    if os.environ.get("SPARK_HOME"):
        found.append(os.path.join(os.environ["SPARK_HOME"], "work"))
    return [Path(f) for f in found if f]


class StandaloneTarget(ClusterTarget):
    name = "standalone"
    kill_via = "the master's REST API"

    def __init__(
        self,
        storage: Any,
        master: str,
        web_ui: str | None = None,
        runner: str | None = None,
        timeout: float = http.DEFAULT_TIMEOUT,
        gateway: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(storage, master, **kwargs)
        self.rest = rest_base(master, gateway)
        self._server_version: str | None = None
        self._hint: tuple[str, bool] | None = None
        host = urllib.parse.urlsplit(master).hostname
        self.web_ui = (web_ui or f"http://{host}:{DEFAULT_UI_PORT}").rstrip("/")
        self.runner = runner_resource(runner)
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> http.Reply:
        try:
            return http.call(
                method,
                f"{self.rest}{path}",
                what="the Spark master's REST gateway",
                body=body,
                timeout=self.timeout,
            )
        except http.Unreachable as exc:
            hint, elsewhere = self.gateway_hint()
            # What answers at a URL that is not the gateway never got the request to it.
            maybe_sent = exc.maybe_sent and not elsewhere
            raise http.Unreachable(f"{exc} ({hint})", maybe_sent) from None

    def gateway_hint(self) -> tuple[str, bool]:
        """What to give when the gateway does not answer: the gateway the master's web UI page
        shows, or that it shows none (the gateway is off); and whether the page shows the
        gateway elsewhere than where it was asked."""
        if self._hint is None:
            self._hint = self._find_gateway_hint()
        return self._hint

    def _find_gateway_hint(self) -> tuple[str, bool]:
        page = f"{self.web_ui}/"
        try:
            reply = http.call("GET", page, what="the Spark master's web UI", timeout=self.timeout)
        except http.Unreachable:
            reply = None
        if reply is None or reply.status != 200 or "Spark Master" not in reply.text:
            return (
                f"nor does the master's web UI at {page} answer; give the gateway's URL with "
                "--rest-gateway http://MASTER-HOST:PORT, PORT being the master's "
                f"spark.master.rest.port (default {DEFAULT_REST_PORT}), and the web UI with "
                "--cluster-api; the gateway needs spark.master.rest.enabled=true on the master",
                False,
            )
        shown = rest_url_on_page(reply.text)
        if shown is None:
            return (
                f"the master's web UI at {page} shows no REST URL: its REST gateway is off; "
                "set spark.master.rest.enabled=true on the master (SPARK_MASTER_OPTS or "
                "spark-defaults.conf) and restart it",
                False,
            )
        if shown.rstrip("/") == self.rest:
            return f"the master's web UI at {page} shows this very gateway: try again", False
        # Only another port proves the request went elsewhere: the same gateway may be shown
        # under another name for its host (an IP address for a DNS name), and a request it
        # received may have started a driver.
        elsewhere = urllib.parse.urlsplit(shown).port != urllib.parse.urlsplit(self.rest).port
        return (
            f"the master's web UI at {page} shows its REST gateway: give --rest-gateway {shown}",
            elsewhere,
        )

    def spark_version(self) -> str | None:
        """The master's Spark, from its gateway's answer (every answer names it); None when the
        gateway cannot be asked now."""
        if self._server_version is None:
            try:
                reply = self._call("GET", "/v1/submissions/status/flink-sql-runner-version-probe")
            except FsrError:
                return None
            doc = reply.doc if isinstance(reply.doc, dict) else {}
            found = doc.get("serverSparkVersion")
            self._server_version = str(found) if found else None
        return self._server_version

    def listing(self) -> list[Listed]:
        reply = http.call(
            "GET",
            f"{self.web_ui}/json/",
            what="the Spark master's web UI",
            timeout=self.timeout,
            hint="set --cluster-api to it",
        )
        if reply.status != 200 or not isinstance(reply.doc, dict):
            raise ClusterError(
                f"the Spark master's web UI at {self.web_ui}/json/ answered HTTP {reply.status}, "
                "not its state as JSON (set --cluster-api to the master's web UI)"
            )
        return [
            Listed(
                app["name"],
                f"{app.get('id', '?')}",
                started=float(app.get("starttime", 0)),
                liveness=(
                    Liveness.ALIVE
                    if str(app.get("state", "RUNNING")) in ALIVE_APP_STATES
                    else Liveness.UNKNOWN
                ),
            )
            for app in reply.doc.get("activeapps", [])
            if isinstance(app, dict) and isinstance(app.get("name"), str)
        ]

    def request(self, submission: Submission) -> dict[str, Any]:
        """The CreateSubmissionRequest; secret properties travel in its body, as they do when
        spark-submit uses the gateway, never on a command line."""
        script = posixpath.basename(urllib.parse.urlsplit(self.runner).path)
        properties = {
            **submission.spark_conf,
            **submission.secret_conf,
            "spark.app.name": submission.app_name,
            "spark.master": self.master,
            "spark.submit.deployMode": "cluster",
            "spark.driver.supervise": "false",
        }
        server = version_tuple(self.spark_version())
        if server is not None and server < (4, 0, 0):
            own = properties.get("spark.driver.extraJavaOptions", "")
            properties["spark.driver.extraJavaOptions"] = f"{JAVA_17_OPTIONS} {own}".strip()
        return {
            "action": "CreateSubmissionRequest",
            "appResource": self.runner,
            "mainClass": PYTHON_RUNNER,
            # PythonRunner's arguments: the script (fetched into the driver's folder, which is
            # its working directory), the py-files (none), then the runner's own arguments.
            "appArgs": [script, "", "--manifest", submission.runtime_manifest]
            + (["--package", submission.runner_package] if submission.runner_package else []),
            "clientSparkVersion": importlib.metadata.version("pyspark"),
            "environmentVariables": {},
            "sparkProperties": properties,
        }

    def submit_run(self, submission: Submission) -> str:
        run = Run(submission.name, submission.version, submission.run_id, "submission unknown")
        try:
            reply = self._call("POST", "/v1/submissions/create", self.request(submission))
        except http.Unreachable as exc:
            if exc.maybe_sent:
                raise SubmitOutcomeUnknown(
                    f"the submission's answer was lost: {exc}", run
                ) from None
            raise
        doc = reply.doc if isinstance(reply.doc, dict) else {}
        if reply.status == 200 and doc.get("success") and doc.get("submissionId"):
            return str(doc["submissionId"])
        said = first_line(str(doc.get("message") or reply.text)) or f"HTTP {reply.status}"
        if reply.status in AMBIGUOUS_STATUSES or (reply.status >= 500 and not doc):
            raise SubmitOutcomeUnknown(
                f"the Spark master's gateway answered HTTP {reply.status} to the submission "
                f"({said}): it may or may not have been accepted",
                run,
            )
        raise ClusterError(f"the Spark master refused the submission: {said}")

    def driver_state(self, submission_id: str) -> DriverState:
        """The master's answer; an error answer (a 503 from a gateway in front of it) is not
        knowledge, and neither is the master's own UNKNOWN (while it recovers)."""
        reply = self._call("GET", f"/v1/submissions/status/{submission_id}")
        doc = reply.doc if isinstance(reply.doc, dict) else {}
        if reply.status != 200 or "success" not in doc:
            said = first_line(str(doc.get("message") or reply.text)) or "no answer"
            return DriverState(Liveness.UNKNOWN, f"HTTP {reply.status}", said)
        if not doc.get("success"):
            said = first_line(str(doc.get("message") or "")) or "the master does not know it"
            return DriverState(Liveness.GONE, "unknown to the master", said)
        state = str(doc.get("driverState") or "UNKNOWN")
        message = first_line(str(doc.get("message") or ""))
        worker = doc.get("workerHostPort")
        if worker and state not in ("SUBMITTED",):
            message = f"{message} (driver log: work folder {submission_id} on worker {worker})"
        liveness = Liveness.of(state, ALIVE_STATES, GONE_STATES)
        return DriverState(liveness, state, message.strip())

    def log_of(self, submission_id: str, run_id: str | None, version: int | None) -> DriverLog:
        """A driver logs to `<work dir>/<driver id>/stderr` (Spark's log) and `stdout` (the
        runner's own lines) on the worker that runs it. Read when they are on this machine (a
        worker here, its work dir $SPARK_WORKER_DIR or $SPARK_HOME/work); otherwise said
        where they are."""
        for work in worker_dirs():
            path = work / submission_id / "stderr"
            if path.is_file():
                out = path.with_name("stdout")
                more = (str(out),) if out.is_file() else ()
                return DriverLog(str(path), str(path), run_id, version, more)
        where = (
            f"{submission_id}/stderr (and stdout) in the work folder of the worker that runs it "
            f"(not on this machine; the master's web UI at {self.web_ui} links it)"
        )
        return DriverLog(where, "", run_id, version)

    def kill(self, submission_id: str) -> None:
        reply = self._call("POST", f"/v1/submissions/kill/{submission_id}")
        doc = reply.doc if isinstance(reply.doc, dict) else {}
        if reply.status == 200 and doc.get("success"):
            return
        if self._state(submission_id, fresh=True).liveness is Liveness.GONE:
            return  # "has already finished or does not exist"
        said = first_line(str(doc.get("message") or reply.text)) or f"HTTP {reply.status}"
        raise ClusterError(f"the Spark master did not kill {submission_id}: {said}")
