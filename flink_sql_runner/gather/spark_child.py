"""A local Spark in a child process: one of the runner's probes (`runner/schema_probe.py`,
`runner/state_probe.py`, `runner/preview_probe.py`) started with the spark-submit the jobs run
on, in local mode (`spark-submit --master local --properties-file F job_runner.py --probe
NAME --input IN.json --output OUT.json`), on a request written to a private temporary folder,
its answer read back. The probe runs on the Spark release and the Python a job's driver runs on
(a connector built for that release loads), and the job's settings it needs (jars, how its
storage is reached, secrets among them) reach Spark in a 0600 properties file, never on a
command line. The cluster's `spark-defaults.conf` is not read: a probe runs here, not there,
and writes nothing (no event log, whatever the environment turns on). The probe removes its
request and its settings as soon as it read them; a folder a killed deployer left behind (its
pid in the folder's name, no longer running) is removed by the next probe started. The
deployer never imports pyspark; a probe that hangs is killed with its process group."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import processes as procs
from flink_sql_runner.host.processes import child_env
from flink_sql_runner.targets.javaprops import properties_text
from flink_sql_runner.targets.jvm_archive import trusted_option, user_archive_folder
from flink_sql_runner.targets.runner_files import runner_script
from flink_sql_runner.targets.sparksubmit import failure_message, find_spark_submit

#: What a probe's Spark is always given: no event log (an environment's own is not wanted).
PROBE_SETTINGS = {"spark.eventLog.enabled": "false"}
#: A probe's JVM lives seconds, never long enough for Java's optimising compiler to pay: the
#: client compiler alone, before the options SPARK_SUBMIT_OPTS holds (which still win). A plan
#: with a probe took 0.66x the CPU with it, 0.95x the time on a quiet machine
#: (docs/developers/benchmarks.md).
PROBE_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)
#: A probe's private folder: `fsr-<probe>-p<deployer's pid>-<random>`.
_FOLDER = re.compile(r"^fsr-[a-z_]+-p([0-9]+)-")


def sweep_left_behind(where: str | None = None) -> None:
    """Remove the probe folders deployers that are gone left behind (a SIGKILL runs no
    `finally`); a running one's are its own."""
    where = where or tempfile.gettempdir()
    for entry in os.scandir(where):
        found = _FOLDER.match(entry.name)
        if not found or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            continue  # alive (another user's)


def probe_command(probe: str, spark_submit: str, folder: Path) -> list[str]:
    """The argument list that runs `probe` on the request in `folder`: nothing in it but
    paths and the probe's name."""
    return [spark_submit, "--master", "local", "--deploy-mode", "client",
            "--name", f"flink-sql-runner-{probe.replace('_', '-')}",
            "--properties-file", str(folder / "probe.properties"),
            runner_script(), "--probe", probe,
            "--input", str(folder / "in.json"), "--output", str(folder / "out.json")]  # fmt: skip


def probe_env(spark_submit: str | None = None) -> dict[str, str]:
    """The probe's environment: this one, with the driver's Python as a local run gets it
    (targets/local.py), Spark bound to this machine, and the client compiler only (before the
    options SPARK_SUBMIT_OPTS holds, which still win). With `spark_submit`, the archive of its
    Spark and Java that `jvm-archive --for-plan` keeps in this user's cache folder, where it is
    only this user's (targets/jvm_archive.py, `trusted_option`). Never the state folder's
    (`jvm-archive`'s for local drivers): a CI job may keep the state folder in its checkout,
    where a pull request could commit one, and Java does not check the classes an archive
    holds."""
    env = child_env()
    given = env.get("SPARK_SUBMIT_OPTS", "")
    archive = trusted_option(user_archive_folder(), spark_submit) if spark_submit else None
    options = (*PROBE_JAVA_OPTIONS, *((archive,) if archive else ()))
    env["SPARK_SUBMIT_OPTS"] = " ".join((*options, given)).strip()
    marker = procs.start_marker(os.getpid())
    if marker is not None:  # the probe ends with this deployer (runner/probe_session.py)
        env["FSR_DEPLOYER"] = f"{os.getpid()}:{marker}"
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", env["PYSPARK_PYTHON"])
    return env


def _private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def run_child(
    probe: str,
    request: dict[str, Any],
    timeout: float,
    *,
    settings: dict[str, str] | None = None,
    spark_submit: str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """The answer of runner probe `probe` to `request`, and why there is none (None when it
    answered). `settings`: Spark properties its session starts with (the job's jars and
    storage settings); `spark_submit`: the jobs' (--spark-submit; else found as they find
    it)."""
    try:
        submit = find_spark_submit(spark_submit)
    except FsrError as exc:
        return {}, str(exc)
    sweep_left_behind()
    with tempfile.TemporaryDirectory(prefix=f"fsr-{probe}-p{os.getpid()}-") as name:  # 0700
        folder = Path(name)
        # A job's settings may hold a secret: the probe removes both files once read.
        _private(folder / "in.json", json.dumps(request))
        _private(folder / "probe.properties",
                 properties_text({**(settings or {}), **PROBE_SETTINGS}))  # fmt: skip
        try:
            process = subprocess.Popen(  # noqa: S603 - a list, never a shell
                probe_command(probe, submit, folder),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=folder,
                env=probe_env(submit),
                start_new_session=True,
            )
        except OSError as exc:
            return {}, f"cannot run {submit}: {exc.strerror}"
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {}, f"it took over {timeout:.0f} s"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        try:
            return json.loads((folder / "out.json").read_text()), None
        except (OSError, ValueError):
            why = failure_message(err.decode(errors="replace")) or "no output"
            return {}, f"it exited {process.returncode}: {why[:300]}"


def run_child_with(
    probe: str,
    request: dict[str, Any],
    field: str,
    timeout: float,
    spark_submit: str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """`run_child` on `request` less its `field`: the Spark settings put there, given to the
    probe's Spark instead (its properties file)."""
    ask = {key: value for key, value in request.items() if key != field}
    settings = {str(k): str(v) for k, v in (request.get(field) or {}).items()}
    return run_child(probe, ask, timeout, settings=settings, spark_submit=spark_submit)
