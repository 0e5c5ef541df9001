"""Review: the page server, `watch --metrics-port` beside it and the plans given (each test
fails today)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import flink_sql_runner.ui.plans as plans_module
from flink_sql_runner.cli.watch import _serve
from flink_sql_runner.ui.server import _Handler
from flink_sql_runner.watch.metrics import Metrics
from tests.ui.world import PageWorld


def raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("request_line", [b"TRACE / HTTP/1.1", b"PROPFIND / HTTP/1.1",
                                          b"GET /" + b"a" * 70_000 + b" HTTP/1.1"])  # fmt: skip
def test_answers_the_standard_library_makes_carry_the_policy_too(server, request_line) -> None:
    """The promise "every answer forbids scripts, frames and anything fetched from elsewhere"
    (ui/server.py): the 501 and 414 answers BaseHTTPRequestHandler.send_error writes, as
    HTML, carry none of the headers."""
    host = f"Host: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode()
    answer = raw(server.port, request_line + b"\r\n" + host)
    head = answer.split(b"\r\n\r\n")[0].decode("latin-1")
    assert "Content-Security-Policy: default-src 'none'" in head, head
    assert "X-Frame-Options: DENY" in head, head


def test_a_connection_that_never_sends_its_request_is_not_kept_forever() -> None:
    """No timeout on the handler: every connection that sends nothing (a browser's
    speculative one, or anyone's) holds a thread until the client goes; they are not
    counted or bounded."""
    assert _Handler.timeout is not None


def test_watch_metrics_on_every_interface_do_not_serve_the_pages_unasked(tmp_path: Path) -> None:
    """`--metrics-address 0.0.0.0` is what the help says a pod uses for Prometheus; since the
    pages moved beside /metrics, whoever reaches the metrics port reads every job's SQL,
    driver log, checkpoint and history, and any Host is answered (no DNS-rebinding guard off
    loopback). `ui` warns when it listens off loopback; `watch` says nothing, and there is no
    way to serve the metrics alone. (Tests listen on 127.0.0.1 only: what 0.0.0.0 decides is
    asked of `pages_beside_metrics`, and the server it makes is listened to on 127.0.0.1.)"""
    from flink_sql_runner.cli.watch import pages_beside_metrics

    assert pages_beside_metrics("0.0.0.0", None) is False
    assert pages_beside_metrics("0.0.0.0", True) is True
    assert pages_beside_metrics("127.0.0.1", None) is True
    assert pages_beside_metrics("127.0.0.1", False) is False
    world = PageWorld(tmp_path)
    world.job("alpha")
    server = _serve(world.deployment, Metrics(), "127.0.0.1", 0, pages=False)
    try:
        host = f"Host: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode()
        metrics = raw(server.port, b"GET /metrics HTTP/1.1\r\n" + host)
        assert metrics.startswith(b"HTTP/1.0 200")
        page = raw(server.port, b"GET /jobs/alpha HTTP/1.1\r\n" + host)
        assert not page.startswith(b"HTTP/1.0 200"), page[:200]
    finally:
        server.close()


def test_a_plan_file_that_did_not_change_is_not_parsed_again_on_every_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan of up to 64 MiB is read, parsed, checked against its shape and rendered on every
    view (7 MB, 12,000 jobs: 3.4 s of CPU a view on this machine): a page left reloading
    keeps a core busy."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"jobs": []}))
    world = PageWorld(tmp_path)
    parsed = []
    original = plans_module.read_plan_json

    def counting(raw_text):
        parsed.append(1)
        return original(raw_text)

    monkeypatch.setattr(plans_module, "read_plan_json", counting)
    pages = world.pages(plans=(plan,))
    for _ in range(3):
        assert pages.answer("/plans/1").status == 200
    assert len(parsed) == 1, len(parsed)
