"""What the runner's probes (schema_probe, state_probe, preview_probe) share: the request they
read, the answer they write, and their local SparkSession.

The deployer starts a probe with the spark-submit its jobs run on, in local mode
(`spark-submit --master local[N] --properties-file F job_runner.py --probe NAME --input IN
--output OUT`, gather/spark_child.py): the job's settings a probe needs (the jars of its
sources, how its storage is reached, secrets among them) reach Spark in that 0600 properties
file, never on a command line; the probe removes it and its request as soon as it read them.
A session only adds the probe's own settings, none of them
secret (set through the running gateway, not a command line).

Needs pyspark and the standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

#: Every probe's session: no UI, no progress bar, no event log (whatever the environment
#: says: a probe writes nothing), this machine only, UTC.
BASE_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.eventLog.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
}


#: The settings file the deployer writes beside the request (gather/spark_child.py), read by
#: spark-submit before the probe starts.
SETTINGS_FILE = "probe.properties"


def read_request(location: str) -> dict[str, Any]:
    """The request at `location`, a JSON object; ValueError naming the file otherwise. The
    request and the settings file beside it (both may hold a job's secrets) are removed as
    soon as read: nothing of them stays on disk however the deployer ends."""
    try:
        with open(location, encoding="utf-8") as handle:
            request = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{location}: {exc}") from None
    finally:
        for done in (location, os.path.join(os.path.dirname(location), SETTINGS_FILE)):
            try:
                os.remove(done)
            except OSError:
                pass
    if not isinstance(request, dict):
        raise ValueError(f"{location}: not a JSON object")
    return request


def write_answer(location: str, answer: dict[str, Any]) -> None:
    """`answer` at `location`, whole or not at all (the deployer reads a missing file as no
    answer)."""
    folder = os.path.dirname(os.path.abspath(location))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fsr-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(answer, handle, default=str)
    os.replace(tmp, location)


#: The deployer that started this probe, `PID:MARKER` (its start as /proc tells it; set by
#: gather/spark_child.py): the probe ends with it, not minutes later with an answer no one reads.
DEPLOYER = "FSR_DEPLOYER"


def _start_marker(pid: int) -> str | None:
    """`pid`'s start as host/processes.py's `start_marker` writes it on Linux (the runner imports
    nothing of the deployer; tests/gather/test_spark_child.py holds the two the same); None: no
    such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else f"linux:{fields[19]}"


def _end_group() -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)  # spark-submit, its JVM and this driver


def watch_deployer(
    environ: dict[str, str] | None = None,
    every: float = 1.0,
    gone: Callable[[], None] = _end_group,
) -> threading.Thread | None:
    """A thread that calls `gone` (ends the probe's process group) once the deployer in
    `DEPLOYER` is no longer the process it was; None where there is none to watch."""
    pid, _, marker = (os.environ if environ is None else environ).get(DEPLOYER, "").partition(":")
    if not pid.isdigit() or not marker.startswith("linux:"):
        return None

    def watch() -> None:
        while _start_marker(int(pid)) == marker:
            time.sleep(every)
        gone()

    thread = threading.Thread(target=watch, name="fsr-deployer-watch", daemon=True)
    thread.start()
    return thread


def probe_session(name: str, cores: int, settings: dict[str, str] | None = None) -> Any:
    """A local SparkSession for probe `name` on `cores` cores, with `settings` beside the base
    ones; Spark's and py4j's chatter below errors. The probe ends with its deployer."""
    watch_deployer()
    logging.getLogger("py4j").setLevel(logging.ERROR)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(f"local[{cores}]").appName(f"flink-sql-runner-{name}")
    warehouse = os.path.join(tempfile.gettempdir(), f"fsr-{name}")
    for key, value in {**BASE_SETTINGS, "spark.sql.warehouse.dir": warehouse,
                       **(settings or {})}.items():  # fmt: skip
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
