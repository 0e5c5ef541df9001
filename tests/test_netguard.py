"""The suite's guard against leaving this machine (tests/support/netguard.py): a connection off
it is refused and reported to the test; loopback and Unix sockets are untouched."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support import netguard


def test_a_connection_off_this_machine_is_refused_and_reported():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError, match="only this machine"):
        sock.connect(("192.0.2.7", 443))  # TEST-NET-1: never routed
    with socket.socket(socket.AF_INET6) as sock:
        assert sock.connect_ex(("2001:db8::1", 80, 0, 0)) != 0
    assert netguard.taken() == ["192.0.2.7:443", "2001:db8::1:80"]
    assert netguard.taken() == []  # taken once: the test passes


def test_loopback_by_address_or_name_and_unix_sockets_are_let_through(tmp_path: Path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        for host in ("127.0.0.1", "localhost"):
            with socket.create_connection((host, port), timeout=5):
                pass
    with socket.socket(socket.AF_UNIX) as server:
        path = str(tmp_path / "s")
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)
    assert netguard.taken() == []
