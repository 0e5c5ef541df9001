"""`preview` through the real command line where it starts no Spark: a job not under --path and
a --sample-from file that is not there (exit 2, naming the file and the field), and a new job
or a version that committed nothing (exit 1, saying which, nothing run)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import run_cli as cli


def project(tmp_path: Path) -> list[str]:
    """A job `expensive` over a JSON source, and the options that find it."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "in").mkdir()
    tables = {"tables": [
        {"name": "orders", "format": "json", "options": {"path": str(tmp_path / "in")},
         "schema": "order_id BIGINT, price DOUBLE"},
        {"name": "out", "format": "parquet", "options": {"path": str(tmp_path / "out")}},
    ]}  # fmt: skip
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(tables))
    job = {"name": "expensive", "target-table": "out",
           "sql": "SELECT order_id, price FROM orders WHERE price > 5000"}  # fmt: skip
    (tmp_path / "jobs" / "expensive.yaml").write_text(yaml.safe_dump(job))
    return ["--path", str(tmp_path / "jobs"), "--table-definition-path",
            str(tmp_path / "tables.yaml"), "--state-dir", str(tmp_path / "state")]  # fmt: skip


def test_bad_input_is_exit_2_naming_the_file_and_the_field(tmp_path: Path) -> None:
    args = project(tmp_path)
    unknown = cli("preview", "cheap", *args)
    assert unknown.returncode == 2
    assert f"{tmp_path / 'jobs'}: name: no job named 'cheap' there" in unknown.stderr
    missing = cli("preview", "expensive", *args, "--sample-from", str(tmp_path / "gone.json"))
    assert missing.returncode == 2
    assert f"{tmp_path / 'gone.json'}: --sample-from: no such file" in missing.stderr
    assert not (tmp_path / "state" / "manifests").exists()


def test_where_no_slice_can_be_had_it_says_which_and_runs_nothing(tmp_path: Path) -> None:
    args = project(tmp_path)
    fresh = cli("preview", "expensive", *args)
    assert fresh.returncode == 1, fresh.stderr
    assert fresh.stdout.splitlines() == [
        "preview of expensive: a new job (version 1)",
        "  not previewed: no slice: a new job: no version of it has read any input; give rows "
        "of orders with --sample-from",
    ]
    spec = yaml.safe_load((tmp_path / "jobs" / "expensive.yaml").read_text())
    spec["checkpoint-root"] = str(tmp_path / "ck")
    tables = {"orders": {"format": "json", "options": {"path": str(tmp_path / "in")},
                         "schema": "order_id BIGINT, price DOUBLE"},
              "out": {"format": "parquet", "options": {"path": str(tmp_path / "out")}}}  # fmt: skip
    stored = StoredManifest({**spec, "sql": spec["sql"].replace("5000", "9000")}, tables,
                            Meta(1, "q", "2026-11-28T00:00:00Z"))  # fmt: skip
    LocalStore(tmp_path / "state" / "manifests").write(stored, None)
    checkpoint = tmp_path / "ck" / "expensive" / "1"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id": "q"}')
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (checkpoint / "offsets" / "0").write_text(f'v1\n{json.dumps(meta)}\n{{"logOffset":0}}')
    nothing = cli("preview", "expensive", *args, "--output", "json")
    assert nothing.returncode == 1, nothing.stderr
    (doc,) = json.loads(nothing.stdout)["previews"]
    assert doc["unavailable"] == "no slice: version 1: the version committed no batch"
    assert (doc["old-version"], doc["new-version"], doc["old"]) == (1, 2, None)


