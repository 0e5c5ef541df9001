"""The page server over real HTTP on 127.0.0.1: read only, its headers, and names it answers to."""

from __future__ import annotations

import http.client
import socket
from pathlib import Path

import pytest

from flink_sql_runner.ui.server import PageServer, PortUnusable, is_loopback
from tests.ui.world import PageWorld


def ask(server: PageServer, method: str, path: str, host: str | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"Host": host} if host is not None else {}
        connection.request(method, path, headers=headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def test_pages_and_the_style_sheet_are_served_with_a_policy_that_allows_no_script(server):
    status, headers, body = ask(server, "GET", "/")
    assert status == 200 and b'data-job="alpha"' in body
    policy = headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert headers["X-Frame-Options"] == "DENY" and headers["Cache-Control"] == "no-store"
    status, headers, body = ask(server, "GET", "/static/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css") and body
    status, _, body = ask(server, "HEAD", "/jobs/alpha")
    assert status == 200 and body == b""


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_nothing_but_get_and_head_is_answered(server, method):
    status, headers, _ = ask(server, method, "/jobs/alpha")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.nip.io:{port}", "localhost:1"])
def test_on_loopback_a_host_name_of_elsewhere_is_refused(server, host):
    status, _, body = ask(server, "GET", "/", host=host.format(port=server.port))
    assert status == 421 and b"alpha" not in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
def test_this_machines_names_are_answered(server, host):
    assert ask(server, "GET", "/", host=host.format(port=server.port))[0] == 200


def test_a_port_in_use_is_an_error_of_the_option(tmp_path: Path) -> None:
    world = PageWorld(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortUnusable, match=rf"--metrics-port {port}: cannot serve metrics"):
            PageServer(world.pages(), "127.0.0.1", port, "--metrics-port", "metrics")


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7")
