"""Local processes: is this pid still the process we started (not a reused pid)?"""

from __future__ import annotations

import functools
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
    if _has_proc():
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
                text = file.read()
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


@functools.cache
def _has_proc() -> bool:
    """Whether this machine has Linux's /proc (asked once per process)."""
    return Path("/proc").is_dir() and Path("/proc/self/stat").exists()


def is_same_process(pid: int, marker: str, known: dict[int, str | None] | None = None) -> bool:
    """Whether `pid` is still the process `marker` was taken of. `known`: start markers already
    read in this look (pid -> marker), used and filled, so that records naming one pid read it
    once."""
    if pid <= 0:
        return False
    if known is None:
        return start_marker(pid) == marker
    if pid not in known:
        known[pid] = start_marker(pid)
    return known[pid] == marker


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


def group_alive(pgid: int) -> bool:
    """Whether any process of process group `pgid` is still running (zombies aside)."""
    proc = Path("/proc")
    if Path("/proc/self/stat").exists():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2 :].split()
            if fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_group_gone(pid: int, marker: str, timeout: float, poll: float = 0.1) -> bool:
    """Wait until the process that leads group `pid`, and every other process of the group
    (a job's Python driver is the JVM's child), is gone; True if that happened in time."""
    deadline = time.monotonic() + timeout
    while True:
        _reap(pid)
        if not is_same_process(pid, marker) and not group_alive(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def kill_group(pid: int, marker: str) -> None:
    """SIGKILL the process group the job leads, if it is still the same process, or if its
    leader is gone but members are left (no new process takes a pid that names a live group)."""
    if is_same_process(pid, marker) or group_alive(pid):
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


#: What the deployer's environment holds that no child process gets: the plan key (read/secrets.py
#: names it too, which host/ may not import; tests/act/test_saved_plans.py holds them the same).
DEPLOYER_ONLY = ("FLINK_SQL_RUNNER_PLAN_KEY",)


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a child process starts with: this one (or `base`), less what is the
    deployer's alone."""
    env = dict(os.environ if base is None else base)
    for name in DEPLOYER_ONLY:
        env.pop(name, None)
    return env
