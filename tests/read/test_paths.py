"""Paths in tables and jobs resolved once, when jobs are loaded: a relative path against the
folder the command runs in, stored absolute; a source that is not there is reported before
anything starts."""

from __future__ import annotations

from contextlib import chdir
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.errors import InvalidInput
from flink_sql_runner.read import manifest as manifest_module
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import Job, load_jobs
from flink_sql_runner.read.paths import SourceCheck
from tests.support.cli import run_cli

ORDERS = {
    "name": "orders",
    "format": "json",
    "options": {"path": "data/orders"},
    "schema": "id BIGINT",
}
OUT = {"name": "out", "format": "parquet", "options": {"path": "out/orders"}}


def project(root: Path, *tables: dict[str, Any], sql: str = "SELECT id FROM orders") -> Path:
    """A project folder: `tables/tables.yaml`, one job `copy` in `jobs/`, `data/orders/`."""
    (root / "data" / "orders").mkdir(parents=True)
    (root / "tables").mkdir()
    (root / "jobs").mkdir()
    (root / "tables" / "tables.yaml").write_text(
        yaml.safe_dump({"tables": list(tables or (ORDERS, OUT))}, sort_keys=False)
    )
    (root / "jobs" / "copy.yaml").write_text(
        yaml.safe_dump({"name": "copy", "target-table": "out", "sql": sql})
    )
    return root


def load(root: Path, check: SourceCheck = SourceCheck.RELATIVE) -> list[Job]:
    """The project's jobs, loaded in its folder."""
    with chdir(root):
        catalog = load_catalog([Path("tables")])
        return load_jobs([Path("jobs")], None, catalog, Path("state"), sources=check)


def problems(root: Path, check: SourceCheck = SourceCheck.RELATIVE) -> list[str]:
    with pytest.raises(InvalidInput) as raised:
        load(root, check)
    return [str(p) for p in raised.value.problems]


def test_relative_paths_resolve_against_the_folder_the_command_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = project(tmp_path / "repo")
    template = root / "template.yaml"
    template.write_text(yaml.safe_dump({"checkpoint-root": "state/checkpoints"}))
    monkeypatch.chdir(root)
    catalog = load_catalog([Path("tables")])
    (job,) = load_jobs([Path("jobs")], template, catalog, Path("state"))
    assert job.tables["orders"]["options"]["path"] == str(root / "data" / "orders")
    assert job.tables["out"]["options"]["path"] == str(root / "out" / "orders")
    assert job.spec["checkpoint-root"] == str(root / "state" / "checkpoints")
    assert job.base == str(root)
    assert job.relative == (
        ("checkpoint-root", "state/checkpoints"),
        ("tables.orders.options.path", "data/orders"),
        ("tables.out.options.path", "out/orders"),
    )


def test_spark_properties_that_name_files_resolve_item_by_item(tmp_path: Path):
    root = project(tmp_path / "repo")
    job = yaml.safe_load((root / "jobs" / "copy.yaml").read_text())
    job["sparkProperties"] = {
        "spark.jars": "libs/a.jar, hdfs://nn/b.jar,/opt/c.jar",
        "spark.archives": "envs/py.tar.gz#env",
        "spark.sql.warehouse.dir": "warehouse",
        "spark.app.name": "not/a/path",
    }
    (root / "jobs" / "copy.yaml").write_text(yaml.safe_dump(job))
    (job,) = load(root)
    assert job.spec["sparkProperties"]["spark.jars"] == (
        f"{root}/libs/a.jar, hdfs://nn/b.jar,/opt/c.jar"
    )
    assert job.spec["sparkProperties"]["spark.archives"] == f"{root}/envs/py.tar.gz#env"
    assert job.spec["sparkProperties"]["spark.sql.warehouse.dir"] == f"{root}/warehouse"
    assert job.spec["sparkProperties"]["spark.app.name"] == "not/a/path"


def test_the_default_templates_state_paths_are_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = project(tmp_path / "repo")
    monkeypatch.chdir(root)
    (job,) = load_jobs([Path("jobs")], None, load_catalog([Path("tables")]), Path(".state"))
    assert job.spec["checkpoint-root"] == str(root / ".state" / "checkpoints")


