"""Parameters of an expression that Spark's plan JSON writes as null though they hold a value
(a Map: `from_json`'s and `from_csv`'s options; an Enumeration: a cast's eval mode; a Char:
`LIKE`'s escape; `evalContext`, once left out as not meaning): the adapter reads them from the
JVM (runner/spark_internals.py `analysed_plan`). Found by review: they dropped out of the canon,
so a change of one was judged *kept*: a new version would continue on state whose keys were
computed another way (event times parsed with another timestampFormat land in other windows)."""

from __future__ import annotations

import pytest

from flink_sql_runner.decide.state import KEPT, verdicts
from flink_sql_runner.model.state import Analysed
from runner.spark_internals import analysed_plan
from runner.stateful_plan import stateful_operators

pytestmark = pytest.mark.spark

PARSED = (
    "SELECT j.k, count(*) AS c FROM (SELECT from_json(CAST(value AS STRING), "
    "'k STRING, t TIMESTAMP', map('timestampFormat', '{fmt}')) AS j FROM orders) "
    "GROUP BY j.k, window(j.t, '1 hour')"
)
CSV = (
    "SELECT count(*) AS c FROM orders GROUP BY "
    "from_csv(CAST(value AS STRING), 'a INT, b INT', map('sep', '{sep}')).a, "
    "window(ts, '20 seconds')"
)
CASTS = "SELECT k, sum({cast}(v AS INT)) AS s FROM orders GROUP BY k, window(ts, '20 seconds')"
LIKE = (
    "SELECT count(*) AS c FROM orders GROUP BY k LIKE 'a!%b' ESCAPE '{esc}', "
    "window(ts, '20 seconds')"
)
SUMS = "SELECT k, {fn}(v) AS s FROM orders GROUP BY k, window(ts, '20 seconds')"


@pytest.fixture(scope="module")
def session(spark, tmp_path_factory):
    empty = str(tmp_path_factory.mktemp("params"))
    s = spark.newSession()
    s.conf.set("spark.sql.ansi.enabled", "false")
    frame = (
        s.readStream.format("json")
        .schema("k STRING, v BIGINT, value BINARY, ts TIMESTAMP")
        .load(empty)
    )
    frame.withWatermark("ts", "10 seconds").createOrReplaceTempView("orders")
    return s


def _analysed(s, sql: str) -> Analysed:
    plan, delays = analysed_plan(s.sql(sql))
    return Analysed.from_dict({"operators": stateful_operators(plan, delays)})


@pytest.mark.parametrize(
    "old, new",
    [
        (PARSED.format(fmt="dd/MM/yyyy HH:mm"), PARSED.format(fmt="MM/dd/yyyy HH:mm")),
        (CSV.format(sep=","), CSV.format(sep=";")),
        # ANSI off: CAST wraps a BIGINT that overflows INT, try_cast makes it NULL
        (CASTS.format(cast="CAST"), CASTS.format(cast="try_cast")),
        # `a!%b` ESCAPE '!' matches the text a%b; ESCAPE '#' matches a!...b
        (LIKE.format(esc="!"), LIKE.format(esc="#")),
        # ANSI off: sum wraps a BIGINT overflow, try_sum makes it NULL (evalContext left out)
        (SUMS.format(fn="sum"), SUMS.format(fn="try_sum")),
    ],
    ids=[
        "from_json timestampFormat",
        "from_csv sep",
        "cast -> try_cast",
        "like escape",
        "sum -> try_sum",
    ],
)
def test_a_changed_parse_option_is_not_kept(session, old, new):
    found = verdicts(_analysed(session, old), _analysed(session, new))
    assert [v.verdict for v in found] != [KEPT], [v.line() for v in found]
