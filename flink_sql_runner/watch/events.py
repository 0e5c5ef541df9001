"""Telling people what `watch` does: one line per event in its log (text, or JSON lines), a
webhook (a JSON POST, retried, from a thread of its own so the loop never waits on it) and a
command (argv, the event as JSON on its stdin, never a shell). No secret reaches an event: the
texts are masked as everything the deployer prints.

Events: `watching` (this watcher leads), `watcher-took-over` (from another that stopped
renewing), `standing-by` (it lost the lead), `restarted`, `restart-failed` (the new run did
not come up healthy), `backing-off`, `crash-looping`, `stalled`, `recovered`, `cannot-act`,
`stopping` (SIGTERM). The command gets one event per call, as one JSON line.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

from flink_sql_runner.host import runtime
from flink_sql_runner.model.json_values import json_time, json_time_of_text
from flink_sql_runner.read.secrets import redact_text

WEBHOOK_ATTEMPTS = 4
WEBHOOK_TIMEOUT = 10.0
COMMAND_TIMEOUT = 30.0
QUEUE_SIZE = 1000


def _masked(value: Any) -> Any:
    return redact_text(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class Event:
    kind: str
    job: str | None = None
    message: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    at: str = field(
        default_factory=lambda: (
            json_time(datetime.fromtimestamp(runtime.wall(), timezone.utc)) or ""
        )
    )

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"event": self.kind, "at": json_time_of_text(self.at)}
        if self.job:
            doc["job"] = self.job
        doc["message"] = _masked(self.message)
        doc.update({k: _masked(v) for k, v in self.fields.items()})
        return doc

    def line(self) -> str:
        who = f"{self.job}: " if self.job else ""
        return f"{self.at} {self.kind:<17} {who}{_masked(self.message)}"


class Notifier:
    """Every event to the log at once, and to the webhook and the command in the background."""

    def __init__(
        self,
        stream: TextIO = sys.stdout,
        log_format: str = "text",
        url: str | None = None,
        command: list[str] | None = None,
        sleep: Callable[[float], None] = runtime.sleep,
    ):
        self.stream, self.log_format = stream, log_format
        self.url, self.command, self.sleep = url, command, sleep
        self._queue: queue.Queue[Event | None] = queue.Queue(QUEUE_SIZE)
        self._thread: runtime.Thread | None = None
        if url or command:
            self._thread = runtime.thread(self._deliver, "notify")
            self._thread.start()

    def emit(self, event: Event) -> None:
        text = json.dumps(event.to_dict()) if self.log_format == "json" else event.line()
        self.stream.write(text + "\n")
        self.stream.flush()
        if self._thread is None:
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.warn(f"notifications are {QUEUE_SIZE} behind; dropped {event.kind}")

    def warn(self, message: str) -> None:
        """A warning to the log only (never to the webhook or the command): in JSON, a line of
        the events' shape, `{"event": "warning", "at", "message"}`."""
        if self.log_format == "json":
            self.stream.write(json.dumps(Event("warning", message=message).to_dict()) + "\n")
        else:
            self.stream.write(f"warning: {message}\n")
        self.stream.flush()

    def close(self, wait: float = 10.0) -> None:
        """Deliver what is queued (up to `wait` seconds), then stop."""
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(wait)

    # -- the background ----------------------------------------------------------------------
    def _deliver(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            body = json.dumps(event.to_dict()).encode()
            if self.url:
                self._post(body, event)
            if self.command:
                self._run(body, event)

    def _post(self, body: bytes, event: Event) -> None:
        assert self.url is not None
        problem = ""
        for attempt in range(1, WEBHOOK_ATTEMPTS + 1):
            request = urllib.request.Request(
                self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT):  # noqa: S310
                    return
            except (OSError, ValueError) as exc:  # HTTPError and URLError are OSErrors
                problem = str(getattr(exc, "reason", None) or exc)
            if attempt < WEBHOOK_ATTEMPTS:
                self.sleep(min(2 ** (attempt - 1), 30))
        self.warn(f"the webhook did not take {event.kind} after {WEBHOOK_ATTEMPTS} attempts: "
                  f"{problem}")  # fmt: skip

    def _run(self, body: bytes, event: Event) -> None:
        assert self.command is not None
        try:
            done = subprocess.run(  # noqa: S603 - argv, never a shell
                self.command,
                input=body + b"\n",
                capture_output=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.warn(f"the notify command failed on {event.kind}: {exc}")
            return
        if done.returncode != 0:
            self.warn(f"the notify command exited {done.returncode} on {event.kind}")