@pytest.mark.parametrize(
    "path",
    [
        "s3a://bucket/orders",
        "hdfs://namenode:8020/orders",
        "file:/data/orders",
        "file:///data/orders",
        "${ORDERS_DIR}/orders",
    ],
)
def test_uris_and_paths_from_the_environment_are_left_as_written(tmp_path: Path, path: str):
    out = {**OUT, "options": {"path": path}}
    root = project(tmp_path, ORDERS, out)
    (job,) = load(root)
    assert job.tables["out"]["options"]["path"] == path


def test_a_path_that_is_no_folder_is_left_as_written(tmp_path: Path):
    """Iceberg takes a table's name as its `path`; a rate source has none."""
    out = {"name": "out", "format": "iceberg", "options": {"path": "db.orders"}}
    root = project(tmp_path, ORDERS, out)
    (job,) = load(root)
    assert job.tables["out"]["options"]["path"] == "db.orders"


def test_a_missing_source_is_reported_naming_its_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    orders = {**ORDERS, "options": {"path": "data/ordrs"}}
    root = project(tmp_path, orders, OUT)
    monkeypatch.chdir(root)
    assert problems(root) == [
        "tables/tables.yaml: tables[0].options.path: table 'orders': "
        f"{root}/data/ordrs does not exist (data/ordrs, resolved against {root}, the folder "
        "this command runs in); read by job 'copy'"
    ]


def test_a_missing_source_in_a_sql_catalog_names_its_line(tmp_path: Path):
    root = project(tmp_path)
    (root / "tables" / "tables.yaml").unlink()
    (root / "tables" / "tables.sql").write_text(
        "CREATE TABLE orders (id BIGINT) USING json\n"
        f"  LOCATION '{root}/nowhere';\n"
        f"CREATE TABLE out USING parquet LOCATION '{root}/out';\n"
    )
    assert problems(root, SourceCheck.LOCAL) == [
        f"tables/tables.sql: line 2: table 'orders': {root}/nowhere does not exist; "
        "read by job 'copy'"
    ]


def test_a_globs_folder_must_exist_not_its_files(tmp_path: Path):
    root = project(tmp_path)
    (root / "tables" / "tables.yaml").write_text(
        yaml.safe_dump(
            {
                "tables": [
                    {**ORDERS, "options": {"path": f"{root}/data/orders/*.json"}},
                    {**ORDERS, "name": "later", "options": {"path": f"{root}/data/*/x-?.json"}},
                    {**ORDERS, "name": "missing", "options": {"path": f"{root}/nodata/*.json"}},
                    OUT,
                ]
            }
        )
    )
    (root / "jobs" / "copy.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "copy",
                "target-table": "out",
                "sql": "SELECT id FROM orders UNION ALL SELECT id FROM later "
                "UNION ALL SELECT id FROM missing",
            }
        )
    )
    found = problems(root, SourceCheck.LOCAL)
    assert len(found) == 1
    assert f"table 'missing': {root}/nodata/*.json does not exist" in found[0]


def test_absolute_and_file_uri_sources_are_checked_only_on_the_local_target(tmp_path: Path):
    """A cluster's drivers may see a shared folder this machine does not; a relative path is
    this machine's anyway."""
    for path in (f"{tmp_path}/elsewhere", f"file:{tmp_path}/elsewhere"):
        orders = {**ORDERS, "options": {"path": path}}
        root = project(tmp_path / str(len(path)), orders, OUT)
        assert [job.name for job in load(root, SourceCheck.RELATIVE)] == ["copy"]
        assert "does not exist" in problems(root, SourceCheck.LOCAL)[0]


def test_remote_sources_are_never_looked_at(tmp_path: Path):
    orders = {**ORDERS, "options": {"path": "s3a://bucket/orders"}}
    root = project(tmp_path, orders, OUT)
    assert [job.name for job in load(root, SourceCheck.LOCAL)] == ["copy"]


def test_a_missing_sink_folder_is_left_for_spark_to_create(tmp_path: Path):
    out = {**OUT, "options": {"path": f"{tmp_path}/not/yet/there"}}
    root = project(tmp_path, ORDERS, out)
    assert [job.name for job in load(root, SourceCheck.LOCAL)] == ["copy"]


