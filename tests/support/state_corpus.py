"""The corpus of query changes: pairs of an old and a new query, the verdict the plan gives each
stateful operator of the new one (decide/state.py), and what Spark itself does when the new query
starts on the old query's checkpoint, per Spark line. tests/runner/test_stateful_plan.py checks
the verdicts, tests/runner/test_state_restart.py the restarts, and docs/concepts/state.md shows the
table
`table()` renders (tests/docs/test_state_corpus.py keeps it so)."""

from __future__ import annotations

from dataclasses import dataclass

from flink_sql_runner.decide.state import KEPT, REBUILT, UNKNOWN

ORDERS = "k STRING, v BIGINT, ts TIMESTAMP"
PAYS = "k STRING, amount BIGINT, ts TIMESTAMP"

#: The Spark lines, the default one last.
LINES = ("3.5", "4.0", "4.1", "4.2", "4.3")

#: Spark's answer when it starts the new query on the old checkpoint and goes on.
ACCEPTS = "accepts"
#: Spark 3.5's refusal of a state whose schema is not the old one's: its errors have no class.
SCHEMA_3_5 = "StateSchemaNotCompatible"
KEY = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
VALUE = "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"
BEFORE_4_3 = ("4.0", "4.1", "4.2")
NO_DELTA = "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS"

# Spark's answers, by line, as measured (tests/runner/test_state_restart.py): "4.x" is every
# 4 line that has none of its own.
ACCEPTED = {"3.5": ACCEPTS, "4.x": ACCEPTS}
KEY_CHANGED = {"3.5": SCHEMA_3_5, "4.x": KEY}
VALUE_CHANGED = {"3.5": SCHEMA_3_5, "4.x": VALUE}
#: A column of the state that could not be null and now may: refused before 4.3.
KEY_NOW_NULLABLE = {"3.5": SCHEMA_3_5, **dict.fromkeys(BEFORE_4_3, KEY), "4.x": ACCEPTS}
VALUE_NOW_NULLABLE = {"3.5": SCHEMA_3_5, **dict.fromkeys(BEFORE_4_3, VALUE), "4.x": ACCEPTS}
#: State the old query never kept: its files are missing.
NO_STATE = {
    "3.5": "FileNotFoundException",
    "4.0": NO_DELTA,
    "4.1": NO_DELTA,
    "4.x": "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
}
#: Sources in each other's places: Spark matches them to the checkpoint by place, and the new
#: first source fails on the old first source's files (a Java error without a class).
SOURCES_SWAPPED = {"3.5": "IllegalArgumentException", "4.x": "IllegalArgumentException"}
#: A query Spark does not run as a stream, checkpoint or not: an aggregation over another's
#: output without a window could drop rows as late (its correctness check).
NOT_A_STREAM = {"3.5": "ExtendedAnalysisException", "4.x": "_LEGACY_ERROR_TEMP_3102"}


@dataclass(frozen=True)
class Case:
    """One change: its name, the old and the new query, the verdict of each stateful operator of
    the new one, a reason's words (or what a kept state mixes) or None, and Spark's answer when
    the new query starts on the old checkpoint, by line (`outcome`)."""

    name: str
    old: str
    new: str
    verdicts: list[str]
    words: str | None
    restart: dict[str, str]


COUNTS = "SELECT k, window(ts, '20 seconds') AS w, count(*) AS c FROM orders GROUP BY k, {w}"
W20 = "window(ts, '20 seconds')"
LATE = "-- late\n"
JOINED = (
    "SELECT o.k, o.v, p.amount FROM orders o {how} JOIN pays p ON o.k = p.k AND "
    "p.ts BETWEEN o.ts AND o.ts + INTERVAL {bound}"
)

