"""Local processes: is this pid still the process we started (not a reused pid)?"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def start_marker(pid: int) -> str | None:
    """A value that identifies one process for its whole life: its start time.

    /proc/<pid>/stat field 22 on Linux; `ps -o lstart=` elsewhere. None if no such process
    (or a zombie, which has finished).
    """
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.is_dir() and Path("/proc/self/stat").exists():
        try:
            text = stat.read_text()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] in ("Z", "X"):
            return None
        return f"linux:{fields[19]}"
    try:
        out = subprocess.run(
            ["ps", "-o", "lstart=", "-o", "stat=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out or out.split()[-1].startswith("Z"):
        return None
    return "ps:" + " ".join(out.split()[:-1])


def is_same_process(pid: int, marker: str) -> bool:
    return pid > 0 and start_marker(pid) == marker


def wait_gone(pid: int, marker: str, timeout: float, poll: float = 0.1) -> bool:
    """Wait until the process is gone; True if it went within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_same_process(pid, marker):
            return True
        time.sleep(poll)
    _reap(pid)
    return not is_same_process(pid, marker)


def kill_group(pid: int, marker: str) -> None:
    """SIGKILL the process group the job leads, if it is still the same process."""
    if is_same_process(pid, marker):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
