"""A Ctrl-C the kernel hands to a thread other than the main one, as it may: sent to the calling
thread with `signal.pthread_kill`, once the main thread waits where the test means it to."""

from __future__ import annotations

import signal
import sys
import threading
import time

MAIN = threading.main_thread().ident


def ctrl_c_here_once_the_main_thread_waits(name: str) -> None:
    """SIGINT handled on the calling thread, once the main thread is inside `name` (a function
    its stack shows), or after 30 s: sent earlier, the main thread would take it in on its own
    way there, and the test would pass whatever its waits do."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(MAIN)
        while frame is not None and frame.f_code.co_name != name:
            frame = frame.f_back
        if frame is not None:
            break
        time.sleep(0.01)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
