"""The runtime manifest handed to the runner (docs/reference/runtime-manifest.md), built per run,
and the
Spark properties it is submitted with."""

from __future__ import annotations

import os
import re
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.offsets import Starts
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.names import parse_name
from flink_sql_runner.read.secrets import PLAN_KEY_VARIABLE, is_secret
from flink_sql_runner.read.sinks import schema_policy
from flink_sql_runner.read.sqlinfo import point_at_views

RUNTIME_SCHEMA_VERSION = 1
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_text(value: str, manifest: StoredManifest, field: str, source: str) -> str:
    """`{job_name}`, `{query_version}` and `${ENV_VAR}` resolved in one option value."""
    version = str(manifest.meta.query_version)
    value = value.replace("{job_name}", manifest.name).replace("{query_version}", version)

    def env(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == PLAN_KEY_VARIABLE:
            raise FsrError(
                f"{source}: {field}: {name} is the deployer's plan key, no job's to read"
            )
        if name not in os.environ:
            raise FsrError(f"{source}: {field}: environment variable {name} is not set")
        return os.environ[name]

    return _ENV_VAR.sub(env, value)


def as_written(text: str, manifest: StoredManifest) -> str:
    """`text` (a sink's path as its run resolves it) with each environment value the manifest
    names put back as its `${NAME}`: what the deployer shows of it, in plans, saved plans and
    pull requests. An environment value is the job's to resolve, never the deployer's to show."""
    names = set(_ENV_VAR.findall(repr((manifest.job, manifest.tables))))
    values = sorted(((os.environ.get(n) or "", n) for n in names), key=lambda pair: -len(pair[0]))
    for value, name in values:
        if value:
            text = text.replace(value, "${" + name + "}")
    return text


def _resolve(value: Any, manifest: StoredManifest, field: str, source: str) -> Any:
    if isinstance(value, str):
        return resolve_text(value, manifest, field, source)
    if isinstance(value, dict):
        return {k: _resolve(v, manifest, f"{field}.{k}", source) for k, v in value.items()}
    return value


def resolved_table(manifest: StoredManifest, name: str) -> Any:
    """One of the manifest's table definitions as its run sees it: placeholders and
    environment variables resolved (FsrError when one is not set)."""
    return _resolve(manifest.tables.get(name), manifest, f"tables.{name}", manifest.name)


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


def starts_by_view(manifest: StoredManifest, starts: Starts | None) -> dict[str, dict[str, Any]]:
    """`starts` (where Kafka source tables start, by table name) by the name the run registers
    each table under (its view): what the runtime manifest and a go carry."""
    views = {name: parse_name(name).view for name in source_tables(manifest)}
    found = starts.by_table if starts is not None else {}
    return {views.get(name, name): spec for name, spec in found.items()}


#: The trigger of a job that writes none (the runner's own default is the same).
DEFAULT_TRIGGER = {"processingTime": "5 seconds"}


def runtime_manifest(
    manifest: StoredManifest,
    run_id: str,
    control: ControlFiles,
    source: str,
    starts: Starts | None = None,
) -> dict[str, Any]:
    """`starts`: where its Kafka source tables start (a new version after another): each
    such table's `start`, which the runner applies to its options (runner/kafka_start.py)."""
    meta = manifest.meta
    spec = manifest.job
    sources = source_tables(manifest)
    # Sources are registered as views named `TableName.view`; the query reads them there.
    views = {name: parse_name(name).view for name in sources}
    tables = {
        views.get(name, name): _resolve(definition, manifest, f"tables.{name}", source)
        for name, definition in manifest.tables.items()
    }
    for view, start in starts_by_view(manifest, starts).items():
        tables[view]["start"] = start
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
        "trigger": spec.get("trigger", dict(DEFAULT_TRIGGER)),
        "metadata-columns": {
            "enabled": spec.get("metadata-columns", {}).get("enabled", True),
            "create-timestamp-column": spec.get("metadata-columns", {}).get(
                "create-timestamp-column", "__create_timestamp"
            ),
        },
        "tables": tables,
        # The run checks its sink's schema before its first write (runner/sink_schema.py).
        "on-schema-change": schema_policy(spec, manifest.tables)[0],
        "checkpoint-location": f"{root}/{manifest.name}/{meta.query_version}",
        "stop-marker": control.stop_marker,
        "status-file": control.status_file,
        "beacon-file": control.beacon,
        # The beacon's heartbeat (null on S3, where the beacon is its own): with it, the runner
        # writes the beacon only when what it says changes (runner/status.py).
        "beat-file": control.beat or None,
        "runs-file": control.runs,
        "run-id": run_id,
        "meta": meta.to_dict(),
    }


def probe_manifest(manifest: StoredManifest, purpose: str) -> dict[str, Any]:
    """The runtime manifest a start of `manifest` would hand its run, as a runner probe analyses
    it for `purpose` ("plan", "preview"), with the job's spark.sql.* settings (`conf`) its
    session would have."""
    root = f"{str(manifest.job['checkpoint-root']).rstrip('/')}/{manifest.name}"
    control = ControlFiles.of(root, manifest.meta.query_version)
    doc = runtime_manifest(manifest, purpose, control, f"the {purpose} of {manifest.name}")
    # As the run's spark-submit gets them: `${ENV}` resolved (FsrError when one is not set).
    plain, secret = spark_conf(manifest, manifest.name)
    doc["conf"] = {k: v for k, v in {**plain, **secret}.items() if k.startswith("spark.sql.")}
    return doc
