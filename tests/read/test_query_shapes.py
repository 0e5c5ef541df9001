"""A query's tables, and whether it keeps no state, read once per shape (read/sqlinfo.py
`query_tables`, `keeps_no_state`): two texts of one shape differ only in plain numbers, so they
must read the same tables, keep state alike, parse alike or fail alike.
Held to sqlglot's full parse over every query the repository's tests and examples hold, each
with its literals given other values (a table's name among them, quotes, comment marks)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

from flink_sql_runner.read import sqlinfo
from flink_sql_runner.read.sqlinfo import SqlProblem, query_shape, query_tables, read_tables

ROOT = Path(__file__).resolve().parents[2]

#: Values a literal is given: texts that would be structure outside a string.
STRINGS = [  # each one makes another shape: a string is kept as written
    "",
    "x",
    "FROM other",
    "a' FROM b '",
    ") JOIN t2 ON (",
    "--",
    "/*",
    "`",
    "é",
    " ",
    "1 minute",
    "zz",
    "$.a",
]
NUMBERS = ["0", "1", "42", "999999999999999999999", "1.5", "0.0", "10.25"]
_LITERAL = re.compile(r"'[^'\\\n]*'|(?<![\w.])[0-9]+(?:\.[0-9]+)?(?![\w.])")

HAND = [
    "SELECT a FROM t WHERE x > 10 AND y = 'ab c'",
    "SELECT 1.5 AS d, t1.x FROM `db`.`t'1` t1 JOIN s ON t1.k = s.k LIMIT 5",
    "WITH w AS (SELECT * FROM src WHERE v > 3) SELECT * FROM w UNION ALL SELECT * FROM other",
    "SELECT window(ts, '10 seconds'), count(*) FROM ev GROUP BY window(ts, '10 seconds')",
    "SELECT CAST(a AS DECIMAL(10, 2)) FROM t",
    "SELECT * FROM t TABLESAMPLE (5 PERCENT)",
    "SELECT 'a''b' FROM t",
    "SELECT * FROM t WHERE s IN ('x', 'y') AND n BETWEEN 1 AND 2.5",
    "SELECT é1 FROM é2",
    "SELECT 1 FROM",
    "SELECT * FROM t; SELECT 1",
]


def _queries() -> list[str]:
    found = list(HAND)
    for path in sorted(ROOT.glob("*/**/*.y*ml")):
        if path.parts[len(ROOT.parts)] not in ("tests", "examples", "templates"):
            continue
        try:
            doc = yaml.safe_load(path.read_text("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("sql"), str):
            found.append(doc["sql"])
    return sorted(set(found))


def _outcome(sql: str) -> object:
    """What is read of a query by shape: its tables and CTEs, and whether it keeps no state."""
    try:
        references, ctes = read_tables(sql)
    except SqlProblem:
        return "does not parse"
    return [r.parts for r in references], ctes, sqlinfo._keeps_no_state(sql)


def _other_literals(sql: str, rng: random.Random) -> str:
    def swap(match: re.Match[str]) -> str:
        text = match.group()
        if text.startswith("'"):
            return "'" + rng.choice(STRINGS) + "'"
        pool = [n for n in NUMBERS if ("." in n) == ("." in text)]
        return rng.choice(pool)

    return _LITERAL.sub(swap, sql)


def test_texts_of_one_shape_read_the_same_tables_and_parse_alike() -> None:
    rng, compared, queries = random.Random(57), 0, _queries()
    assert len(queries) >= 40
    for sql in queries:
        shape = query_shape(sql)
        if shape is None:
            continue
        first = _outcome(sql)
        for _ in range(24):
            other = _other_literals(sql, rng)
            if query_shape(other) != shape:
                continue
            compared += 1
            assert _outcome(other) == first, (sql, other)
    assert compared >= 300


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("SELECT 1 FROM t", "SELECT 1.0 FROM t"),  # an integer and a decimal: kinds apart
        ("SELECT é1 FROM t", "SELECT é2 FROM t"),  # a digit inside a name is the name's
        ("SELECT x1 FROM t", "SELECT x2 FROM t"),
        ("SELECT 1L FROM t", "SELECT 2L FROM t"),  # a typed literal is left as it is
        ("SELECT 'a' FROM t", "SELECT 'a' FROM u"),
        # Review of issue 57, 2: a digit after a character sqlglot keeps in a name; a string
        # where sqlglot reads a table's name.
        ("SELECT * FROM orders·1", "SELECT * FROM orders·2"),
        ("SELECT * FROM 'orders'", "SELECT * FROM 'payments'"),
        ("SELECT * FROM ''", "SELECT * FROM 'orders'"),
        ("SELECT * FROM t JOIN 'a' ON true", "SELECT * FROM t JOIN 'b' ON true"),
    ],
)
def test_what_is_not_a_plain_literal_keeps_shapes_apart(one: str, other: str) -> None:
    assert query_shape(one) != query_shape(other)


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT "a" FROM t',  # Spark's double-quoted string
        "SELECT 'a\\'b' FROM t",  # an escape
        "SELECT 1 FROM t -- it's",
        "SELECT /* ' */ 1 FROM t",
        "SELECT 'open FROM t",
        "SELECT `open FROM t",
        "SELECT 'a\nb' FROM t",  # a string over two lines
        "SELECT \x00i FROM t",
    ],
)
def test_a_text_that_could_be_lexed_otherwise_has_no_shape(sql: str) -> None:
    assert query_shape(sql) is None


def test_whether_a_query_keeps_state_is_read_once_per_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    real = sqlinfo._parse_query
    monkeypatch.setattr(sqlinfo, "_stateless_by_shape", {})
    monkeypatch.setattr(sqlinfo, "_parse_query", lambda sql: parsed.append(sql) or real(sql))
    for n in range(20):
        assert sqlinfo.keeps_no_state(f"SELECT id FROM src WHERE amount > {n}")
        assert not sqlinfo.keeps_no_state(f"SELECT k, count(*) FROM src GROUP BY k LIMIT {n}")
    assert len(parsed) == 2


def test_one_parse_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = sqlinfo.read_tables
    monkeypatch.setattr(sqlinfo, "_by_shape", {})
    monkeypatch.setattr(sqlinfo, "read_tables", lambda sql: parsed.append(sql) or real(sql))
    for n in range(50):
        assert query_tables(f"SELECT id FROM src_{n % 2} WHERE amount > {n}") == (
            [(f"src_{n % 2}",)],
            frozenset(),
        )
    assert len(parsed) == 2
    with pytest.raises(SqlProblem, match="line 1, column"):
        query_tables("SELECT FROM WHERE 5")
    with pytest.raises(SqlProblem, match="line 1, column"):
        query_tables("SELECT FROM WHERE 6")  # a failure is not kept: each says where it is
    assert len(parsed) == 4
