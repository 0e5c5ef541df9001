"""Table names as Spark SQL writes them: backticks, qualified names, Spark's case rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.decide.changes import diff
from flink_sql_runner.errors import InvalidInput
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runtime import runtime_manifest
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import load_jobs
from flink_sql_runner.read.names import BadName, is_job_name, job_name_problem, parse_name
from flink_sql_runner.read.schemas import schema_problems
from flink_sql_runner.read.sqlinfo import point_at_views, table_references

RULE = "table names use letters, digits and '_', not a digit first (at most 128)"


@pytest.mark.parametrize(
    "text, canonical, key, view, reading",
    [
        ("orders", "orders", ("orders",), "orders", "table `orders`"),
        ("`orders`", "orders", ("orders",), "orders", "table `orders`"),
        ("Orders", "Orders", ("orders",), "Orders", "table `Orders`"),
        (
            "`kafka`.`orders`",
            "kafka.orders",
            ("kafka", "orders"),
            "kafka__orders",
            "table `orders` in database `kafka`",
        ),
        (
            "kafka.`some-kafka-table`",
            "kafka.`some-kafka-table`",
            ("kafka", "some-kafka-table"),
            "kafka__some_kafka_table",
            "table `some-kafka-table` in database `kafka`",
        ),
        (
            "cat.db.t",
            "cat.db.t",
            ("cat", "db", "t"),
            "cat__db__t",
            "table `t` in database `db` of catalog `cat`",
        ),
        ("`my-orders`", "`my-orders`", ("my-orders",), "my_orders", "table `my-orders`"),
    ],
)
def test_names_read_as_spark_reads_them(text, canonical, key, view, reading):
    name = parse_name(text)
    assert (str(name), name.key, name.view, name.reading()) == (canonical, key, view, reading)
    assert parse_name(str(name)) == name


@pytest.mark.parametrize(
    "text, message",
    [
        ("expensive_ord\u0435rs", f"'expensive_ord\\u0435rs' is not allowed: {RULE}"),
        ("some-table", f"'some-table' is not allowed: {RULE}"),
        ("../etc/passwd", f"'../etc/passwd' is not allowed: {RULE}"),
        ("", f"'' is not allowed: {RULE}"),
        (
            "a.b.c.d",
            "'a.b.c.d' is not allowed: read as a name of 4 parts, `a`.`b`.`c`.`d`; a table name "
            "has at most 3 parts (catalog.database.table)",
        ),
        ("`kafka", "'`kafka' is not allowed: a backtick is not closed"),
        ("`kafka`..`x`", "'`kafka`..`x`' is not allowed: a part of the name is empty"),
        (
            "`kafka``x`",
            "'`kafka``x`' is not allowed: read as table `kafka`x`; part 'kafka`x' "
            "may hold letters, digits, '_' and '-' (between backticks), not a '-' first",
        ),
        ("`kafka` orders", "'`kafka` orders' is not allowed: parts must be separated by '.' only"),
        (
            "kafka-x.`orders`",
            "'kafka-x.`orders`' is not allowed: part 'kafka-x' is written without backticks, "
            f"where {RULE}",
        ),
        (
            "`kafka`.`some table`",
            "'`kafka`.`some table`' is not allowed: read as table `some table` in database "
            "`kafka`; part 'some table' may hold letters, digits, '_' and '-' (between "
            "backticks), not a '-' first",
        ),
    ],
)
def test_names_this_product_cannot_use_say_how_they_were_read(text, message):
    with pytest.raises(BadName) as raised:
        parse_name(text)
    assert str(raised.value) == message


def catalog_file(tmp_path: Path, text: str, name: str = "tables.sql") -> Path:
    path = tmp_path / "tables" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path.parent


TABLES_SQL = """
CREATE TABLE `kafka`.`orders` (order_id BIGINT, price DOUBLE) USING json
  LOCATION 'data/orders';
