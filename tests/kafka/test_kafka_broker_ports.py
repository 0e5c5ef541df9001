"""The tests' broker starts again on other ports when one it was given is taken before it binds
it (another process's socket in the seconds its two JVMs take to start): CI would otherwise
lose every Kafka test to a port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support import kafka_broker
from tests.support.kafka_broker import BIND_FAILED, Broker

pytestmark = [pytest.mark.kafka]


def test_a_broker_whose_port_was_taken_starts_again_on_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        given = iter([port])  # the first port the broker is given is this one, taken
        free = kafka_broker.free_port
        monkeypatch.setattr(kafka_broker, "free_port", lambda: next(given, None) or free())
        broker = Broker.start(tmp_path, attempts=2)
        try:
            said = (tmp_path / "broker.out").read_text(errors="replace")
            said += (tmp_path / "broker.log").read_text(errors="replace")
            assert any(word in said for word in BIND_FAILED), said[-2000:]
            assert broker.folder == tmp_path / "attempt-2" and broker.port != port
            broker.wait_ready(timeout=30)  # it answers on its own ports
        finally:
            broker.stop()
    assert broker.process.poll() is not None
