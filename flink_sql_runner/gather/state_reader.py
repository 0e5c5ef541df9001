"""`inspect --state`: a checkpoint's state stores read through Spark's own state sources
(`runner/state_probe.py`, in a child process: the deployer never imports pyspark), and the bytes
each operator's partitions take, listed through the `Storage`. Only reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoint_reader import numbers
from flink_sql_runner.gather.spark_child import run_child_with
from flink_sql_runner.model.checkpoint_report import Inspection, StateReport, StoreState
from flink_sql_runner.model.runtime import spark_conf
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import Storage

#: A state probe that takes longer is stopped: what the state holds is then not shown.
STATE_PROBE_TIMEOUT = 300.0
#: Asks the state probe: request -> (answer, why there is none).
AskState = Callable[[dict[str, Any]], tuple[dict[str, Any], str | None]]


def ask_state_probe(
    request: dict[str, Any], spark_submit: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """The state probe's answer; the request's `conf` goes to its Spark as its settings."""
    return run_child_with("state_probe", request, "conf", STATE_PROBE_TIMEOUT, spark_submit)


#: The job's settings that give a Spark the jars a checkpoint's storage needs (S3A's).
JAR_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.jars.repositories",
                "spark.jars.excludes", "spark.jars.ivy", "spark.jars.ivySettings")  # fmt: skip


def probe_conf(manifest: StoredManifest, location: str) -> dict[str, str]:
    """The settings of the job's `sparkProperties` the state probe's Spark starts with: its
    `spark.hadoop.*` (how its storage is reached) and, for a checkpoint that is not a local
    file (s3a:, hdfs:), the jars it gives its own Spark for that (JAR_SETTINGS); resolved as its
    runs get them (`${ENV}` from this environment: credentials kept there). FsrError naming the
    setting and the variable when one is not set."""
    remote = "://" in location and not location.startswith("file:")
    plain, secret = spark_conf(manifest, manifest.name)
    return {
        key: value
        for key, value in {**plain, **secret}.items()
        if key.startswith("spark.hadoop.") or (remote and key in JAR_SETTINGS)
    }


def state_of(
    storage: Storage, inspection: Inspection, keys: int = 0, ask: AskState = ask_state_probe
) -> StateReport:
    """What `inspect --state` shows of the inspected version's state (`read_state`), its probe
    started with the job's settings (`probe_conf`); one that cannot be resolved is why not."""
    location = inspection.location
    if location is None:  # a manifest `migrate` converted: no checkpoint yet
        return StateReport(None, unavailable="no checkpoint yet")
    try:
        conf = probe_conf(inspection.manifest, location)
    except FsrError as exc:
        why = f"the state probe was not started: {exc}"
        return StateReport(None, unavailable=why, disk=bytes_on_disk(storage, location))
    return read_state(storage, location, keys, conf, ask)


def read_state(
    storage: Storage,
    location: str,
    keys: int = 0,
    conf: dict[str, str] | None = None,
    ask: AskState = ask_state_probe,
) -> StateReport:
    """The state stores of the checkpoint at `location` (a sample of `keys` keys each) and the
    bytes its operators' partitions take. `conf`: Spark settings the probe's session needs to
    reach the checkpoint's storage (the job's `spark.hadoop.*`)."""
    location = location.rstrip("/")
    disk = bytes_on_disk(storage, location)
    answer, why = ask({"checkpoint": location, "keys": keys, "conf": conf or {}})
    spark = answer.get("spark") if isinstance(answer.get("spark"), str) else None
    if why is not None:
        return StateReport(spark, unavailable=f"the state probe failed: {why}", disk=disk)
    if answer.get("unavailable") or answer.get("error"):
        reason = str(answer.get("unavailable") or f"Spark could not read it: {answer['error']}")
        return StateReport(spark, unavailable=reason, disk=disk)
    stores = tuple(_store(doc) for doc in answer.get("operators") or [] if isinstance(doc, dict))
    return StateReport(spark, stores, disk=disk)


def _store(doc: dict[str, Any]) -> StoreState:
    base = StoreState(int(doc.get("id", -1)), doc.get("name"), str(doc.get("store")))
    if doc.get("error"):
        return StoreState(base.operator, base.name, base.store, error=str(doc["error"]))
    rows = doc.get("rows") or {}
    return StoreState(
        base.operator,
        base.name,
        base.store,
        doc.get("partitions"),
        doc.get("min-batch"),
        doc.get("max-batch"),
        {str(p): int(n) for p, n in sorted(rows.items(), key=lambda i: int(i[0]))},
        tuple(s for s in doc.get("sample") or [] if isinstance(s, dict)),
    )


def bytes_on_disk(storage: Storage, location: str) -> dict[int, dict[str, int]]:
    """Operator -> partition -> bytes of every file under `state/<op>/<partition>/`."""
    found: dict[int, dict[str, int]] = {}
    for op in sorted(numbers(storage.dir_names(f"{location}/state"))):
        prefix = f"{location}/state/{op}/"
        parts: dict[str, int] = {}
        for path, size in storage.tree(prefix.rstrip("/")):
            partition = path[len(prefix) :].split("/", 1)[0]
            if partition.isdigit():
                parts[partition] = parts.get(partition, 0) + size
        found[op] = dict(sorted(parts.items(), key=lambda i: int(i[0])))
    return found