#: The changes. Views: orders (k, v, ts; watermark 10 s; 20 s
#: for a query marked LATE), pays (k, amount, ts; watermark 10 s).
CORPUS = [
    Case("filter added before", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("FROM orders", "FROM orders WHERE v > 1"),
     [KEPT], "v > 1", ACCEPTED),
    Case("column computed after", COUNTS.format(w=W20),
     f"SELECT k, w, c, c * 2 AS twice FROM ({COUNTS.format(w=W20)})", [KEPT], None, ACCEPTED),
    Case("aggregate added", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("count(*) AS c", "count(*) AS c, sum(v) AS s"),
     [REBUILT], "aggregates count(*) -> count(*), sum(v)", VALUE_CHANGED),
    Case("grouping key added", COUNTS.format(w=W20),
     COUNTS.format(w=f"{W20}, v").replace("SELECT k,", "SELECT k, v,"),
     [REBUILT], "keys k, window(ts, 20 seconds) -> k, window(ts, 20 seconds), v", KEY_CHANGED),
    Case("window 20 s -> 30 s", COUNTS.format(w=W20),
     COUNTS.format(w="window(ts, '30 seconds')").replace("20 seconds", "30 seconds"),
     [REBUILT], "window 20 seconds -> 30 seconds", ACCEPTED),
    Case("count(*) -> sum(v) under one name", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("count(*) AS c", "sum(v) AS c"),
     [REBUILT], "aggregate c: count(*) -> sum(v)", VALUE_NOW_NULLABLE),
    Case("aggregate renamed", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("AS c", "AS n"), [KEPT], None, ACCEPTED),
    Case("spaces and case", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("SELECT", "select\n ").replace("GROUP BY", "group   by"),
     [KEPT], None, ACCEPTED),
    Case("slide changed", "SELECT k, count(*) AS c FROM orders GROUP BY k, "
     "window(ts, '30 seconds', '10 seconds')",
     "SELECT k, count(*) AS c FROM orders GROUP BY k, window(ts, '30 seconds', '15 seconds')",
     [REBUILT], "window 30 seconds, 10 seconds -> 30 seconds, 15 seconds", ACCEPTED),
    Case("tumbling to sliding", COUNTS.format(w=W20),
     "SELECT k, window(ts, '20 seconds', '10 seconds') AS w, count(*) AS c FROM orders "
     "GROUP BY k, window(ts, '20 seconds', '10 seconds')",
     [REBUILT], "window 20 seconds -> 20 seconds, 10 seconds", KEY_NOW_NULLABLE),
    Case("watermark delay 10 s -> 20 s", COUNTS.format(w=W20),
     LATE + COUNTS.format(w=W20),
     [REBUILT], "watermark on ts: 10 seconds -> 20 seconds", ACCEPTED),
    Case("aggregate input changed through a projection",
     "SELECT k, sum(x) AS s FROM (SELECT k, v AS x, ts FROM orders) GROUP BY k, "
     "window(ts, '20 seconds')",
     "SELECT k, sum(x) AS s FROM (SELECT k, v * 2 AS x, ts FROM orders) GROUP BY k, "
     "window(ts, '20 seconds')",
     [REBUILT], "aggregate s: sum(v) -> sum(v * 2)", ACCEPTED),
    Case("the same input under another name",
     "SELECT k, sum(x) AS s FROM (SELECT k, v AS x, ts FROM orders) GROUP BY k, "
     "window(ts, '20 seconds')",
     "SELECT k, sum(v) AS s FROM orders GROUP BY k, window(ts, '20 seconds')", [KEPT], None,
     ACCEPTED),
    Case("key computed another way",
     "SELECT upper(k) AS g, count(*) AS c FROM orders GROUP BY upper(k), "
     "window(ts, '20 seconds')",
     "SELECT lower(k) AS g, count(*) AS c FROM orders GROUP BY lower(k), "
     "window(ts, '20 seconds')",
     [REBUILT], "key: upper(k) -> lower(k)", ACCEPTED),
    Case("keys swapped", COUNTS.format(w=W20),
     "SELECT k, window(ts, '20 seconds') AS w, count(*) AS c FROM orders "
     "GROUP BY window(ts, '20 seconds'), k",
     [REBUILT], "key: k -> window(ts, 20 seconds)", KEY_CHANGED),
    Case("aggregates swapped",
     "SELECT k, min(v) AS lo, max(v) AS hi FROM orders GROUP BY k, window(ts, '20 seconds')",
     "SELECT k, max(v) AS hi, min(v) AS lo FROM orders GROUP BY k, window(ts, '20 seconds')",
     [REBUILT], "min(v) -> max(v)", ACCEPTED),
    Case("min -> max", "SELECT k, min(v) AS m FROM orders GROUP BY k, window(ts, '20 seconds')",
     "SELECT k, max(v) AS m FROM orders GROUP BY k, window(ts, '20 seconds')",
     [REBUILT], "aggregate m: min(v) -> max(v)", ACCEPTED),
    Case("a cast into the aggregate",
     "SELECT k, sum(v) AS s FROM orders GROUP BY k, window(ts, '20 seconds')",
     "SELECT k, sum(CAST(v AS DOUBLE)) AS s FROM orders GROUP BY k, window(ts, '20 seconds')",
     [REBUILT], "aggregate s", VALUE_CHANGED),
    Case("count(*) -> count(1)", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("count(*)", "count(1)"), [KEPT], None, ACCEPTED),
    Case("count(*) -> count(v): nulls counted no more", COUNTS.format(w=W20),
     COUNTS.format(w=W20).replace("count(*)", "count(v)"),
     [REBUILT], "aggregate c: count(*) -> count(v)", ACCEPTED),
    Case("HAVING on the same count", COUNTS.format(w=W20),
     COUNTS.format(w=W20) + " HAVING count(*) > 1", [KEPT], None, ACCEPTED),
    Case("a filter after the aggregation", COUNTS.format(w=W20),
     f"SELECT * FROM ({COUNTS.format(w=W20)}) WHERE c > 2", [KEPT], None, ACCEPTED),
    Case("distinct columns added", "SELECT DISTINCT k, ts FROM orders",
     "SELECT DISTINCT k, v, ts FROM orders", [REBUILT], "keys", KEY_CHANGED),
    Case("distinct with a filter added", "SELECT DISTINCT k, ts FROM orders",
     "SELECT DISTINCT k, ts FROM orders WHERE v > 0", [KEPT], "v > 0", ACCEPTED),
    Case("join inner -> left outer", JOINED.format(how="", bound="1 MINUTE"),
     JOINED.format(how="LEFT OUTER", bound="1 MINUTE"), [REBUILT], "join inner -> left outer",
     VALUE_NOW_NULLABLE),
    Case("join time bound 1 -> 2 minutes", JOINED.format(how="", bound="1 MINUTE"),
     JOINED.format(how="", bound="2 MINUTES"), [REBUILT], "key", ACCEPTED),
    Case("join with a column computed after",
     JOINED.format(how="", bound="1 MINUTE"),
     f"SELECT *, amount * 2 AS twice FROM ({JOINED.format(how='', bound='1 MINUTE')})",
     [KEPT], None, ACCEPTED),
    Case("join sides swapped", JOINED.format(how="", bound="1 MINUTE"),
     "SELECT o.k, o.v, p.amount FROM pays p JOIN orders o ON o.k = p.k AND "
     "p.ts BETWEEN o.ts AND o.ts + INTERVAL 1 MINUTE", [REBUILT], None, SOURCES_SWAPPED),
    Case("an aggregation where there was none", "SELECT k, v, ts FROM orders",
     COUNTS.format(w=W20), [REBUILT], "keeps no state", NO_STATE),
    Case("a second aggregation on top", COUNTS.format(w=W20),
     f"SELECT k, max(c) AS top FROM ({COUNTS.format(w=W20)}) GROUP BY k",
     [REBUILT, REBUILT], "stateful operators changed", NOT_A_STREAM),
    Case("a user-defined function in the key",
     "SELECT fsr_tag(k) AS g, count(*) AS c FROM orders GROUP BY fsr_tag(k), "
     "window(ts, '20 seconds')",
     "SELECT fsr_tag(k) AS g, count(*) AS c FROM orders GROUP BY fsr_tag(k), "
     "window(ts, '20 seconds')",
     [UNKNOWN], "user-defined function", ACCEPTED),
    Case("a limit raised", "SELECT k, v FROM orders LIMIT 10", "SELECT k, v FROM orders LIMIT 20",
     [REBUILT], "key: 10 -> 20", ACCEPTED),
    # found by review: each gave a wrong verdict before its fix
    Case("self-join sides swapped",
     "SELECT a.k FROM orders a JOIN orders b ON a.k = b.k AND "
     "b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 MINUTE",
     "SELECT a.k FROM orders a JOIN orders b ON a.k = b.k AND "
     "a.ts BETWEEN b.ts AND b.ts + INTERVAL 1 MINUTE", [REBUILT], None, ACCEPTED),
    Case("lambda arguments swapped",
     "SELECT k, sum(aggregate(array(v, 1L), 0L, (acc, x) -> acc - x)) AS s FROM orders "
     "GROUP BY k, window(ts, '20 seconds')",
     "SELECT k, sum(aggregate(array(v, 1L), 0L, (acc, x) -> x - acc)) AS s FROM orders "
     "GROUP BY k, window(ts, '20 seconds')", [REBUILT], "aggregate s", ACCEPTED),
    Case("a binary literal, unchanged, cannot be compared",
     "SELECT k, count_if(CAST(k AS BINARY) = X'01') AS n FROM orders "
     "GROUP BY k, window(ts, '20 seconds')",
     "SELECT k, count_if(CAST(k AS BINARY) = X'01') AS n FROM orders "
     "GROUP BY k, window(ts, '20 seconds')", [UNKNOWN], None, ACCEPTED),
    Case("a day window shifted by two hours",
     "SELECT k, count(*) AS c FROM orders GROUP BY k, window(ts, '1 day')",
     "SELECT k, count(*) AS c FROM orders GROUP BY k, window(ts, '1 day', '1 day', '2 hours')",
     [REBUILT], "window", ACCEPTED),
]  # fmt: skip

