"""Tests reach only this machine: a connection a test's process opens to any address but the
loopback (127.0.0.0/8, ::1) is refused, as a machine without a network refuses it, and the test
it happened in fails, naming the address (`tests/conftest.py`). Unix sockets pass.

It guards the pytest processes' Python sockets (boto3, urllib, py4j, the standalone REST
client). Not guarded: sockets opened in C (librdkafka, the tests' Kafka clients, given the
broker's 127.0.0.1 address) and what the tests start (spark-submit, a broker, the minicluster),
told 127.0.0.1 by the fixtures that start it."""

from __future__ import annotations

import errno
import ipaddress
import socket
import threading
from typing import Any

_outside: list[str] = []
_lock = threading.Lock()
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _is_loopback(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:  # a host name: what it resolves to
        try:
            found = socket.getaddrinfo(host, None)
        except OSError:
            return True  # resolves to nothing: no connection is made
        return all(_is_loopback(str(entry[4][0])) for entry in found)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _outside_of(sock: socket.socket, address: Any) -> str | None:
    """The address a connection would reach off this machine, else None."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    host, port = address[0], address[1]
    return None if _is_loopback(str(host)) else f"{host}:{port}"


def _refuse(where: str) -> None:
    with _lock:
        _outside.append(where)


def _guarded_connect(self: socket.socket, address: Any) -> None:
    where = _outside_of(self, address)
    if where is not None:
        _refuse(where)
        raise ConnectionRefusedError(
            errno.ECONNREFUSED, f"the tests reach only this machine (127.0.0.1), not {where}"
        )
    _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    where = _outside_of(self, address)
    if where is not None:
        _refuse(where)
        return errno.ECONNREFUSED
    return _connect_ex(self, address)


def install() -> None:
    """Guard every socket this process opens from now on."""
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def taken() -> list[str]:
    """The addresses off this machine asked for since the last call, each once, in order."""
    with _lock:
        seen = list(dict.fromkeys(_outside))
        _outside.clear()
    return seen
