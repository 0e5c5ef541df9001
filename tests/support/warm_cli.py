"""The command line run warm: `python -m flink_sql_runner ...` as a child forked from a process
that imported the command line once, instead of a fresh interpreter per run.

A fresh run costs about a second, most of it Python starting and importing the product; a
forked child starts with all of that done. It is still a process of its own: its exit code (or
the signal it died of), its pid, the files and processes it leaves are its own; its stdin,
stdout and stderr are the caller's (handed over a Unix socket), its working folder and
environment the caller's, `sys.argv` and `__main__` as `python -m` makes them, and it ends as
the interpreter does (threads joined, atexit run, streams flushed).

One launcher per pytest worker, started at its first run and stopped at the session's end, by
pid (`stop`; it also exits when the worker does). It imports every command's module and the
modules of `PRELOAD` and runs nothing else (the product computes nothing from the environment
or the working folder as it is imported), and has no thread when it forks. What is read from the
environment as a run starts (`PYTHON*` variables, the locale, `AT_START`) is compared with the
launcher's: a run that sets it otherwise runs fresh, as does a run whose stdin is a pipe and
every run with `FSR_TEST_CLI=fresh`. Tests that must see a fresh interpreter (which modules a
command imports, a terminal as stdout, the console script) start one themselves.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: Whether runs fork from the launcher (`FSR_TEST_CLI=fresh` turns it off): on for every test,
#: the scenarios' too; on two cores the second of CPU a fresh run costs is taken from the
#: Spark drivers running beside it.
WARM = True
#: Environment variables read as a run starts: by the interpreter (the locale, and every
#: variable named with a prefix of `AT_START_PREFIXES`), by a library as it is imported
#: (prometheus_client: its created series, multiprocess mode and name validation).
AT_START = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")
AT_START_PREFIXES = ("PYTHON", "PROMETHEUS_", "prometheus_")

#: The launcher's program: this module, from the clone, out of sys.path once imported.
SERVE = (
    "import sys; sys.path.insert(1, {repo!r}); from tests.support.warm_cli import serve; "
    "sys.path.remove({repo!r}); serve({address!r})"
)

#: Imported by the launcher besides every command's module: what commands import when they
#: need it (the SQL parser as a query is read, jsonschema as a document is checked, the cluster
#: targets), never the S3 client.
PRELOAD = (
    "sqlglot.dialects.spark",
    "jsonschema",
    "flink_sql_runner.targets.kubernetes",
    "flink_sql_runner.targets.standalone",
    "flink_sql_runner.targets.yarn",
)

_launcher: _Launcher | None = None


def run(
    args: list[str],
    *,
    cwd: Path | str,
    env: dict[str, str],
    stdin: int | None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """`python -m flink_sql_runner *args` as `subprocess.run(..., capture_output=True,
    text=True, check=False)` runs it, `env` its whole environment; forked from this worker's
    launcher when `WARM`, unless it must run fresh (see above)."""
    global _launcher
    argv = [sys.executable, "-m", "flink_sql_runner", *args]
    piped = stdin is not None and stdin < 0 and stdin != subprocess.DEVNULL  # PIPE: no fd to hand
    fresh = not WARM or os.environ.get("FSR_TEST_CLI") == "fresh"
    if _launcher is not None and _launcher.owner != os.getpid():
        _launcher = None  # a fork's: not this process's to use
    started = _launcher.at_start if _launcher is not None else _at_start(os.environ)
    if fresh or piped or _at_start(env) != started:
        return _fresh(argv, cwd, env, stdin, timeout)
    if _launcher is None:
        _launcher = _Launcher()
    return _launcher.run(argv, cwd, env, stdin, timeout)


def stop() -> None:
    """Stop this worker's launcher, if it started one (by its pid)."""
    global _launcher
    if _launcher is not None and _launcher.owner == os.getpid():
        _launcher.stop()
    _launcher = None


def _at_start(env: Mapping[str, str]) -> dict[str, str]:
    """What of `env` an interpreter reads as it starts."""
    return {k: v for k, v in env.items() if k.startswith(AT_START_PREFIXES) or k in AT_START}


def _fresh(
    argv: list[str], cwd: Path | str, env: dict[str, str], stdin: int | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False, env=env,
        stdin=stdin,
    )  # fmt: skip


