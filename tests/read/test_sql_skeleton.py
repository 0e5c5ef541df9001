"""A query's tables read once per skeleton (read/sql_skeleton.py): texts of one skeleton differ
only in plain names and plain numbers, so what one parse read, the names swapped, must be what
sqlglot's full parse of every other reads. Held to that parse over every query the repository's
tests and examples hold, each with its names given other values: fresh ones, each other's,
their CTEs', a string's or a backtick's text, sqlglot's words, other cases."""

from __future__ import annotations

import random
import re

import pytest

from flink_sql_runner.read import sql_skeleton, sqlinfo
from flink_sql_runner.read.sql_skeleton import skeleton, tables_of, template
from flink_sql_runner.read.sqlinfo import SqlProblem, query_tables, read_tables
from tests.read.test_query_shapes import _queries

_NAME = re.compile(r"(?<![\w.`'])[A-Za-z_][A-Za-z0-9_]*(?![\w`'])")


@pytest.fixture(scope="module")
def words() -> frozenset[str]:
    read_tables("SELECT 1 FROM t")  # sqlglot and its Spark dialect loaded
    return sql_skeleton.sqlglot_words()


def _parsed(sql: str) -> object:
    try:
        references, ctes = read_tables(sql)
    except SqlProblem:
        return None
    return [r.parts for r in references], ctes


def _renamed(sql: str, rng: random.Random, words: frozenset[str]) -> str:
    names = sorted({m.group() for m in _NAME.finditer(sql)})
    quoted = re.findall(r"`([^`]*)`|'([^']*)'", sql)
    pool = [
        *names,
        *(a or b for a, b in quoted),
        "x",
        "orders",
        "Orders",
        "ORDERS",
        "t_1",
        "window",
        "lateral",
        "values",
        "stream",
        "interval",
        "minute",
        "k",
        "\u212a",  # the Kelvin sign: `k` in lower case
    ]
    swap = {n: rng.choice(pool) for n in names if rng.random() < 0.6 and n.upper() not in words}

    def one(match: re.Match[str]) -> str:
        return swap.get(match.group(), match.group())

    return _NAME.sub(one, sql)


def _one_skeleton(words, seed: int, tries: int):
    """Each query the repository holds that parses, with its skeleton, and the texts of that
    skeleton its renamings gave (of `tries` each)."""
    rng = random.Random(seed)
    for sql in _queries():
        found = skeleton(sql, words)
        if found is None or _parsed(sql) is None:
            continue
        others = [_renamed(sql, rng, words) for _ in range(tries)]
        yield sql, found, [o for o in others if (s := skeleton(o, words)) and s.key == found.key]


def test_texts_of_one_skeleton_read_the_same_tables_as_a_full_parse(words) -> None:
    compared = 0
    for sql, found, others in _one_skeleton(words, 57, 40):
        known = template(sql, words, found, *read_tables(sql))
        if known is None:
            continue
        assert tables_of(found, known) == _parsed(sql), sql
        for other in others:
            compared += 1
            assert tables_of(skeleton(other, words), known) == _parsed(other), (sql, other)
    assert compared >= 300


@pytest.mark.parametrize(
    ("one", "other"),
    [
        # A CTE is found by its name: the same pattern of equal names, or another skeleton.
        (
            "WITH big AS (SELECT * FROM s) SELECT * FROM big",
            "WITH big AS (SELECT * FROM s) SELECT * FROM small",
        ),
        (
            "WITH Big AS (SELECT * FROM s) SELECT * FROM big",
            "WITH Big AS (SELECT * FROM s) SELECT * FROM bog",
        ),
        (
            "WITH `big` AS (SELECT * FROM s) SELECT * FROM big",
            "WITH `big` AS (SELECT * FROM s) SELECT * FROM small",
        ),
        (
            "WITH big AS (SELECT * FROM s) SELECT 'big' FROM big",
            "WITH big AS (SELECT * FROM s) SELECT 'big' FROM small",
        ),
        (
            "WITH \u212a AS (SELECT * FROM s) SELECT * FROM k",
            "WITH \u212a AS (SELECT * FROM s) SELECT * FROM j",
        ),
        # A word sqlglot holds is kept as written.
        (
            "SELECT * FROM t LATERAL VIEW explode(a) e AS x",
            "SELECT * FROM t tt VIEW explode(a) e AS x",
        ),
        ("SELECT * FROM t AS a", "SELECT * FROM t AS window"),
    ],
)
def test_what_the_parser_could_read_keeps_skeletons_apart(words, one: str, other: str) -> None:
    a, b = skeleton(one, words), skeleton(other, words)
    assert a is not None and b is not None
    assert a.key != b.key
    assert _parsed(one) != _parsed(other) or "LATERAL" in one or "window" in other


