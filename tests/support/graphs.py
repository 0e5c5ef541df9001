"""Jobs linked through tables, for the lineage and its diagrams: folders, chains, catalogs."""

from __future__ import annotations

from typing import Any

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import Catalog, Table
from flink_sql_runner.read.manifest import Job

SCHEMA = "id BIGINT"
TIMED = "id BIGINT, ts TIMESTAMP"


def folder(path: str, fmt: str = "parquet", schema: str = SCHEMA, **options: Any) -> dict[str, Any]:
    return {"format": fmt, "options": {"path": path, **options}, "schema": schema}


def job(name: str, reads: dict[str, dict[str, Any]], writes: str, sink: dict[str, Any]) -> Job:
    """A loaded job as `manifest.load_jobs` returns it: its tables resolved for it."""
    spec = {"name": name, "target-table": writes, "sql": "SELECT 1", "checkpoint-root": "/ck"}
    return Job(spec, {**reads, writes: sink}, tuple(reads), f"queries/{name}.yaml")


def chain(*names: str) -> list[Job]:
    """Each job reads what the one before it writes (by catalog name)."""
    jobs = [job(names[0], {"src": folder("/in")}, f"{names[0]}_out", folder(f"/out/{names[0]}"))]
    for before, name in zip(names, names[1:], strict=False):
        reads = {f"{before}_out": folder(f"/out/{before}")}
        jobs.append(job(name, reads, f"{name}_out", folder(f"/out/{name}")))
    return jobs


def stored(j: Job, version: int = 1) -> StoredManifest:
    return StoredManifest(dict(j.spec), dict(j.tables), Meta(version, f"id-{version}", "then"))


def catalog(*names: str) -> Catalog:
    return Catalog({n: Table(n, folder(f"/out/{n}"), "tables.yaml") for n in names})


#: The query of a pipeline job (`pipeline_job`), reading its `<name>_in`.
PIPELINE_SQL = "SELECT id, ts\nFROM src\nWHERE id > 0\n"


def pipeline_job(name: str, reads: str, writes: str, **spec: Any) -> Job:
    """A job reading the folder `reads` (as table `<name>_in`) and writing `writes`."""
    full = {
        "name": name,
        "description": "a job",
        "target-table": f"{name}_out",
        "sql": PIPELINE_SQL.replace("src", f"{name.replace('-', '_')}_in"),
        "desired-state": "running",
        "checkpoint-root": "/ckpt",
        "sparkProperties": {"spark.sql.shuffle.partitions": "4"},
        **spec,
    }
    tables = {
        f"{name}_in": folder(reads, schema=TIMED),
        f"{name}_out": folder(writes, schema=TIMED),
    }
    return Job(full, tables, (f"{name}_in",), f"queries/{name}.yaml")
