"""Table definitions in SQL (`CREATE TABLE ...` files): parsed, never run, checked like YAML.

- `tests/data/ddl/broken/*`: each case (a `.sql` file, or a folder of table files) starts with
  `-- expect: line N: ...` lines (`# expect:` in YAML files), its exact problems; `{case}`
  stands for the case's path.
- `tests/data/ddl/good/*.sql`: each declares the same tables as the YAML file of the same name
  in `tests/data/ddl/good-as-yaml/`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.errors import InvalidInput
from flink_sql_runner.read.catalog import load_catalog, read_catalog
from flink_sql_runner.read.ddl import parse_sql_tables, tokenize
from flink_sql_runner.read.manifest import load_jobs
from tests.support.cli import REPO, run_cli

DDL = REPO / "tests" / "data" / "ddl"
BROKEN = sorted((DDL / "broken").iterdir())
GOOD = sorted((DDL / "good").glob("*.sql"))


def expected_lines(case: Path) -> list[str]:
    files = [case] if case.is_file() else sorted(case.iterdir())
    lines = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.startswith(("-- expect", "# expect")):
                break
            text = line.split("expect: ", 1)[1].replace("{case}", str(case))
            lines.append(f"{file}: {text}")
    assert lines, f"{case} has no expect lines"
    return sorted(lines)


@pytest.mark.parametrize("case", BROKEN, ids=[c.name for c in BROKEN])
def test_broken_table_file_gives_its_exact_lines(case: Path):
    catalog, problems = read_catalog([case])
    assert sorted(str(p) for p in problems) == expected_lines(case)


def test_every_broken_table_file_at_once_through_the_cli_exit_2_nothing_touched(tmp_path: Path):
    state = tmp_path / "state"
    args = []
    for case in BROKEN:
        args += ["--table-definition-path", str(case)]
    result = run_cli("validate", "--path", "examples/queries", *args, "--state-dir", str(state))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "S3CR3T" not in result.stdout + result.stderr
    errors = {line for line in result.stderr.splitlines() if line.startswith("error: ")}
    want = {f"error: {line}" for case in BROKEN for line in expected_lines(case)}
    # Which file declares a name first depends on the other cases here.
    assert {w for w in want if "is already defined in" not in w} <= errors
    # On top: the example jobs' tables are not in these catalogs, and cases declare tables
    # of the same names in other files.
    assert all(
        "examples/queries" in line or "is already defined in" in line for line in errors - want
    )
    assert not state.exists()


@pytest.mark.parametrize("case", GOOD, ids=[c.stem for c in GOOD])
def test_a_sql_table_file_declares_what_its_yaml_twin_does(case: Path):
    from_sql = load_catalog([case])
    from_yaml = load_catalog([DDL / "good-as-yaml" / f"{case.stem}.yaml"])
    assert {n: t.definition for n, t in from_sql.tables.items()} == {
        n: t.definition for n, t in from_yaml.tables.items()
    }
    assert from_sql.tables


def test_the_example_catalog_in_sql_runs_the_example_jobs(tmp_path: Path):
    """examples/tables-sql declares the example tables as SQL: the same jobs, the same
    definitions as examples/tables."""
    yaml_jobs = load_jobs(
        [REPO / "examples" / "queries"],
        None,
        load_catalog([REPO / "examples" / "tables"]),
        tmp_path,
    )
    sql_jobs = load_jobs(
        [REPO / "examples" / "queries"],
        None,
        load_catalog([REPO / "examples" / "tables-sql"]),
        tmp_path,
    )
    assert [(j.name, j.tables) for j in sql_jobs] == [(j.name, j.tables) for j in yaml_jobs]


def test_strings_comments_and_literals_as_spark_reads_them():
    text = (
        "/* outer /* nested */ still a comment */\n"
        "CREATE TABLE t USING json OPTIONS (\n"
        "  path 'a\\'b\\\\c\\td',  -- escapes\n"
        "  raw r'C:\\data\\new',\n"
        "  joined 'x' \"y\"\n"
        "  'z',\n"
        "  n -1.5e3, big 12, on TRUE, like 'a\\_b'\n"
        ")"
    )
    (table,), problems = parse_sql_tables(text, "t.sql")
    assert problems == []
    assert table.entry["options"] == {
        "path": "a'b\\c\td",
        "raw": "C:\\data\\new",
        "joined": "xyz",
        "n": -1500.0,
        "big": 12,
        "on": True,
        "like": "a\\_b",
    }
    assert table.lines == {
        "name": 2,
        "format": 2,
        "options": 2,
        "options.path": 3,
        "options.raw": 4,
        "options.joined": 5,
        "options.n": 7,
        "options.big": 7,
        "options.on": 7,
        "options.like": 7,
    }


def test_a_utf8_bom_and_crlf_lines_are_fine():
    (table,), problems = parse_sql_tables(
        "\ufeffCREATE TABLE t (\r\n  a INT\r\n) USING json\r\nLOCATION 'x'", "t.sql"
    )
    assert problems == []
    assert table.entry == {
        "name": "t",
        "format": "json",
        "schema": "a INT",
        "options": {"path": "x"},
    }


def test_lines_count_through_multi_line_strings_and_identifiers():
    tokens = tokenize("'a\nb' `c\nd`\n  e")
    assert [(t.kind, t.value, t.line) for t in tokens] == [
        ("string", "a\nb", 1),
        ("quoted", "c\nd", 2),
        ("word", "e", 4),
        ("end", "", 4),
    ]


def test_watermark_forms(tmp_path: Path):
    cases = {
        "ts - INTERVAL '5' SECOND": "5 seconds",
        "ts - INTERVAL '1' MINUTE": "1 minute",
        "ts - INTERVAL 2 HOURS": "2 hours",
        "ts - INTERVAL '0.5' SECOND(3)": "0.5 seconds",
        "ts - INTERVAL '10 minutes'": "10 minutes",
        "ts": "0 seconds",
    }
    for expression, delay in cases.items():
        text = f"CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR ts AS {expression}) USING rate"
        (table,), problems = parse_sql_tables(text, "t.sql")
        assert problems == [], expression
        assert table.entry["watermark"] == {"column": "ts", "delay": delay}


def test_a_job_reading_a_sql_table_with_columns_spark_fixes_is_told(tmp_path: Path):
    tables = tmp_path / "t.sql"
    tables.write_text(
        "CREATE TABLE src (value STRING) USING kafka OPTIONS (subscribe 'a');\n"
        "CREATE TABLE out USING parquet LOCATION 'out';\n"
    )
    job = tmp_path / "jobs" / "j.yaml"
    job.parent.mkdir()
    job.write_text("name: j\ntarget-table: out\nsql: SELECT value FROM src\n")
    with pytest.raises(InvalidInput) as raised:
        load_jobs([job.parent], None, load_catalog([tables]), tmp_path / "state")
    assert [str(p) for p in raised.value.problems] == [
        f"{job}: sql: table 'src' is a kafka table, whose columns Spark fixes (key, value, "
        "topic, partition, offset, timestamp, timestampType): drop its `schema` (its columns)"
    ]


def test_jobs_using_a_broken_sql_table_are_not_told_it_is_missing(tmp_path: Path):
    tables = tmp_path / "t.sql"
    tables.write_text("CREATE TABLE src (id BIGINT) USING json;\n")
    job = tmp_path / "jobs" / "j.yaml"
    job.parent.mkdir()
    job.write_text("name: j\ntarget-table: src\nsql: SELECT 1 FROM `SRC`\n")
    result = run_cli("validate", "--path", str(job.parent), "--table-definition-path", str(tables))
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error")] == [
        f"error: {tables}: line 1: table src: a json table needs LOCATION '...' or OPTIONS "
        "(path '...'); a table of Spark's catalog is declared without USING"
    ]
