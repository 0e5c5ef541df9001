"""Progress of a deploy on stderr: one live line on a terminal, plain lines in CI logs."""

from __future__ import annotations

import threading
import time
from typing import TextIO


class Progress:
    """Told when each job's action starts and ends, from any thread."""

    def __init__(self, total: int, stream: TextIO, live: bool):
        self.total, self.stream, self.live = total, stream, live
        self.done = 0
        self.active: dict[str, float] = {}
        # Reentrant: a signal handler may call note() in a thread that is inside another call.
        self._lock = threading.RLock()

    def started(self, name: str, action: str) -> None:
        with self._lock:
            self.active[name] = time.monotonic()
            if self.live:
                self._redraw()
            else:
                self._line(f"[{self.done}/{self.total}] {name}: {action} ...")

    def finished(self, name: str, ok: bool, skipped: bool = False) -> None:
        """A job is done: ok, FAILED, or skipped (held back: it never began, so no time)."""
        with self._lock:
            began = self.active.pop(name, None)
            self.done += 1
            if skipped:
                text = "skipped"
            else:
                seconds = time.monotonic() - began if began is not None else 0.0
                text = f"{'ok' if ok else 'FAILED'} ({seconds:.1f} s)"
            if self.live:
                self.stream.write("\r\033[K")
            self._line(f"[{self.done}/{self.total}] {name}: {text}")
            if self.live and self.active:
                self._redraw()

    def note(self, text: str) -> None:
        """A line for people between the progress lines (a terminal's live line kept)."""
        with self._lock:
            if self.live:
                self.stream.write("\r\033[K")
            self._line(text)
            if self.live and self.active:
                self._redraw()

    def close(self) -> None:
        if self.live:
            with self._lock:
                self.stream.write("\r\033[K")
                self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def _redraw(self) -> None:
        names = ", ".join(sorted(self.active))
        self.stream.write(f"\r\033[K[{self.done}/{self.total}] in progress: {names}"[:200])
        self.stream.flush()
