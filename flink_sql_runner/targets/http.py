"""JSON over HTTP for the cluster APIs, with the standard library only: a timeout on every
call, and a cluster that cannot be reached becomes one line for the user."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.errors import FsrError

DEFAULT_TIMEOUT = 30.0


class Unreachable(FsrError):
    """No answer from a cluster's API (refused, timed out, not HTTP). `maybe_sent`: the request
    may have reached the API (a timeout or a connection dropped after it was sent), as opposed
    to a connection that was never made."""

    def __init__(self, message: str, maybe_sent: bool):
        super().__init__(message)
        self.maybe_sent = maybe_sent


@dataclass(frozen=True)
class Reply:
    status: int
    doc: Any  # the parsed JSON body, or None when it is empty or not JSON
    text: str


def call(
    method: str,
    url: str,
    *,
    what: str,
    body: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    hint: str = "",
) -> Reply:
    """One request; any HTTP status comes back as a Reply, for the caller to judge with the
    cluster's own message. `what` names the API in errors ("the Spark master's REST API"),
    `hint` says what to check when it cannot be reached."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json;charset=UTF-8"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return _reply(response.status, response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return _reply(exc.code, exc.read())
    except urllib.error.URLError as exc:
        cause = exc.reason
    except (OSError, http.client.HTTPException) as exc:  # timeouts, resets, garbage
        cause = exc
    maybe_sent = not isinstance(cause, (ConnectionRefusedError, socket.gaierror))
    raise Unreachable(
        f"cannot reach {what} at {url}: {_why(cause)}" + (f" ({hint})" if hint else ""),
        maybe_sent,
    )


def _why(cause: object) -> str:
    """The cause in words. A server that drops the connection is seen as a reset or as a close,
    as the TCP timing of the moment has it: one line either way."""
    if isinstance(cause, ConnectionResetError):  # RemoteDisconnected is one too
        return "the connection was closed without an answer"
    return str(cause) or type(cause).__name__


def _reply(status: int, raw: bytes) -> Reply:
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text) if text.strip() else None
    except ValueError:
        doc = None
    return Reply(status, doc, text)
