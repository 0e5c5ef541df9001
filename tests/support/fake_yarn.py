"""A small fake of the YARN ResourceManager's REST API on 127.0.0.1, for the yarn target's tests.

It answers the calls the Hadoop documentation describes ("ResourceManager REST API's": Cluster
Applications API, Cluster Application API, Cluster Application State API) the way it shows them,
and checks every request against it: method, path, the documented query parameters and their
values, the Accept and Content-Type headers and the PUT body. Anything else is recorded in
`violations` (and answered the way the real one would: 404, 400 or 403), so a test fails if the
target sends a request a real ResourceManager would not understand.

A stand-in spark-submit (`FAKE_SPARK_SUBMIT`) reports its argument list through one side door
that is not part of the API, `POST /fake/submit`; the fake then plays the driver: it marks the
run active in its status file, finishes it when its stop marker appears (unless `honour_marker`
is off) and writes the status file as the runner would.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flink_sql_runner.stores.storage import FileStorage

STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED")
FINAL_STATUSES = ("UNDEFINED", "SUCCEEDED", "FAILED", "KILLED")
#: Query parameters of GET /ws/v1/cluster/apps in the documentation (`name` since Hadoop 3.3),
#: plus `user.name`, which the simple authentication filter reads on every path.
APPS_PARAMETERS = {
    "state", "states", "finalStatus", "user", "queue", "limit", "startedTimeBegin",
    "startedTimeEnd", "finishedTimeBegin", "finishedTimeEnd", "applicationTypes",
    "applicationTags", "name", "deSelects", "user.name",
}  # fmt: skip
APP_ID = re.compile(r"^application_\d+_\d{4,}$")
CLUSTER_ID = 1795400000000

FAKE_SPARK_SUBMIT = """#!{python}
import json, os, sys, urllib.request
args = sys.argv[1:]
with open(os.environ["FAKE_ARGS_FILE"], "a") as log:
    log.write(json.dumps(args) + "\\n")
print("WARNING: Using incubator modules: jdk.incubator.vector", flush=True)
if os.environ.get("FAKE_SUBMIT_FAILS"):
    print("26/11/23 04:01:44 INFO Client: Requesting a new application from cluster with 1 "
          "NodeManagers")
    print('Exception in thread "main" org.apache.hadoop.yarn.exceptions.'
          "InvalidResourceRequestException: Invalid resource request! Cannot allocate containers "
          "as requested resource is greater than maximum allowed allocation. Requested resource "
          "type=[memory-mb], Requested resource=<memory:66560, vCores:1>, maximum allowed "
          "allocation=<memory:8192, vCores:4>")
    print("\\tat org.apache.hadoop.yarn.server.resourcemanager.RMServerUtils.validate")
    sys.exit(1)
properties = None
if "--properties-file" in args:
    with open(args[args.index("--properties-file") + 1]) as handle:
        properties = handle.read()
body = json.dumps({{"argv": args, "properties": properties}}).encode()
request = urllib.request.Request(os.environ["FAKE_RM"] + "/fake/submit", data=body, method="POST")
app = json.load(urllib.request.urlopen(request, timeout=30))["id"]
print(f"26/11/23 04:01:50 INFO Client: Submitted application {{app}}", flush=True)
"""


@dataclass
class FakeApp:
    id: str
    name: str
    tags: list[str]
    manifest: dict[str, Any]
    state: str = "ACCEPTED"
    final_status: str = "UNDEFINED"
    diagnostics: str = ""
    started: int = field(default_factory=lambda: int(time.time() * 1000))
    finished: int = 0
    waiting: bool = False  # a prepared run before its word

    def to_json(self, rm: str) -> dict[str, Any]:
        """An app object as the documentation's examples show it."""
        now = int(time.time() * 1000)
        return {
            "id": self.id,
            "user": "ci",
            "name": self.name,
            "queue": "default",
            "state": self.state,
            "finalStatus": self.final_status,
            "progress": 100.0 if self.finished else 10.0,
            "trackingUI": "History" if self.finished else "ApplicationMaster",
            "trackingUrl": f"{rm}/proxy/{self.id}/",
            "diagnostics": self.diagnostics,
            "clusterId": CLUSTER_ID,
            "applicationType": "SPARK",
            "applicationTags": ",".join(self.tags),
            "startedTime": self.started,
            "finishedTime": self.finished,
            "elapsedTime": (self.finished or now) - self.started,
            "amContainerLogs": f"http://nm-1:8042/node/containerlogs/container_{self.id[12:]}_01/ci",
            "amHostHttpAddress": "nm-1:8042",
            "allocatedMB": 0 if self.finished else 2048,
            "allocatedVCores": 0 if self.finished else 2,
            "runningContainers": 0 if self.finished else 2,
            "memorySeconds": 1024,
            "vcoreSeconds": 1,
            "unmanagedApplication": False,
            "applicationPriority": 0,
            "appNodeLabelExpression": "",
            "amNodeLabelExpression": "",
        }

    def end(self, state: str, final_status: str, diagnostics: str = "") -> None:
        self.state, self.final_status, self.diagnostics = state, final_status, diagnostics
        self.finished = int(time.time() * 1000)