class _Launcher:
    """The client's side: the launcher process, its socket."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.at_start = _at_start(os.environ)
        self.folder = Path(tempfile.mkdtemp(prefix="fsr-warm-cli-"))
        self.address = str(self.folder / "socket")
        self.log = self.folder / "launcher.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", SERVE.format(repo=str(REPO), address=self.address)],
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
            )  # fmt: skip
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        self.process.stdout.close()
        if ready != b"ready\n":
            self.process.wait()
            raise RuntimeError(f"the CLI launcher did not start: {self.log.read_text()[-2000:]}")
        atexit.register(self.stop)

    def run(
        self,
        argv: list[str],
        cwd: Path | str,
        env: dict[str, str],
        stdin: int | None,
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY) if stdin == subprocess.DEVNULL else None
        fds = [devnull if devnull is not None else 0 if stdin is None else stdin, out_w, err_w]
        request = {"argv": argv[3:], "cwd": os.path.abspath(cwd), "env": env}
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            pid = b""
            try:
                conn.connect(self.address)
                socket.send_fds(conn, [json.dumps(request).encode()], fds)
                pid = conn.recv(64)
            finally:
                for fd in (out_w, err_w, devnull) if pid else (out_w, err_w, devnull, out_r, err_r):
                    if fd is not None:
                        os.close(fd)
            if not pid:
                raise RuntimeError(f"the CLI launcher went away: {self.log.read_text()[-2000:]}")
            out, err, timed_out = _read(out_r, err_r, time.monotonic() + timeout, int(pid))
            reply = conn.recv(64)
        if not reply:
            raise RuntimeError(f"the CLI launcher went away: {self.log.read_text()[-2000:]}")
        stdout, stderr = _text(out), _text(err)
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
        return subprocess.CompletedProcess(argv, int(reply), stdout, stderr)

    def stop(self) -> None:
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _read(out_r: int, err_r: int, deadline: float, pid: int) -> tuple[bytes, bytes, bool]:
    """Both pipes to their end (as `communicate` reads them); past the deadline the child is
    killed, and what it wrote until then returned."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0 and not timed_out:
                timed_out = True
                deadline = time.monotonic() + 5  # what is still in the pipes
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                continue
            if left <= 0:
                break
            for key, _ in selector.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    for fd in chunks:
        os.close(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), timed_out


def _text(data: bytes) -> str:
    """As `subprocess.run(..., text=True)` decodes: the locale's encoding, universal newlines."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


# -- the launcher's side


def serve(address: str) -> None:
    """The launcher: import the command line, say `ready`, then fork a child per request and
    answer with its pid, then its exit code; exit with the process that started it."""
    import runpy  # noqa: F401 - what the child runs the command line with
    import warnings
    from importlib import import_module

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the worker's to handle
    with warnings.catch_warnings(record=True) as shown:
        from flink_sql_runner.cli.main import all_commands

        all_commands()
        for module in PRELOAD:
            import_module(module)
    if shown:  # a fresh run would print them, each time: stay out of the way
        raise SystemExit(f"importing the command line warns: {[str(w.message) for w in shown]}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "request")
    selector.register(os.pidfd_open(os.getppid()), selectors.EVENT_READ, "parent")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                return
            if key.data == "request":
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                pid = os.fork()
                if pid == 0:
                    _child(json.loads(message), fds, selector, conn)
                for fd in fds:
                    os.close(fd)
                conn.send(str(pid).encode())
                selector.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, conn))
            else:
                pid, conn = key.data
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()


def _child(
    request: dict[str, Any], fds: list[int], selector: selectors.BaseSelector, conn: socket.socket
) -> None:
    """One run, in the forked child: the caller's fds, folder, environment and arguments (the
    launcher's own sockets and fds closed); exits as `python -m flink_sql_runner` would."""
    code = 1
    try:
        for key in list(selector.get_map().values()):
            if isinstance(key.data, tuple):
                key.data[1].close()
            os.close(key.fd)
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if sys.path[0] == "":  # `-c`'s entry: `-m` puts the working folder there
            sys.path[0] = os.getcwd()
        sys.stdin, sys.stdout, sys.stderr = (_stream(n) for n in range(3))
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        sys.argv = ["-m", *request["argv"]]
        code = _main()
    except BaseException:  # noqa: BLE001 - the launcher's own failure, shown to the caller
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _main() -> int:
    """The command line as `python -m` runs it, and the interpreter's ending after it: the exit
    code of SystemExit, a traceback for anything else, threads joined, atexit run, streams
    flushed."""
    import runpy
    import threading

    code = 0
    try:
        runpy.run_module("flink_sql_runner", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = _exit_code(exit.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - what the interpreter does with it
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined] # the interpreter waits for its threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    if code == -signal.SIGINT:  # as CPython: dies of the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_code(code: object) -> int:
    """What the interpreter exits with for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _stream(fd: int) -> Any:
    """sys.stdin, stdout or stderr on `fd` as the interpreter makes them at start (the encoding,
    errors and buffering the launcher's own got; line-buffered on a terminal, and stderr)."""
    import io

    like = (sys.__stdin__, sys.__stdout__, sys.__stderr__)[fd]
    assert like is not None
    unbuffered = like.write_through and fd != 0
    raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]  # type: ignore[misc]
    buffer: Any = raw
    if not unbuffered:
        buffer = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    line = not like.write_through and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(buffer, like.encoding, like.errors, "\n", line, like.write_through)
    stream.mode = "r" if fd == 0 else "w"  # type: ignore[misc]
    return stream
