"""The runtime manifest handed to the runner (docs/runtime-manifest.md), built per run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.names import parse_name
from flink_sql_runner.read.secrets import is_secret
from flink_sql_runner.read.sqlinfo import point_at_views

RUNTIME_SCHEMA_VERSION = 1
APP_NAME_PREFIX = "flink-sql-runner-"
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_APP_NAME = re.compile(rf"^{APP_NAME_PREFIX}(?P<name>[a-z0-9][a-z0-9_-]*)-v(?P<version>\d+)$")


def app_name(name: str, version: int) -> str:
    """The stable Spark application name of one version of a job."""
    return f"{APP_NAME_PREFIX}{name}-v{version}"


def parse_app_name(text: str) -> tuple[str, int] | None:
    match = _APP_NAME.match(text)
    return (match["name"], int(match["version"])) if match else None


@dataclass(frozen=True)
class ControlFiles:
    """Files beside a job's checkpoints, in `<checkpoint-root>/<name>/_control/`: the runtime
    manifest the runner reads, the stop marker it polls and the status file it writes. They live
    on the checkpoint's own storage, which both the deployer and the driver can reach."""

    runtime_manifest: str
    stop_marker: str
    status_file: str

    @classmethod
    def of(cls, job_root: str, version: int) -> ControlFiles:
        control = f"{job_root}/_control/v{version}"
        return cls(f"{control}.manifest.json", f"{control}.stop", f"{control}.status.json")

    @property
    def submission_record(self) -> str:
        """Where a cluster target records the submission id of the version's current run."""
        return submission_record_beside(self.stop_marker)


def submission_record_beside(stop_marker: str) -> str:
    """`_control/v<N>.submission.json`, found from the version's stop marker."""
    return stop_marker.removesuffix(".stop") + ".submission.json"


def resolve_text(value: str, manifest: StoredManifest, field: str, source: str) -> str:
    """`{job_name}`, `{query_version}` and `${ENV_VAR}` resolved in one option value."""
    version = str(manifest.meta.query_version)
    value = value.replace("{job_name}", manifest.name).replace("{query_version}", version)

    def env(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise FsrError(f"{source}: {field}: environment variable {name} is not set")
        return os.environ[name]

    return _ENV_VAR.sub(env, value)


def _resolve(value: Any, manifest: StoredManifest, field: str, source: str) -> Any:
    if isinstance(value, str):
        return resolve_text(value, manifest, field, source)
    if isinstance(value, dict):
        return {k: _resolve(v, manifest, f"{field}.{k}", source) for k, v in value.items()}
    return value


def spark_conf(manifest: StoredManifest, source: str) -> tuple[dict[str, str], dict[str, str]]:
    """(plain, secret) Spark properties: secrets go in a 0600 file, never on a command line."""
    plain, secret = {}, {}
    for key, value in manifest.job.get("sparkProperties", {}).items():
        resolved = resolve_text(str(value), manifest, f"sparkProperties.{key}", source)
        (secret if is_secret(key, resolved) else plain)[key] = resolved
    return plain, secret


def source_tables(manifest: StoredManifest) -> list[str]:
    """The tables a job reads, by their declared names: a `code` job names them; a `sql` job's
    are every table of its manifest but the target (its SQL was read for them when it was
    loaded)."""
    spec = manifest.job
    if "code" in spec:
        return list(spec.get("source-tables", []))
    return sorted(name for name in manifest.tables if name != spec["target-table"])


def runtime_manifest(
    manifest: StoredManifest, run_id: str, control: ControlFiles, source: str
) -> dict[str, Any]:
    meta = manifest.meta
    spec = manifest.job
    sources = source_tables(manifest)
    # Sources are registered as views named `TableName.view`; the query reads them there.
    views = {name: parse_name(name).view for name in sources}
    tables = {
        views.get(name, name): _resolve(definition, manifest, f"tables.{name}", source)
        for name, definition in manifest.tables.items()
    }
    sql = spec.get("sql")
    moved = {parse_name(name).key: view for name, view in views.items() if view != name}
    if sql is not None and moved:
        sql = point_at_views(sql, moved)
    root = str(spec["checkpoint-root"]).rstrip("/")
    return {
        "schema-version": RUNTIME_SCHEMA_VERSION,
        "name": manifest.name,
        "description": spec.get("description", ""),
        "target-table": spec["target-table"],
        "sql": sql,
        "code": spec.get("code"),
        "source-tables": [views[name] for name in sources],
        "outputMode": spec.get("outputMode", "append"),
        "trigger": spec.get("trigger", {"processingTime": "5 seconds"}),
        "metadata-columns": {
            "enabled": spec.get("metadata-columns", {}).get("enabled", True),
            "create-timestamp-column": spec.get("metadata-columns", {}).get(
                "create-timestamp-column", "__create_timestamp"
            ),
        },
        "tables": tables,
        "checkpoint-location": f"{root}/{manifest.name}/{meta.query_version}",
        "stop-marker": control.stop_marker,
        "status-file": control.status_file,
        "run-id": run_id,
        "meta": meta.to_dict(),
    }