#: The changes whose meaning changed but whose state's schema Spark may accept (4.3 accepts
#: both): the verdict must not be kept, and what Spark writes on the old state is not the truth.
ACCEPTED_WRONGLY = ("window 20 s -> 30 s", "count(*) -> sum(v) under one name")


def delay_of(sql: str) -> str:
    """orders' watermark delay for a query: 20 s where it is marked LATE, else 10 s."""
    return "20 seconds" if sql.startswith(LATE) else "10 seconds"


def create_views(session, orders, pays, delay: str = "10 seconds", stream: bool = True) -> None:  # noqa: ANN001 - a SparkSession, a folder or a list of files
    """The corpus's views in `session`: orders and pays read as JSON from their folders, as
    streams, or from lists of files, as a batch (the truth a stream is checked against), each
    with its watermark on ts (a batch ignores it), and `fsr_tag`, a Python function that gives
    back its argument."""
    reader = session.readStream if stream else session.read
    for name, schema, source, wait in (
        ("orders", ORDERS, orders, delay),
        ("pays", PAYS, pays, "10 seconds"),
    ):
        frame = reader.format("json").schema(schema).load(source)
        frame.withWatermark("ts", wait).createOrReplaceTempView(name)
    session.udf.register("fsr_tag", lambda value: value, "string")