def test_a_source_another_job_writes_need_not_exist_yet(tmp_path: Path):
    """A pipeline's second stage reads the folder its first stage will write."""
    stage = {"name": "stage", "format": "parquet", "options": {"path": "out/stage"}}
    stage_in = {**stage, "name": "stage_in", "schema": "id BIGINT"}
    root = project(tmp_path, ORDERS, OUT, stage, stage_in)
    (root / "jobs" / "first.yaml").write_text(
        yaml.safe_dump({"name": "first", "target-table": "stage", "sql": "SELECT id FROM orders"})
    )
    (root / "jobs" / "copy.yaml").write_text(
        yaml.safe_dump({"name": "copy", "target-table": "out", "sql": "SELECT id FROM stage_in"})
    )
    assert [job.name for job in load(root, SourceCheck.LOCAL)] == ["copy", "first"]


def test_a_job_desired_stopped_may_read_a_missing_source(tmp_path: Path):
    """Stopping a job whose input went away must not be refused for it."""
    orders = {**ORDERS, "options": {"path": "gone"}}
    root = project(tmp_path, orders, OUT)
    job = yaml.safe_load((root / "jobs" / "copy.yaml").read_text())
    (root / "jobs" / "copy.yaml").write_text(yaml.safe_dump({**job, "desired-state": "stopped"}))
    assert [job.name for job in load(root, SourceCheck.LOCAL)] == ["copy"]


def test_sources_are_not_looked_at_unless_asked(tmp_path: Path):
    """`status --path` and `lineage` show what is written; they do not refuse it."""
    orders = {**ORDERS, "options": {"path": "gone"}}
    root = project(tmp_path, orders, OUT)
    assert [job.name for job in load(root, SourceCheck.NONE)] == ["copy"]


def test_deploy_with_a_missing_source_exits_2_and_touches_nothing(tmp_path: Path):
    orders = {**ORDERS, "options": {"path": "data/ordrs"}}
    root = project(tmp_path / "repo", orders, OUT)
    state = tmp_path / "state"
    result = run_cli(
        "deploy",
        "--path",
        "jobs",
        "--table-definition-path",
        "tables",
        "--state-dir",
        str(state),
        cwd=root,
    )
    assert result.returncode == 2, result.stderr
    assert (
        "error: tables/tables.yaml: tables[0].options.path: table 'orders': "
        f"{root}/data/ordrs does not exist" in result.stderr
    )
    assert not state.exists()


def test_validate_says_where_relative_paths_resolve(tmp_path: Path):
    root = project(tmp_path / "repo")
    result = run_cli(
        "validate",
        "--path",
        "jobs",
        "--table-definition-path",
        "tables",
        "--state-dir",
        str(tmp_path / "state"),
        cwd=root,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "1 job valid: copy",
        f"relative paths resolve against {root} (the folder this command runs in; deploy "
        "stores them absolute): data/orders, out/orders",
    ]


def test_deploy_job_with_a_missing_source_exits_2_and_touches_nothing(tmp_path: Path):
    orders = {**ORDERS, "options": {"path": "data/ordrs"}}
    root = project(tmp_path / "repo", orders, OUT)
    state = tmp_path / "state"
    result = run_cli(
        "deploy-job",
        "--job-config-path",
        "jobs/copy.yaml",
        "--table-definition-path",
        "tables",
        "--state-dir",
        str(state),
        cwd=root,
    )
    assert result.returncode == 2, result.stderr
    assert "tables[0].options.path: table 'orders': " in result.stderr
    assert not state.exists()


def test_a_source_many_jobs_read_is_looked_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three jobs read one missing folder: one look, and each job is named in the problem."""
    orders = {**ORDERS, "options": {"path": "gone"}}
    outs = [{**OUT, "name": f"out{n}", "options": {"path": f"out/{n}"}} for n in range(3)]
    root = project(tmp_path, orders, *outs)
    (root / "jobs" / "copy.yaml").unlink()
    for n in range(3):
        job = {"name": f"copy{n}", "target-table": f"out{n}", "sql": "SELECT id FROM orders"}
        (root / "jobs" / f"copy{n}.yaml").write_text(yaml.safe_dump(job))
    looked: list[str] = []
    real = manifest_module.missing
    monkeypatch.setattr(manifest_module, "missing", lambda p: looked.append(p) or real(p))
    (problem,) = problems(root, SourceCheck.LOCAL)
    assert len(looked) == 1 and looked[0].endswith("/gone")
    assert all(f"copy{n}" in problem for n in range(3)), problem