class FakeResourceManager:
    def __init__(self, s3_client: Any = None):
        self.s3_client = s3_client
        self.apps: dict[str, FakeApp] = {}
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self.violations: list[str] = []
        self.submissions: list[dict[str, Any]] = []
        self.honour_marker = True
        #: A prepared run's application is never placed (ACCEPTED until killed): a cluster
        #: without room for a second driver beside the running one.
        self.hold_prepared = False
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeResourceManager:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def api_requests(self, method: str | None = None) -> list[tuple[str, str, dict]]:
        return [r for r in self.requests if method in (None, r[0])]

    # -- the driver it plays ---------------------------------------------------------------
    def _read(self, location: str) -> str | None:
        return FileStorage(self.s3_client).read_text(location)

    def _write_status(self, app: FakeApp, state: str, location: str | None = None) -> None:
        doc = {"run-id": app.manifest["run-id"], "state": state, "batch-id": 0, "error": None}
        where = location or app.manifest["status-file"]
        FileStorage(self.s3_client).write_text(where, json.dumps(doc))

    def _advance(self, app: FakeApp) -> None:
        """ACCEPTED -> RUNNING; RUNNING -> FINISHED once the stop marker is there. A prepared
        run (runner/prepare.py) says `ready` on its own status file and waits for the word
        naming it: the go (then `active` on the version's), or an abort or its own marker."""
        prepare = app.manifest.get("prepare")
        if app.state == "ACCEPTED" and prepare and self.hold_prepared:
            return
        if app.state == "ACCEPTED":
            app.state = "RUNNING"
            if prepare:
                app.waiting = True
                self._write_status(app, "ready", prepare["status-file"])
            else:
                self._write_status(app, "active")
        elif app.state == "RUNNING" and app.waiting:
            word = json.loads(self._read(prepare["go-file"]) or "{}")
            if word.get("run-id") == app.manifest["run-id"] and word.get("go") is True:
                app.waiting = False
                self._write_status(app, "active")
            elif word.get("run-id") == app.manifest["run-id"] or self._read(prepare["stop-marker"]):
                app.end("FINISHED", "SUCCEEDED")
                self._write_status(app, "aborted", prepare["status-file"])
        elif app.state == "RUNNING" and self.honour_marker:
            if self._read(app.manifest["stop-marker"]) is not None:
                app.end("FINISHED", "SUCCEEDED")
                self._write_status(app, "stopped")

    def fail(self, app_id: str, diagnostics: str) -> None:
        with self.lock:
            self.apps[app_id].end("FAILED", "FAILED", diagnostics)

    def _submit(self, body: dict[str, Any]) -> FakeApp:
        argv = body["argv"]
        conf = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--conf")
        manifest_location = argv[argv.index("--manifest") + 1]
        manifest = json.loads(self._read(manifest_location) or "{}")
        app_id = f"application_{CLUSTER_ID}_{len(self.apps) + 1:04d}"
        tags = [t.strip().lower() for t in conf.get("spark.yarn.tags", "").split(",") if t]
        app = FakeApp(app_id, argv[argv.index("--name") + 1], tags, manifest)
        self.apps[app_id] = app
        self.submissions.append(body)
        return app

    # -- the REST API --------------------------------------------------------------------
    def _apps(self, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        unknown = set(query) - APPS_PARAMETERS
        if unknown:
            self.violations.append(f"GET /ws/v1/cluster/apps: undocumented {sorted(unknown)}")
        states = {
            s.strip().upper() for v in query.get("states", []) for s in v.split(",") if s.strip()
        }
        if states - set(STATES):
            message = f"Invalid application-state {sorted(states - set(STATES))}"
            self.violations.append(message)
            return 400, remote("BadRequestException", message)
        types = {t.strip().upper() for v in query.get("applicationTypes", []) for t in v.split(",")}
        tags = {t.strip().lower() for v in query.get("applicationTags", []) for t in v.split(",")}
        found = []
        for app in self.apps.values():
            self._advance(app)
            if states and app.state not in states:
                continue
            if types and "SPARK" not in types:
                continue
            if tags and not tags & set(app.tags):
                continue
            found.append(app.to_json(self.url))
        return 200, {"apps": {"app": found} if found else None}

    def _app(self, app_id: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        if set(query) - {"user.name"}:
            self.violations.append(f"GET /ws/v1/cluster/apps/{app_id}: no parameters exist")
        app = self.apps.get(app_id)
        if app is None:
            return 404, remote(
                "NotFoundException", f"java.lang.Exception: app with id: {app_id} not found"
            )
        self._advance(app)
        return 200, {"app": app.to_json(self.url)}

    def _kill(self, app_id: str, query: dict, headers: Any, raw: bytes) -> tuple[int, dict]:
        if not query.get("user.name"):
            self.violations.append("PUT .../state without an authenticated user")
            return 403, {}
        if not (headers.get("Content-Type") or "").startswith("application/json"):
            self.violations.append(f"PUT .../state with Content-Type {headers.get('Content-Type')}")
        try:
            wanted = json.loads(raw)["state"]
        except (ValueError, KeyError, TypeError):
            self.violations.append(f"PUT .../state with body {raw!r}")
            return 400, remote("BadRequestException", "java.lang.Exception: malformed appstate")
        if wanted != "KILLED":
            self.violations.append(f"PUT .../state to {wanted}")
            return 400, remote(
                "BadRequestException",
                "java.lang.Exception: Only 'KILLED' is allowed as a target state.",
            )
        app = self.apps.get(app_id)
        if app is None:
            return 404, remote(
                "NotFoundException", f"java.lang.Exception: app with id: {app_id} not found"
            )
        if app.state in ("FINISHED", "FAILED", "KILLED"):
            return 200, {"state": app.state}
        before = app.state
        app.end(
            "KILLED",
            "KILLED",
            f"Application {app_id} was killed by user {query['user.name'][0]} at 127.0.0.1",
        )
        return 202, {"state": before}

    def handle(self, method: str, target: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        parsed = urllib.parse.urlsplit(target)
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        path = parsed.path
        with self.lock:
            if method == "POST" and path == "/fake/submit":
                return 200, {"id": self._submit(json.loads(raw)).id}
            self.requests.append((method, path, query))
            if "json" not in (headers.get("Accept") or ""):
                self.violations.append(f"{method} {path}: Accept {headers.get('Accept')}")
            match = re.fullmatch(r"/ws/v1/cluster/apps(?:/([^/]+)(/state)?)?", path)
            app_id = match and match[1]
            if not match or (app_id and not APP_ID.match(app_id)):
                self.violations.append(f"{method} {path}: no such resource")
                return 404, remote("NotFoundException", f"java.lang.Exception: {path} not found")
            if method == "GET" and not app_id:
                return self._apps(query)
            if method == "GET" and not match[2]:
                return self._app(app_id, query)
            if method == "PUT" and match[2]:
                return self._kill(app_id, query, headers, raw)
            self.violations.append(f"{method} {path}: method not allowed")
            return 405, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        rm = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, doc = rm.handle(self.command, self.path, self.headers, raw)
                body = json.dumps(doc).encode() if doc else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = _serve

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def remote(exception: str, message: str) -> dict[str, Any]:
    """An error body as the ResourceManager sends it."""
    return {
        "RemoteException": {
            "exception": exception,
            "message": message,
            "javaClassName": f"org.apache.hadoop.yarn.webapp.{exception}",
        }
    }
