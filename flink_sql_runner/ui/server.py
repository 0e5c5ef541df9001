"""The page server: the standard library's threading HTTP server, answering GET and HEAD only.

- On 127.0.0.1 unless another address is asked for; then the command says so when it starts.
- On a loopback address it answers only requests whose Host header names this machine
  (127.0.0.1, localhost, ::1 at its port): a web page elsewhere cannot read it through a name
  of its own pointed at 127.0.0.1 (DNS rebinding).
- Every answer forbids scripts, frames and anything fetched from elsewhere (its
  Content-Security-Policy: the pages have no script at all), and is not cached but the style
  sheet.
- Any other method is refused (405): there is no endpoint that changes anything.
"""

from __future__ import annotations

import ipaddress
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flink_sql_runner.errors import EXIT_INVALID, FsrError
from flink_sql_runner.host import runtime
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.ui.pages import Pages, Response

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class PortUnusable(FsrError):
    """--port / --address cannot be listened on (in use, not this machine's)."""

    exit_code = EXIT_INVALID


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    pages: Pages
    hosts: frozenset[str] | None  # None: any Host (an address other than loopback was asked)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "flink-sql-runner"
    sys_version = ""
    #: Seconds a connection may stay silent: each holds a thread meanwhile.
    timeout = 30

    def end_headers(self) -> None:
        """Every answer carries the policy, the standard library's own (501, 414, 400) too."""
        if not getattr(self, "_policy_sent", False):
            for name, value in HEADERS.items():
                self.send_header(name, value)
        self._policy_sent = False
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def _refuse_method(self) -> None:
        self._send(Response(405, "text/plain; charset=utf-8", b"read only: GET and HEAD\n",
                            {"Allow": "GET, HEAD"}), body=True)  # fmt: skip

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

    def _answer(self, body: bool) -> None:
        hosts = self.server.hosts
        if hosts is not None and (self.headers.get("Host") or "").lower() not in hosts:
            refused = b"this page answers to 127.0.0.1 and localhost only\n"
            self._send(Response(421, "text/plain; charset=utf-8", refused), body)
            return
        try:
            response = self.server.pages.answer(self.path)
        except Exception as exc:  # one page's failure is that page's, never the server's
            message = redact_text(
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
            response = Response(500, "text/plain; charset=utf-8",
                                f"this page failed: {message}\n".encode())  # fmt: skip
        self._send(response, body)

    def _send(self, response: Response, body: bool) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in {**HEADERS, "Cache-Control": "no-store", **response.headers}.items():
            self.send_header(name, value)
        self._policy_sent = True
        self.end_headers()
        if body:
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are not logged: the command's own lines say what it serves


class PageServer:
    """The server on its own thread; `port` is the one bound (port 0: any free one)."""

    def __init__(
        self, pages: Pages, address: str, port: int, option: str = "--port", what: str = "pages"
    ) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        server = type("_Server", (_Server,), {"address_family": family})
        try:
            self._server = server((address, port), _Handler)
        except OSError as exc:
            raise PortUnusable(
                f"{option} {port}: cannot serve {what} on {address}:{port}: {exc.strerror or exc}"
            ) from None
        self.port = int(self._server.server_address[1])
        self.address = address
        self._server.pages = pages
        self._server.hosts = (
            frozenset(
                f"{name}:{self.port}" for name in ("127.0.0.1", "localhost", "[::1]", address)
            )
            if is_loopback(address)
            else None
        )
        self._thread = runtime.thread(self._server.serve_forever, "ui")
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
