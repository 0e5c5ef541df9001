"""A small fake of WebHDFS (the NameNode's REST API, with its datanode redirects) on 127.0.0.1,
for the faults a real NameNode cannot be made to show on cue: a 503 or a request that never gets
an answer, on one operation. Everything else the tests check against the real MiniDFSCluster
(tests/stores/test_storage_hdfs.py runs the same contract on both).

It answers OPEN and CREATE with a 307 to its own `/datanode` path, as a NameNode sends a client to a
datanode, and RENAME, DELETE, LISTSTATUS, GETCONTENTSUMMARY as WebHDFS documents them. Files are
kept in memory, by absolute path. `fail(op, status)` makes the next `op` answer `status` (or
`hang(op)`: no answer until the test ends); `where="datanode"` puts the fault on the redirected
half of OPEN or CREATE.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeWebHdfs:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, str] = {}
        #: Each file's modificationTime: a count of writes here (the real one is the NameNode's
        #: milliseconds; only its moving matters).
        self.mtimes: dict[str, int] = {}
        self._writes = 0
        self.faults: dict[tuple[str, str], int | None] = {}
        self.requests: list[tuple[str, str, str]] = []  # (method, op, path)
        self.standby = False  # a standby NameNode: every NameNode call answers StandbyException
        self.release = threading.Event()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_PUT(self) -> None:
                fake._handle(self, "PUT")

            def do_DELETE(self) -> None:
                fake._handle(self, "DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeWebHdfs:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def fail(self, op: str, status: int = 503, where: str = "namenode") -> None:
        self.faults[(where, op)] = status

    def hang(self, op: str, where: str = "namenode") -> None:
        self.faults[(where, op)] = None

    # -- the server side --

    def _folders(self) -> set[str]:
        folders = {"/"}
        for path in self.files:
            parts = path.split("/")[1:-1]
            for i in range(1, len(parts) + 1):
                folders.add("/" + "/".join(parts[:i]))
        return folders

    def _handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urllib.parse.urlsplit(request.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        where = "datanode" if parsed.path.startswith("/datanode") else "namenode"
        prefix = "/datanode" if where == "datanode" else "/webhdfs/v1"
        path = urllib.parse.unquote(parsed.path[len(prefix) :]) or "/"
        op = query.get("op", "")
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append((method, op, path))
            fault = self.faults.pop((where, op), "none")
        if fault is None:
            self.release.wait(60)
            return
        if fault != "none":
            self._send(request, int(fault), {"RemoteException": {"message": "fake fault"}})
            return
        if self.standby and where == "namenode":
            standby = {"exception": "StandbyException", "message": "Operation category READ"}
            self._send(request, 403, {"RemoteException": standby})
            return
        if "user.name" not in query:
            self._send(request, 401, {"RemoteException": {"message": "no user.name"}})
            return
        with self._lock:
            status, doc, location = self._answer(where, method, op, path, query, body)
        if location:
            request.send_response(307)
            request.send_header("Location", location)
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        self._send(request, status, doc)

    def _answer(
        self, where: str, method: str, op: str, path: str, query: dict[str, str], body: bytes
    ) -> tuple[int, Any, str | None]:
        folders = self._folders()
        missing = {"RemoteException": {"exception": "FileNotFoundException", "message": "nope"}}
        redirect = f"{self.url}/datanode{urllib.parse.quote(path)}?{urllib.parse.urlencode(query)}"
        if (method, op) == ("GET", "OPEN"):
            if path in folders:
                not_file = {"exception": "FileNotFoundException", "message": "Path is not a file"}
                return 404, {"RemoteException": not_file}, None
            if path not in self.files:
                return 404, missing, None
            if where == "namenode":
                return 0, None, redirect
            return 200, self.files[path], None
        if (method, op) == ("PUT", "CREATE"):
            if where == "namenode":
                return 0, None, redirect
            self.files[path] = body
            self.modes[path] = query.get("permission", "644")
            self._writes += 1
            self.mtimes[path] = self._writes
            return 201, None, None
        if (method, op) == ("PUT", "RENAME"):
            if path not in self.files:
                return 404, missing, None
            self.files[query["destination"]] = self.files.pop(path)
            self.modes[query["destination"]] = self.modes.pop(path)
            self.mtimes[query["destination"]] = self.mtimes.pop(path, 0)
            return 200, None, None
        if (method, op) == ("DELETE", "DELETE"):
            gone = [p for p in self.files if p == path or p.startswith(path.rstrip("/") + "/")]
            for name in gone:
                del self.files[name]
            return 200, {"boolean": bool(gone)}, None
        if (method, op) == ("GET", "LISTSTATUS"):
            if path in self.files:
                entry = {"pathSuffix": "", "type": "FILE", "length": len(self.files[path])}
                return 200, {"FileStatuses": {"FileStatus": [entry]}}, None
            if path not in folders:
                return 404, missing, None
            base = path.rstrip("/") + "/"
            entries = {}
            for name, data in self.files.items():
                if name.startswith(base):
                    first, _, rest = name[len(base) :].partition("/")
                    kind = "DIRECTORY" if rest else "FILE"
                    entries[first] = {"pathSuffix": first, "type": kind, "length": len(data),
                                      "modificationTime": self.mtimes.get(name, 0)}  # fmt: skip
            return 200, {"FileStatuses": {"FileStatus": list(entries.values())}}, None
        if (method, op) == ("GET", "GETCONTENTSUMMARY"):
            if path not in folders and path not in self.files:
                return 404, missing, None
            count = sum(1 for p in self.files if p == path or p.startswith(path + "/"))
            return 200, {"ContentSummary": {"fileCount": count}}, None
        return 400, {"RemoteException": {"message": f"unknown {method} {op}"}}, None

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, doc: Any) -> None:
        raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode() if doc else b""
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(raw)))
        request.end_headers()
        request.wfile.write(raw)
