from __future__ import annotations

import pytest

from flink_sql_runner.read.sqlinfo import (
    SqlProblem,
    code_fingerprint,
    code_problem,
    keeps_no_state,
    sql_fingerprint,
    tables_read,
)


def test_tables_read_excludes_ctes_and_keeps_qualified_names():
    sql = """
        WITH big AS (SELECT * FROM orders WHERE price > 10)
        SELECT b.id FROM big b JOIN db.buyers u ON b.buyer = u.id
        WHERE b.id IN (SELECT id FROM vip)
    """
    assert tables_read(sql) == ["db.buyers", "orders", "vip"]


def test_spark_time_window_in_group_by_parses():
    sql = "SELECT window.start, count(*) FROM orders GROUP BY window(order_time, '1 minute')"
    assert tables_read(sql) == ["orders"]


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT FROM WHERE", "does not parse"),
        ("SELECT 1 FROM a; SELECT 2 FROM b", "exactly one query, found 2"),
        ("DELETE FROM orders", "must be a query (SELECT ...), found DELETE"),
    ],
)
def test_invalid_sql(sql, message):
    with pytest.raises(SqlProblem, match=message.replace("(", r"\(").replace(")", r"\)")):
        tables_read(sql)


def test_fingerprint_ignores_whitespace_comments_keyword_case_and_trailing_semicolon():
    a = "SELECT id, name FROM t WHERE x = 'A  b'"
    b = "-- note\nselect id,\n  name /* c */ from t\nwhere x = 'A  b';"
    assert sql_fingerprint(a) == sql_fingerprint(b)


@pytest.mark.parametrize(
    "other",
    [
        "SELECT id, name FROM t WHERE x = 'a  b'",  # string literal case matters
        "SELECT id, name FROM t WHERE x = 'A b'",  # whitespace inside a literal matters
        "SELECT id FROM t WHERE x = 'A  b'",
        "SELECT id, name FROM u WHERE x = 'A  b'",
    ],
)
def test_fingerprint_sees_real_changes(other):
    assert sql_fingerprint("SELECT id, name FROM t WHERE x = 'A  b'") != sql_fingerprint(other)


def test_code_fingerprint_ignores_comments_and_formatting_only():
    a = "execution_output = spark.table('t').select('a')\n"
    b = "# comment\nexecution_output = (\n    spark.table('t')\n    .select('a')  # pick\n)\n"
    assert code_fingerprint(a) == code_fingerprint(b)
    assert code_fingerprint(a) != code_fingerprint(a.replace("'a'", "'b'"))


def test_code_problem():
    assert code_problem("execution_output = spark.table('t')") is None
    assert code_problem("x: int = 1\nexecution_output: object = x") is None
    assert "execution_output" in code_problem("result = 1")
    assert "not valid Python" in code_problem("execution_output = = 1")


@pytest.mark.parametrize(
    "before, after",
    [
        ("SELECT * FROM t WHERE name RLIKE r'Bob'", "SELECT * FROM t WHERE name RLIKE r'bob'"),
        ("SELECT x'1F' AS b FROM t", "SELECT X'1E' AS b FROM t"),
        ("SELECT 'Bob' FROM t", "SELECT 'bob' FROM t"),
        ('SELECT "Bob" FROM t', 'SELECT "bob" FROM t'),
        ("SELECT Name FROM t", "SELECT name FROM t"),
    ],
)
def test_a_literal_or_name_whose_case_changed_is_a_change(before: str, after: str) -> None:
    assert sql_fingerprint(before) != sql_fingerprint(after)


def test_keyword_case_whitespace_and_comments_are_no_change() -> None:
    assert sql_fingerprint("select a from t where a rlike r'Bob' -- note") == sql_fingerprint(
        "SELECT a\n  FROM t /* c */ WHERE a RLIKE r'Bob';"
    )


def test_fingerprints_are_kept_by_digest_but_never_a_text_that_could_not_be_tokenised() -> None:
    from flink_sql_runner.read.sqlinfo import Fingerprints

    first = Fingerprints()
    good, broken = "SELECT a FROM t", "SELECT 'unterminated FROM t"
    assert first.of(good) == first.of(" select  a FROM t ") and first.computed == 2
    assert first.of(broken).startswith("text:")
    kept = first.kept()
    assert len(kept) == 2 and all(v.startswith("sql:") for v in kept.values())
    assert not any("SELECT" in v or "select" in v for v in kept.values())
    again = Fingerprints(kept)
    assert again.of(good) == first.of(good) and again.computed == 0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, count(*) FROM t GROUP BY id",
        "SELECT DISTINCT id FROM t",
        "SELECT * FROM a JOIN b ON a.k = b.k",
        "SELECT id FROM t LIMIT 3",
        "SELECT id FROM a UNION SELECT id FROM b",
        "SELECT my_udf(id) FROM t",
        "SELECT sum(v) OVER (PARTITION BY k) FROM t",
        "SELECT * FROM t WHERE k IN (SELECT k FROM u)",
        "SELECT any(value IS NULL) AS saw_tombstone FROM src",  # found by review: sqlglot's ANY
        "SELECT every(v > 0) FROM t",
        "SELECT k, v FROM t TABLESAMPLE (10 ROWS)",  # found by review: a limit, in state
        "WITH c AS (SELECT k, count(*) AS n FROM t GROUP BY k) SELECT * FROM c",
        "not SQL at all",
    ],
)
def test_a_query_that_may_keep_state_is_left_to_spark(sql):
    assert not keeps_no_state(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT value, timestamp AS tick_time, value % 2 = 0 AS even FROM ticks",
        "SELECT upper(k), CAST(v AS STRING) FROM t WHERE v > 1 AND k IN ('a', 'b')",
        "SELECT id FROM a UNION ALL SELECT id FROM b",
        "SELECT window.start FROM t",
    ],
)
def test_a_query_that_certainly_keeps_no_state_is_read_without_spark(sql):
    assert keeps_no_state(sql)