def test_a_fleet_of_one_query_each_is_parsed_once_per_skeleton(monkeypatch) -> None:
    monkeypatch.setattr(sql_skeleton, "USE_AFTER", 8)
    monkeypatch.setattr(sqlinfo, "_by_shape", {})
    monkeypatch.setattr(sqlinfo, "_templates", {})
    monkeypatch.setattr(sqlinfo, "_skeleton_words", [])
    monkeypatch.setattr(sqlinfo, "_shapes_parsed", [0])
    parsed: list[str] = []
    real = sqlinfo.read_tables
    monkeypatch.setattr(sqlinfo, "read_tables", lambda sql: parsed.append(sql) or real(sql))
    texts = [
        f"SELECT o.id, c.name_{n} FROM shop_{n}.orders_{n} o JOIN customers_{n} c ON o.c = c.id"
        for n in range(60)
    ]
    for sql in texts:
        assert query_tables(sql) == _parsed(sql)
    assert len(parsed) == sql_skeleton.USE_AFTER  # the last of them made the template
    with pytest.raises(SqlProblem):
        query_tables("SELECT FROM WHERE orders_1")  # a failure is parsed, and not kept


def _through_query_tables(monkeypatch, first: str, then: str):
    """`query_tables` of `then`, after 12 other queries (skeletons in use from the 8th) and
    `first`."""
    monkeypatch.setattr(sql_skeleton, "USE_AFTER", 8)
    monkeypatch.setattr(sqlinfo, "_by_shape", {})
    monkeypatch.setattr(sqlinfo, "_templates", {})
    monkeypatch.setattr(sqlinfo, "_skeleton_words", [])
    monkeypatch.setattr(sqlinfo, "_shapes_parsed", [0])
    for n in range(12):
        query_tables(f"SELECT c{n} FROM dummy_{n}")
    try:
        query_tables(first)
    except SqlProblem:
        pass
    try:
        return query_tables(then)
    except SqlProblem:
        return None


# Review of issue 57, eighteenth part: texts whose tokens depend on a name's spelling.
@pytest.mark.parametrize(
    ("first", "then"),
    [
        # sqlglot's keyword `USER-DEFINED` is taken from the start of `user-definedfrom`.
        ("SELECT id, user-definedfrom orders", "SELECT id, user-fooz orders"),
        ("SELECT id, user-fooz orders", "SELECT id, user-definedfrom orders"),
        ("SELECT * FROM src, user-definedx", "SELECT * FROM src, user-fooz"),
        (
            "SELECT * FROM src WHERE a IN (user-fooz)",
            "SELECT * FROM src WHERE a IN (user-definedx)",
        ),
        # Spark's names may start with a digit: `1.x5` is one name, `1.e5` a number.
        ("SELECT * FROM src TABLESAMPLE (1.e5 ROWS)", "SELECT * FROM src TABLESAMPLE (1.x5 ROWS)"),
        ("SELECT 1.e5 (SELECT 1 FROM u) FROM t", "SELECT 1.x5 (SELECT 1 FROM u) FROM t"),
        # A CTE's name that holds a replaced name is not a text every query has.
        ("WITH 1.x5 AS (SELECT 1) SELECT * FROM src", "WITH 1.y5 AS (SELECT 1) SELECT * FROM src"),
    ],
)
def test_texts_the_tokenizer_reads_by_their_names_are_parsed_alone(
    monkeypatch, first: str, then: str
) -> None:
    assert _through_query_tables(monkeypatch, first, then) == _parsed(then)


def test_a_query_of_more_names_than_places_has_no_skeleton(words) -> None:
    """Each name's place is one character of the key: past 65,535 names the query is parsed
    alone (131,072 made a character Unicode does not have)."""
    sql = "SELECT " + ",".join(f"c{i}" for i in range(70_000)) + " FROM src"
    assert skeleton(sql, words) is None


def test_what_sqlglot_fails_with_is_a_problem_of_the_query() -> None:
    with pytest.raises(SqlProblem, match="does not parse"):
        read_tables("SELECT x FROM src WHERE y = 1.ebd")  # sqlglot: decimal.InvalidOperation


def test_whether_queries_keep_state_is_read_once_per_skeleton(monkeypatch) -> None:
    _through_query_tables(monkeypatch, "SELECT 1 FROM t", "SELECT 2 FROM t")  # skeletons in use
    monkeypatch.setattr(sqlinfo, "_stateless_by_shape", {})
    monkeypatch.setattr(sqlinfo, "_stateless_by_skeleton", {})
    parsed: list[str] = []
    real = sqlinfo._parse_query
    monkeypatch.setattr(sqlinfo, "_parse_query", lambda sql: parsed.append(sql) or real(sql))
    for n in range(20):
        assert sqlinfo.keeps_no_state(f"SELECT id AS key_{n} FROM src_{n} WHERE a > {n}")
        assert not sqlinfo.keeps_no_state(f"SELECT k_{n}, count(*) FROM src_{n} GROUP BY k_{n}")
        assert not sqlinfo.keeps_no_state(f"SELECT * FROM a_{n} JOIN b_{n} ON a_{n}.k = b_{n}.k")
    assert len(parsed) == 3
    assert not sqlinfo.keeps_no_state("SELECT FROM WHERE x_1")  # a failure: parsed, may keep
    assert not sqlinfo.keeps_no_state("SELECT FROM WHERE x_2")
    assert len(parsed) == 5


