"""One deployment setting, as the command line gives it (docs in `--help`): the inputs, the
manifest store, the target and its cluster, timeouts and parallelism; and the target it names."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from flink_sql_runner.act.plan_inputs import where
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.decide.warm import DEFAULT_HANDOVER
from flink_sql_runner.errors import FsrError
from flink_sql_runner.read.kafka_start import KafkaStart
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.stores import hadoop_conf
from flink_sql_runner.stores.storage import FileStorage, Storage
from flink_sql_runner.targets.base import Target

DEFAULT_PARALLELISM = 4


DEFAULT_LOCK_TIMEOUT = 300.0

#: Where the state folder is when nothing names one: this variable (as `--state-dir` reads it),
#: else `.flink-sql-runner` in the folder the command runs in.
STATE_DIR_VARIABLE = "FLINK_SQL_RUNNER_STATE_DIR"
DEFAULT_STATE_DIR = Path(".flink-sql-runner")


def default_state_dir() -> Path:
    """The state folder when none is given: $FLINK_SQL_RUNNER_STATE_DIR, else
    ./.flink-sql-runner. Read when a `Settings` is made, so code that makes its own settings
    (the watch's, a test's) finds the same folder as the command line."""
    found = os.environ.get(STATE_DIR_VARIABLE)
    return Path(found) if found else DEFAULT_STATE_DIR


@dataclass
class Settings:
    paths: list[Path] = field(default_factory=list)
    table_paths: list[Path] = field(default_factory=list)
    template: Path | None = None
    state_dir: Path = field(default_factory=default_state_dir)
    manifest_store: str | None = None
    target: str = "local"
    master: str | None = None
    spark_submit: str | None = None
    cluster_api: str | None = None  # standalone: the master's web UI; yarn: the ResourceManager
    namespace: str | None = None  # kubernetes
    runner_path: str | None = None  # where a cluster's driver finds job_runner.py
    rest_gateway: str | None = None  # standalone: the master's REST gateway
    connector_jars: Path | None = None  # a folder of connector jars (else Maven coordinates)
    timeouts: Timeouts = field(default_factory=Timeouts)
    #: Jobs acted on at once; fact gathering (reads) uses more workers than this.
    parallelism: int = DEFAULT_PARALLELISM
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    #: How a change of a running job is carried out when the job does not say (decide/warm.py).
    handover: str = DEFAULT_HANDOVER
    #: Where a new version's Kafka sources start, for every job of the deploy (`--kafka-start`;
    #: None: as each job says, else where the previous version stopped).
    kafka_start: KafkaStart | None = None
    #: The deploy's `--on-state-change` (refuse, partial), over each job's; None: the jobs'.
    on_state_change: str | None = None
    properties: PropertyRules = field(default_factory=PropertyRules)  # checks, and warnings
    #: Reuse what unchanged job and table files read as last time (read/load_cache.py).
    cache: bool = True
    #: Where those caches are kept (`--cache-dir`; created when given); None:
    #: `<state_dir>/cache`, kept only once the state folder exists.
    cache_dir: Path | None = None


def where_jobs_run(settings: Settings) -> dict[str, str | None]:
    """Every setting that says where and how jobs run, as a saved plan records it and compares
    it (a plan made for one master is refused on another). A URL's user and password are left
    out."""
    master = settings.master
    if master is None:
        master = {"local": "local[*]", "yarn": "yarn"}.get(settings.target)
    found = {
        "kind": settings.target,
        "master": master,
        "rest-gateway": settings.rest_gateway,
        "cluster-api": settings.cluster_api,
        "namespace": settings.namespace,
        "runner-path": settings.runner_path,
        "spark-submit": settings.spark_submit,
        "connector-jars": _jars(settings.connector_jars) if settings.connector_jars else None,
        # Where a checkpoint path without a scheme is, and the cluster YARN's site files name.
        "default-fs": hadoop_conf.default_fs(),
    }
    if settings.target == "yarn" and not settings.cluster_api:
        from flink_sql_runner.targets.yarn import resource_manager_url

        try:
            found["cluster-api"] = resource_manager_url()
        except FsrError:
            pass  # the deploy says why, as it starts
    return {k: None if v is None else redact_text(v) for k, v in found.items()}


def _jars(folder: Path) -> str:
    """A folder of connector jars as a saved plan records it: its path and a digest of the
    jars in it (their names and content: a jar swapped in the folder is another connector)."""
    total = hashlib.sha256()
    try:
        jars = sorted(p for p in folder.iterdir() if p.suffix == ".jar")
        for jar in jars:
            total.update(
                jar.name.encode("utf-8") + b"\0" + hashlib.sha256(jar.read_bytes()).digest()
            )
    except OSError as exc:
        return f"{where(folder)} (unreadable: {exc.strerror or exc})"
    return f"{where(folder)} ({len(jars)} jars, sha256:{total.hexdigest()[:16]})"


def make_target(settings: Settings) -> Target:
    if settings.target == "local":
        from flink_sql_runner.targets.local import LocalTarget

        return LocalTarget(
            settings.state_dir, settings.spark_submit, master=settings.master or "local[*]"
        )
    return make_cluster_target(settings, FileStorage())


def make_cluster_target(settings: Settings, storage: Storage) -> Target:
    """A target that runs drivers on a cluster; control files on `storage`."""
    master = settings.master or ("yarn" if settings.target == "yarn" else None)
    if not master:
        raise FsrError(f"--target {settings.target} needs --master")
    if settings.target == "standalone":
        from flink_sql_runner.targets.standalone import StandaloneTarget

        return StandaloneTarget(
            storage,
            master,
            settings.cluster_api,
            settings.runner_path,
            gateway=settings.rest_gateway,
        )
    if settings.target == "yarn":
        from flink_sql_runner.targets.yarn import YarnTarget

        return YarnTarget(
            storage, master, settings.cluster_api, settings.spark_submit, settings.runner_path
        )
    if settings.target == "kubernetes":
        from flink_sql_runner.targets.kubernetes import KubernetesTarget

        return KubernetesTarget(
            storage, master, settings.namespace, settings.spark_submit, settings.runner_path
        )
    raise FsrError(f"--target {settings.target}: unknown target")