def test_plan_preview_previews_each_changed_query_after_the_plan(tmp_path: Path) -> None:
    """Text and JSON; here v1 committed nothing, so each preview says so and runs nothing (the
    sink is empty and declares no schema: the plan's analysis starts no Spark either)."""
    args = project(tmp_path)
    spec = yaml.safe_load((tmp_path / "jobs" / "expensive.yaml").read_text())
    checkpoints = tmp_path / "state" / "checkpoints"
    tables = {"orders": {"format": "json", "options": {"path": str(tmp_path / "in")},
                         "schema": "order_id BIGINT, price DOUBLE"},
              "out": {"format": "parquet", "options": {"path": str(tmp_path / "out")}}}  # fmt: skip
    old = {**spec, "sql": spec["sql"].replace("5000", "9000"), "checkpoint-root": str(checkpoints),
           "desired-state": "stopped"}  # fmt: skip
    LocalStore(tmp_path / "state" / "manifests").write(
        StoredManifest(old, tables, Meta(1, "q", "2026-11-28T00:00:00Z")), None
    )
    (checkpoints / "expensive" / "1").mkdir(parents=True)
    (checkpoints / "expensive" / "1" / "metadata").write_text('{"id": "q"}')
    text = cli("plan", *args, "--preview")
    assert text.returncode == 0, text.stderr
    assert text.stdout.rstrip().endswith(
        "preview of expensive: version 1 -> 2\n"
        "  not previewed: no slice: version 1: the version committed no batch"
    )
    doc = json.loads(cli("plan", *args, "--preview", "--output", "json").stdout)
    assert [p["name"] for p in doc["previews"]] == ["expensive"]
    assert "previews" not in json.loads(cli("plan", *args, "--output", "json").stdout)


def test_sample_from_splits_at_a_source_tables_name_only(tmp_path: Path) -> None:
    """Issue 54, finding 14 (c): `TABLE=PATH` where TABLE is a source table the job reads; a
    Hive-style path (`dt=2024-01-01/...`) is a path, whole."""
    from flink_sql_runner.cli.preview import sample_files

    folder = tmp_path / "dt=2024-01-01"
    folder.mkdir()
    rows = folder / "rows.json"
    rows.write_text('{"order_id": 1}\n')
    views = {"orders": "orders"}
    assert sample_files((str(rows),), views) == {"": str(rows.resolve())}
    assert sample_files((f"orders={rows}",), views) == {"orders": str(rows.resolve())}


def test_preview_rows_is_an_explicit_option_its_help_says_so() -> None:
    """Issue 54, finding 14 (f): `plan --preview-rows` and `preview --preview-rows`."""
    for command in (("plan",), ("preview",)):
        shown = " ".join(cli(*command, "--help").stdout.split())
        assert "--preview-rows" in shown and "secret" in shown, command


def test_sample_from_that_cannot_cover_the_jobs_sources_is_bad_input_naming_them(
    tmp_path: Path,
) -> None:
    """Review of issue 54, P13: a PATH without TABLE= for a job reading two sources, and a new
    job given rows for only one of its two, are exit 2, one line naming --sample-from and the
    tables (nothing run)."""
    args = project(tmp_path)
    tables = yaml.safe_load((tmp_path / "tables.yaml").read_text())
    tables["tables"].append({"name": "buyers", "format": "json",
                             "options": {"path": str(tmp_path / "in")},
                             "schema": "buyer_id STRING"})  # fmt: skip
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(tables))
    sql = "SELECT o.order_id FROM orders o JOIN buyers b ON o.order_id = b.buyer_id"
    job = {"name": "expensive", "target-table": "out", "sql": sql}
    (tmp_path / "jobs" / "expensive.yaml").write_text(yaml.safe_dump(job))
    rows = tmp_path / "rows.json"
    rows.write_text('{"order_id": 1}\n')
    ambiguous = cli("preview", "expensive", *args, "--sample-from", str(rows))
    assert ambiguous.returncode == 2, ambiguous.stderr
    assert ambiguous.stderr.splitlines() == [
        f"error: {rows}: --sample-from: the job reads buyers, orders: name one as TABLE=PATH",
        "1 problem; nothing was touched.",
    ]
    partial = cli("preview", "expensive", *args, "--sample-from", f"orders={rows}")
    assert partial.returncode == 2, partial.stderr
    assert partial.stderr.splitlines() == [
        "error: expensive: --sample-from: a new job: no rows of buyers given; give them with "
        "--sample-from buyers=PATH",
        "1 problem; nothing was touched.",
    ]
    assert not (tmp_path / "state" / "manifests").exists()