def test_texts_of_one_skeleton_keep_state_alike(words) -> None:
    compared = 0
    for sql, _, others in _one_skeleton(words, 58, 8):
        first = sqlinfo._keeps_no_state(sql)
        for other in others:
            compared += 1
            assert sqlinfo._keeps_no_state(other) == first, (sql, other)
    assert compared >= 100


# Second review of issue 57, eighteenth part.
def test_a_compiled_sqlglot_has_no_skeletons(monkeypatch) -> None:
    """sqlglot's compiled build (`sqlglot[c]`) keeps its parser's words in machine code, where
    `sqlglot_words` cannot read them (`PLACING`, `WITHIN`, `NOWAIT` ...): no skeleton then."""
    import sqlglot.parser

    read_tables("SELECT 1 FROM t")
    assert sql_skeleton.sqlglot_words()
    monkeypatch.setattr(sqlglot.parser, "__file__", sqlglot.parser.__file__[:-3] + ".so")
    assert sql_skeleton.sqlglot_words() is None
    monkeypatch.setattr(sql_skeleton, "USE_AFTER", 2)
    monkeypatch.setattr(sqlinfo, "_skeleton_words", [])
    monkeypatch.setattr(sqlinfo, "_shapes_parsed", [0])
    monkeypatch.setattr(sqlinfo, "_by_shape", {})
    for n in range(4):
        assert query_tables(f"SELECT c_{n} FROM t_{n}") == ([(f"t_{n}",)], frozenset())
    assert sqlinfo._skeleton_of("SELECT c FROM t") is None


def test_a_comprehensions_first_text_is_a_word() -> None:
    """A comprehension's or a lambda's first constant is no docstring (Python 3.11)."""
    import sys
    import types

    module = types.ModuleType("sqlglot._fsr_test")
    exec(
        'def f(tokens):\n    return any(t.upper() == "QQGENWORD" for t in tokens)', module.__dict__
    )
    sys.modules["sqlglot._fsr_test"] = module
    try:
        assert "QQGENWORD" in sql_skeleton.sqlglot_words()
    finally:
        del sys.modules["sqlglot._fsr_test"]


def test_a_template_looks_at_each_name_a_few_times(words) -> None:
    """A query of thousands of references: each reference's names are found where they are,
    not by a scan of every name (8,000 references took 8 s, the parse 1 s)."""
    import sys

    sql = " UNION ALL ".join(f"SELECT qcol FROM qtab_{n}" for n in range(600))
    found = skeleton(sql, words)
    references, ctes = read_tables(sql)
    steps = [0]

    def trace(frame, event, arg):
        if frame.f_code.co_filename == sql_skeleton.__file__:
            steps[0] += 1
        return trace

    sys.settrace(trace)
    try:
        known = template(sql, words, found, references, ctes)
    finally:
        sys.settrace(None)
    assert known is not None and len(known.tables) == 600
    assert steps[0] < 200 * 600, steps[0]


@pytest.mark.parametrize(
    ("sql", "tables"),
    [
        ("SELECT * FROM `window(s)`", [("window(s)",)]),
        ("SELECT * FROM db.`window (x)` JOIN t ON true", [("db", "window (x)"), ("t",)]),
        ("SELECT 'window(' AS w, window(ts, '1 minute') FROM ev", [("ev",)]),
    ],
)
def test_a_window_call_is_renamed_for_the_parser_outside_names_and_strings(sql, tables) -> None:
    """Second review: `window(` was renamed inside a name between backticks too."""
    references, _ = read_tables(sql)
    assert [r.parts for r in references] == tables
    assert all(sql[r.start : r.end].endswith(r.parts[-1] + "`") or
               sql[r.start : r.end].endswith(r.parts[-1]) for r in references)  # fmt: skip


@pytest.mark.parametrize("text", ['"\\' * 100_000, "'\\" * 100_000, "/*x " * 50_000, "`" * 99_999])
def test_what_is_passed_over_for_window_calls_is_read_once(text: str) -> None:
    """A string, name or comment left open runs to the end of the text: a pattern that could
    fail after it took `"\\"\\...` back one character at a time (200,000 characters: 9 min)."""
    assert not [m for m in sqlinfo._WINDOW_CALL.finditer(text + " window(x)") if m.group(2)]
