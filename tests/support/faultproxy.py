"""A fault-injecting HTTP reverse proxy on 127.0.0.1, in front of moto's S3 server, for tests.

    with FaultProxy(upstream_url) as proxy:
        proxy.inject("slowdown", times=2, method="GET", path="/bucket/jobs/a.yaml")
        client = ...client(endpoint_url=proxy.url)...
        ...
        proxy.seen("GET", "/bucket/jobs/a.yaml")  # every such request, with its fault or None

Faults (each answers the next `times` matching requests, then requests pass again):

- "slowdown": 503 with S3's `SlowDown` XML error (S3's own throttling answer).
- "internal": 500 with S3's `InternalError` XML error.
- "throttle": 429 with a `Throttling` XML error (what throttling gateways answer).
- "reset": forward the request, then send the status line, the headers and half of the body
  and drop the connection (a response cut mid-transfer; the upstream did the work). An answer
  without a body (PutObject's) is dropped before its status line.
- "cut-request": forward the request headers and half of its body to the upstream, then drop
  both connections without an answer (an upload cut mid-transfer).
- "delay": wait `seconds`, then forward normally.
- "drop-conditions": forward without `If-Match` / `If-None-Match` (an endpoint that ignores
  conditional writes).

`proxy.rewrite(path, change)`: every 2xx answer to a request for `path` (without the query)
reaches the client as `change(body)` (an API whose listing order is not promised, listed in
the order a test wants).

Only the standard library; every thread and socket is closed by `stop()` (or leaving `with`).
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

ERROR_ANSWERS = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "internal": (500, "InternalError", "We encountered an internal error. Please try again."),
    "throttle": (429, "Throttling", "Rate exceeded."),
}
FAULTS = (*ERROR_ANSWERS, "reset", "cut-request", "delay", "drop-conditions")
CONDITION_HEADERS = frozenset({"if-match", "if-none-match"})
#: Headers that describe one hop of a connection, not the message: never forwarded as they are.
HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "expect", "te", "trailer", "upgrade"}
)


@dataclass
class Rule:
    fault: str
    times: int
    method: str | None = None
    path: str | None = None
    seconds: float = 0.0

    def matches(self, method: str, path: str) -> bool:
        return (
            self.times > 0
            and self.method in (None, method)
            and (self.path is None or self.path == path)
        )


@dataclass(frozen=True)
class Seen:
    """One request the proxy received: what, where, and the fault it got (None: passed)."""

    method: str
    path: str
    fault: str | None
    body_bytes: int = 0
    forwarded_bytes: int = 0


@dataclass
class _State:
    rules: list[Rule] = field(default_factory=list)
    rewrites: dict[str, Callable[[bytes], bytes]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    sockets: set[socket.socket] = field(default_factory=set)


class FaultProxy:
    """Reverse proxy on 127.0.0.1:<free port> forwarding to `upstream` (http://host:port)."""

    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.port is None:
            raise ValueError(f"upstream must be http://127.0.0.1:<port>, got {upstream!r}")
        self._state = _State()
        handler = type("Handler", (_Handler,), {"state": self._state, "upstream": parts.port})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end pending delays, close every connection."""
        state = self._state
        state.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
        with state.lock:
            for sock in list(state.sockets):
                _close(sock)
            state.sockets.clear()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def inject(
        self,
        fault: str,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        seconds: float = 0.0,
    ) -> None:
        """Give the next `times` requests matching `method` and `path` (exact, without the
        query; None matches any) this fault. Rules are used in the order they were added."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        with self._state.lock:
            self._state.rules.append(Rule(fault, times, method, path, seconds))

    def rewrite(self, path: str, change: Callable[[bytes], bytes]) -> None:
        """Answer every 2xx reply to a request for `path` (exact, without the query) with
        `change(body)` instead of its body."""
        with self._state.lock:
            self._state.rewrites[path] = change

    def clear(self) -> None:
        """Drop the remaining faults and forget the requests seen."""
        with self._state.lock:
            self._state.rules.clear()
            self._state.seen.clear()

    def seen(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        """The requests received so far, oldest first, optionally only these."""
        with self._state.lock:
            return [
                s for s in self._state.seen if method in (None, s.method) and path in (None, s.path)
            ]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up (e.g. after its read timeout) is part of the game


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State
    upstream: int  # port on 127.0.0.1

    def setup(self) -> None:
        super().setup()
        with self.state.lock:
            self.state.sockets.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.state.lock:
                self.state.sockets.discard(self.connection)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # quiet: the test reads `seen()` instead

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._proxy()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    # -- one request --------------------------------------------------------------------------
    def _proxy(self) -> None:
        path = urlsplit(self.path).path
        body = self._read_body()
        rule = self._take_rule(self.command, path)
        fault = rule.fault if rule else None
        forwarded = len(body) // 2 if fault == "cut-request" else len(body)
        with self.state.lock:  # before answering: a test may look as soon as it has its answer
            self.state.seen.append(Seen(self.command, path, fault, len(body), forwarded))
        if fault in ERROR_ANSWERS:
            self._answer_error(*ERROR_ANSWERS[fault])
        elif fault == "cut-request":
            self._cut_request(body[:forwarded])
        elif fault == "delay" and self.state.stopping.wait(rule.seconds if rule else 0):
            return
        else:
            status, headers, data = self._forward(body, drop=fault == "drop-conditions")
            with self.state.lock:
                change = self.state.rewrites.get(path)
            if change is not None and 200 <= status < 300:
                data = change(data)
            self._answer(status, headers, data, cut=fault == "reset")

    def _take_rule(self, method: str, path: str) -> Rule | None:
        with self.state.lock:
            for rule in self.state.rules:
                if rule.matches(method, path):
                    rule.times -= 1
                    return rule
        return None

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunk = self.rfile.read(size + 2)[:size]  # the chunk and its CRLF
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(chunk)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _request_headers(self, body: bytes, drop: bool = False) -> dict[str, str]:
        dropped = HOP_HEADERS | (CONDITION_HEADERS if drop else frozenset())
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        headers.pop("Content-Length", None)
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        return headers

    def _forward(self, body: bytes, drop: bool = False) -> tuple[int, list[tuple[str, str]], bytes]:
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=60)
        try:
            upstream.request(self.command, self.path, body, self._request_headers(body, drop))
            response = upstream.getresponse()
            data = response.read()
            return response.status, response.getheaders(), data
        finally:
            upstream.close()

    def _answer(
        self, status: int, headers: list[tuple[str, str]], data: bytes, cut: bool = False
    ) -> None:
        if cut and not data:  # nothing to cut short: hang up before answering at all
            self.close_connection = True
            _close(self.connection)
            return
        self.send_response_only(status)
        length = None
        for name, value in headers:
            if name.lower() == "content-length":
                length = value
            elif name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        if self.command == "HEAD":
            self.send_header("Content-Length", length or "0")
            self.end_headers()
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not cut:
            self.wfile.write(data)
            return
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True
        _close(self.connection)

    def _answer_error(self, status: int, code: str, message: str) -> None:
        data = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<Resource>{escape(self.path)}</Resource><RequestId>fault-proxy</RequestId></Error>"
        ).encode()
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", "fault-proxy")]
        self._answer(status, headers, data)

    def _cut_request(self, part: bytes) -> None:
        """Send the upstream the headers, announcing the whole body, and only `part` of it;
        then hang up on both sides."""
        body_length = int(self.headers.get("Content-Length") or 0)
        headers = self._request_headers(b"")
        headers["Content-Length"] = str(max(body_length, len(part) * 2))
        head = [f"{self.command} {self.path} HTTP/1.1"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append("Connection: close")
        with socket.create_connection(("127.0.0.1", self.upstream), timeout=60) as upstream:
            upstream.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + part)
            upstream.shutdown(socket.SHUT_WR)
            try:  # let the upstream see the short body and answer (it must not store it)
                while upstream.recv(65536):
                    pass
            except OSError:
                pass
        self.close_connection = True
        _close(self.connection)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