CREATE TABLE Buyers (id BIGINT) USING json LOCATION 'data/buyers';
CREATE TABLE kafka.`expensive-orders` USING kafka OPTIONS (topic 'expensive');
"""


def job_file(tmp_path: Path, name: str, target: str, sql: str, **extra: str) -> Path:
    folder = tmp_path / "jobs"
    folder.mkdir(exist_ok=True)
    lines = [f"name: {name}", f"target-table: {target!r}", "sql: |"]
    lines += [f"  {line}" for line in sql.splitlines()]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    (folder / f"{name}.yaml").write_text("\n".join(lines) + "\n")
    return folder


def test_backticked_qualified_names_in_manifest_and_sql_resolve_ignoring_case(tmp_path: Path):
    catalog = load_catalog([catalog_file(tmp_path, TABLES_SQL)])
    jobs = job_file(
        tmp_path,
        "big",
        "`KAFKA`.`expensive-orders`",
        "SELECT o.order_id FROM `kafka`.`ORDERS` o JOIN buyers b ON o.order_id = b.id "
        "WHERE o.price > 9000",
    )
    (job,) = load_jobs([jobs], None, catalog, tmp_path / "state")
    assert job.spec["target-table"] == "kafka.`expensive-orders`"
    assert job.source_tables == ("kafka.orders", "Buyers")
    assert sorted(job.tables) == ["Buyers", "kafka.`expensive-orders`", "kafka.orders"]


def test_a_name_not_in_the_catalog_says_how_it_was_read_and_what_is_there(tmp_path: Path):
    catalog = load_catalog([catalog_file(tmp_path, TABLES_SQL)])
    jobs = job_file(tmp_path, "a", "`sink`.`orders`", "SELECT 1 FROM orders JOIN db.`buyers`")
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], None, catalog, tmp_path / "state")
    file = jobs / "a.yaml"
    assert [str(p) for p in raised.value.problems] == [
        f"{file}: sql: reads table 'db.buyers' (read as table `buyers` in database `db`), which "
        "is not in the table catalog; the catalog has 'Buyers'",
        f"{file}: sql: reads table 'orders', which is not in the table catalog; the catalog has "
        "'kafka.orders'",
        f"{file}: target-table: table 'sink.orders' (read as table `orders` in database `sink`) "
        "is not in the table catalog; the catalog has 'kafka.orders'",
    ]


def test_a_bad_name_in_the_sql_or_manifest_is_reported_as_read(tmp_path: Path):
    catalog = load_catalog([catalog_file(tmp_path, TABLES_SQL)])
    jobs = job_file(tmp_path, "a", "kafka.`bad name`", "SELECT 1 FROM `kafka`.`bad/name`")
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], None, catalog, tmp_path / "state")
    file = jobs / "a.yaml"
    assert [str(p) for p in raised.value.problems] == [
        f"{file}: sql: reads table 'kafka.`bad/name`' is not allowed: read as table `bad/name` "
        "in database `kafka`; part 'bad/name' may hold letters, digits, '_' and '-' (between "
        "backticks), not a '-' first",
        f"{file}: target-table: 'kafka.`bad name`' is not allowed: read as table `bad name` in "
        "database `kafka`; part 'bad name' may hold letters, digits, '_' and '-' (between "
        "backticks), not a '-' first",
    ]
    jobs = job_file(tmp_path, "a", "kafka.orders2", "SELECT 1 FROM `kafka`.`bad/name`")
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], None, catalog, tmp_path / "state")
    assert (
        f"{file}: sql: reads table 'kafka.`bad/name`' is not allowed: read as table `bad/name` "
        "in database `kafka`; part 'bad/name' may hold letters, digits, '_' and '-' (between "
        "backticks), not a '-' first" in [str(p) for p in raised.value.problems]
    )


def test_with_spark_sql_case_sensitive_the_case_must_match(tmp_path: Path):
    catalog = load_catalog([catalog_file(tmp_path, TABLES_SQL)])
    jobs = job_file(
        tmp_path,
        "a",
        "kafka.`expensive-orders`",
        "SELECT id FROM buyers",
        sparkProperties='{"spark.sql.caseSensitive": "true"}',
    )
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], None, catalog, tmp_path / "state")
    assert [str(p) for p in raised.value.problems] == [
        f"{jobs / 'a.yaml'}: sql: reads table 'buyers', which is not in the table catalog "
        "(spark.sql.caseSensitive is true; the catalog has 'Buyers')"
    ]


def test_a_table_declared_twice_in_other_case_or_form_is_a_duplicate(tmp_path: Path):
    folder = catalog_file(tmp_path, "CREATE TABLE kafka.orders USING kafka;", "b.sql")
    (folder / "a.yaml").write_text("tables:\n  - name: '`Kafka`.`Orders`'\n    format: kafka\n")
    with pytest.raises(InvalidInput) as raised:
        load_catalog([folder])
    assert [str(p) for p in raised.value.problems] == [
        f"{folder / 'b.sql'}: line 1: table 'kafka.orders' is already defined in "
        f"{folder / 'a.yaml'}"
    ]


def test_qualified_sources_become_views_the_runtime_sql_reads(tmp_path: Path):
    catalog = load_catalog([catalog_file(tmp_path, TABLES_SQL)])
    sql = (
        "SELECT o.order_id, 'kafka.orders' AS note -- kafka.orders\n"
        "FROM `kafka`.`ORDERS` o JOIN Buyers b ON o.order_id = b.id"
    )
    jobs = job_file(tmp_path, "big", "kafka.`expensive-orders`", sql)
    (job,) = load_jobs([jobs], None, catalog, tmp_path / "state")
    manifest = StoredManifest(job.spec, job.tables, Meta(3, "id", "2026-01-01T00:00:00Z"))
    doc = runtime_manifest(manifest, "run", ControlFiles.of("x", 3), job.file)
    assert sorted(doc["source-tables"]) == ["Buyers", "kafka__orders"]
    assert sorted(doc["tables"]) == ["Buyers", "kafka.`expensive-orders`", "kafka__orders"]
    assert doc["target-table"] == "kafka.`expensive-orders`"
    assert doc["sql"] == (
        "SELECT o.order_id, 'kafka.orders' AS note -- kafka.orders\n"
        "FROM `kafka__orders` o JOIN Buyers b ON o.order_id = b.id\n"
    )
    assert job.spec["sql"] == sql + "\n", "the stored query is the user's own"


def test_views_are_pointed_at_after_window_calls_and_in_every_reference():
    sql = (
        "WITH w AS (SELECT * FROM k.a)\n"
        "SELECT window.start, count(*) FROM k.a JOIN w GROUP BY window(t, '1 minute'), "
        "window(t, '2 minutes') UNION ALL SELECT 1, 2 FROM `K` . `A`"
    )
    assert [r.parts for r in table_references(sql)] == [("k", "a"), ("k", "a"), ("K", "A")]
    assert point_at_views(sql, {("k", "a"): "k__a"}) == (
        "WITH w AS (SELECT * FROM `k__a`)\n"
        "SELECT window.start, count(*) FROM `k__a` JOIN w GROUP BY window(t, '1 minute'), "
        "window(t, '2 minutes') UNION ALL SELECT 1, 2 FROM `k__a`"
    )


def test_two_sources_that_would_share_a_view_are_refused(tmp_path: Path):
    tables = TABLES_SQL + "CREATE TABLE kafka__orders (id BIGINT) USING json LOCATION 'x';"
    catalog = load_catalog([catalog_file(tmp_path, tables)])
    jobs = job_file(
        tmp_path, "a", "buyers", "SELECT 1 FROM kafka.orders JOIN kafka__orders ON true"
    )
    with pytest.raises(InvalidInput) as raised:
        load_jobs([jobs], None, catalog, tmp_path / "state")
    assert [str(p) for p in raised.value.problems] == [
        f"{jobs / 'a.yaml'}: sql: tables 'kafka.orders' and 'kafka__orders' would both be read "
        "as view 'kafka__orders'; rename one"
    ]


def test_changes_of_a_qualified_table_show_old_and_new_values():
    old = {"kafka.orders": {"format": "json", "options": {"path": "a"}}}
    new = {"kafka.orders": {"format": "json", "options": {"path": "b"}}}
    spec = {"name": "j", "target-table": "out", "sql": "SELECT 1 FROM kafka.orders"}
    (change,) = diff(spec, old, spec, new)
    assert (change.field, change.old, change.new) == ("tables.kafka.orders.options.path", "a", "b")


@pytest.mark.parametrize(
    "text", ["tick-log", "a", "0_a", "a" * 63, "a" * 64, "../x", "Tick", "-a", "a\n", "a/b", ""]
)
def test_the_job_name_rule_is_the_job_schemas(text: str) -> None:
    """One rule for a job's name: what validation of a manifest's `name` allows, and what the
    commands taking a NAME check (read/names.py)."""
    allowed = not [p for p in schema_problems({"name": text}, "job", "f") if p.field == "name"]
    assert is_job_name(text) == allowed
    assert (job_name_problem(text) is None) == allowed
