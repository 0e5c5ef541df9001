"""Finding the standalone master's REST gateway: port 6066 of the master's host unless
--rest-gateway says otherwise, and, when it does not answer, one line saying which URL to give,
read from the master's web UI page (a stand-in on 127.0.0.1 serving the page the way Spark 4.3's
master renders it; the real master is asked in tests/e2e/test_standalone_lifecycle.py)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from flink_sql_runner.targets import http
from flink_sql_runner.targets.standalone import StandaloneTarget, rest_url_on_page
from tests.support.standalone_cluster import free_port

# The lines of Spark 4.3's master page around its URLs (gateway on).
PAGE_WITH_GATEWAY = """<html><head><title>Spark Master at spark://10.0.0.5:7077</title></head>
<body><ul class="list-unstyled">
              <li><strong>URL:</strong> spark://10.0.0.5:7077</li>
              <li>
                    <strong>REST URL:</strong> spark://10.0.0.5:16066
                    <span class="rest-uri"> (cluster mode)</span>
                  </li>
              <li><strong>Workers:</strong> 1 Alive,
</ul></body></html>"""
PAGE_WITHOUT_GATEWAY = """<html><head><title>Spark Master at spark://10.0.0.5:7077</title></head>
<body><ul class="list-unstyled">
              <li><strong>URL:</strong> spark://10.0.0.5:7077</li>
              <li><strong>Workers:</strong> 1 Alive,
</ul></body></html>"""


@contextmanager
def web_ui(page: str) -> Iterator[str]:
    """A master's web UI serving `page` at /; its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html;charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextmanager
def master_rpc_port(reset: bool = False) -> Iterator[int]:
    """A port that, like the master's own (7077), accepts a connection and closes it without an
    HTTP answer; with `reset`, closes it with a TCP reset, as the master's port does at times."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)  # closing a socket does not wake a thread blocked in accept()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(10)
                connection.recv(65536)
                if reset:  # linger 0: close() sends RST, not FIN
                    connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def test_the_gateway_shown_on_the_masters_page():
    assert rest_url_on_page(PAGE_WITH_GATEWAY) == "http://10.0.0.5:16066"
    assert rest_url_on_page(PAGE_WITHOUT_GATEWAY) is None


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_the_masters_own_port_as_gateway_gets_the_url_to_give(reset: bool):
    """What a user who knows the master by its port 7077 saw: "Remote end closed connection
    without response" or "Connection reset by peer", as the TCP timing had it, and nothing about
    what to give instead. Now one line, either way."""
    with master_rpc_port(reset) as port, web_ui(PAGE_WITH_GATEWAY) as ui:
        target = StandaloneTarget(
            None, f"spark://127.0.0.1:{port}", ui, gateway=f"http://127.0.0.1:{port}", timeout=10
        )
        with pytest.raises(http.Unreachable) as raised:
            target.kill("driver-1")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        f"cannot reach the Spark master's REST gateway at http://127.0.0.1:{port}/v1/"
    )
    assert message.endswith(
        f"the connection was closed without an answer (the master's web UI at {ui}/ shows its "
        "REST gateway: give --rest-gateway http://10.0.0.5:16066)"
    )
    assert not raised.value.maybe_sent, "what is not the gateway never got the request to it"


def test_the_same_port_under_another_host_name_may_be_the_gateway_itself():
    """The page names its host as the master sees it (10.0.0.5); asked as 127.0.0.1 on the same
    port, the request may have reached that very gateway: whether it acted stays unknown."""
    with master_rpc_port() as port, web_ui(PAGE_WITH_GATEWAY.replace("16066", str(port))) as ui:
        target = StandaloneTarget(
            None, f"spark://127.0.0.1:{port}", ui, gateway=f"http://127.0.0.1:{port}", timeout=10
        )
        with pytest.raises(http.Unreachable) as raised:
            target.kill("driver-1")
    assert str(raised.value).endswith(f"give --rest-gateway http://10.0.0.5:{port})")
    assert raised.value.maybe_sent, "unknown is never 'not sent'"


def test_a_master_whose_gateway_is_off_is_told_how_to_turn_it_on():
    closed = free_port()
    with web_ui(PAGE_WITHOUT_GATEWAY) as ui:
        target = StandaloneTarget(None, f"spark://127.0.0.1:{closed}", ui, timeout=10)
        assert target.rest == "http://127.0.0.1:6066", "the default gateway of the master's host"
        target.rest = f"http://127.0.0.1:{closed}"  # 6066 here may belong to another test
        with pytest.raises(http.Unreachable) as raised:
            target.driver_state("driver-1")
    assert str(raised.value).endswith(
        f"(the master's web UI at {ui}/ shows no REST URL: its REST gateway is off; set "
        "spark.master.rest.enabled=true on the master (SPARK_MASTER_OPTS or spark-defaults.conf) "
        "and restart it)"
    )
    assert not raised.value.maybe_sent


def test_with_neither_gateway_nor_web_ui_the_line_names_both_options():
    closed = free_port()
    target = StandaloneTarget(
        None,
        f"spark://127.0.0.1:{closed}",
        f"http://127.0.0.1:{closed}",
        gateway=f"http://127.0.0.1:{closed}",
        timeout=10,
    )
    with pytest.raises(http.Unreachable) as raised:
        target.kill("driver-1")
    assert str(raised.value).endswith(
        f"(nor does the master's web UI at http://127.0.0.1:{closed}/ answer; give the gateway's "
        "URL with --rest-gateway http://MASTER-HOST:PORT, PORT being the master's "
        "spark.master.rest.port (default 6066), and the web UI with --cluster-api; the gateway "
        "needs spark.master.rest.enabled=true on the master)"
    )