def outcome(case: Case, line: str) -> str:
    """Spark's answer to `case` on `line` ("3.5", "4.0", ...): the line's own where it has one,
    else its major line's ("4.x")."""
    return case.restart.get(line) or case.restart[f"{line.split('.')[0]}.x"]


def table() -> str:
    """docs/concepts/state.md's table of the corpus: each change, its verdicts, and Spark's
    answer on the
    old checkpoint, 3.5's and 4.x's (4.3's, then the 4 lines whose answer differs)."""
    rows = [
        "| change | verdict | Spark 3.5 on the old checkpoint | Spark 4.x on the old checkpoint |",
        "|---|---|---|---|",
    ]
    for case in CORPUS:
        name = case.name.replace("*", "\\*")
        verdict = ", ".join(case.verdicts)
        rows.append(f"| {name} | {verdict} | {_said(outcome(case, '3.5'))} | {_fours(case)} |")
    return "\n".join(rows) + "\n"


def _said(answer: str) -> str:
    return answer if answer == ACCEPTS else f"`{answer}`"


def _fours(case: Case) -> str:
    """4.3's answer, then each other answer of a 4 line with the lines that give it."""
    main = outcome(case, LINES[-1])
    others: dict[str, list[str]] = {}
    for line in LINES:
        if line.startswith("4.") and outcome(case, line) != main:
            others.setdefault(outcome(case, line), []).append(line)
    text = _said(main)
    for answer, lines in others.items():
        named = f"{lines[0]}–{lines[-1]}" if len(lines) > 2 else ", ".join(lines)
        text += f" ({named}: {_said(answer)})"
    return text
