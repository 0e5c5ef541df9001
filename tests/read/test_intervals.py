"""Trigger intervals: `validate` reads them as the running Spark does, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from flink_sql_runner.read.intervals import BadInterval, parse_trigger_interval, trigger_problems

#: Texts a user may write, and the edges of Spark's rule (units, plurals, fractions, signs,
#: whitespace, the `interval` prefix, overflow, months).
CASES = [
    "5 seconds", "5 second", "5 Seconds", "INTERVAL 5 SECONDS", "interval 5 seconds",
    "interval\t5 seconds", " interval 5 seconds", "  5 seconds  ", "5\tseconds", "5  seconds",
    "5 seconds\n", "\x01 5 seconds", "5 seconds\x01", "1\x0b seconds", "1 minute 30 seconds",
    "1 hour -30 minutes", "1 day 1 second", "1 week", "2 weeks", "1 days", "1 hours",
    "1 minutes", "1 millisecond", "5 milliseconds", "1000 microseconds", "1 microsecond",
    "0 seconds", "-0 seconds", "1.5 seconds", ".5 seconds", "+.5 seconds", "5. seconds",
    "1.000 seconds", "0.999999999 seconds", "0.0001 seconds", "0.5 seconds 0.5 seconds",
    "+ 5 seconds", "+5 seconds", "1 hour -3600001 microseconds", "106751991 days",
    "9223372036854 seconds", "9223372036854775807 microseconds", "2147483647 days -2147483647 days",
    "1 month -1 month", "1 wee\u212a",
    # refused
    "5 secnds", "5 sec", "5 secs", "5 s", "1 ms", "1 m", "1 mi", "1 minu", "1 mon", "1 y",
    "5 secondss", "1 yearss", "1 millisecondss", "1 minutex", "5 nanoseconds", "5 seconds,",
    "1 second.", "1 minute1 second", "5", "5 ", "1 minute 1", "-", "+", ". seconds",
    "1.5.5 seconds", "1.5 minutes", "1.0 days", "1. days", "1.1234567891 seconds",
    "-1 seconds", "- 5 seconds", "-.5 seconds", "-999 microseconds", "-1 microseconds",
    "1 hour -3601 seconds", "1 month", "1 months", "1 year", "1 years", "-1 month 40 days",
    "1 month -31 days", "2147483647 days", "106751992 days", "1 day 2147483647 days",
    "9223372036855 seconds", "9223372036854775808 microseconds", "interval", "interval5 seconds",
    "interval interval 5 seconds", "5 seconds interval", "\u00a05 seconds", "5\u00a0seconds",
    "", "   ", "\u20035 seconds\u2003", "\x1c5 seconds",
]  # fmt: skip


def spark_millis(spark: Any, text: str, kind: str) -> int | None:
    """What the running Spark makes of `text`: the trigger's milliseconds, or None when
    PySpark's `DataStreamWriter.trigger` (what the runner calls) refuses it."""
    writer = spark.readStream.format("rate").load().writeStream
    try:
        writer.trigger(**{kind: text})
    except Exception:
        return None
    trigger = spark._jvm.org.apache.spark.sql.streaming.Trigger
    text = text.strip()  # as DataStreamWriter.trigger does
    made = trigger.ProcessingTime(text) if kind == "processingTime" else trigger.Continuous(text)
    return int(made.intervalMs())


def ours(text: str) -> int | None:
    try:
        return parse_trigger_interval(text)
    except BadInterval:
        return None


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["processingTime", "continuous"])
def test_every_interval_is_read_as_the_running_spark_reads_it(spark: Any, kind: str):
    differ = {}
    for text in CASES:
        expected = spark_millis(spark, text, kind)
        if ours(text) != expected:
            differ[text] = (ours(text), expected)
    assert differ == {}, "ours vs Spark's (None: refused)"
    assert sum(ours(text) is None for text in CASES) > 40  # the table holds both kinds


def test_a_misspelt_unit_is_one_problem_naming_the_file_and_field():
    assert [str(p) for p in trigger_problems({"processingTime": "5 secnds"}, "q.yaml")] == [
        "q.yaml: trigger.processingTime: '5 secnds' is not an interval Spark reads: unknown "
        "unit 'secnds' (did you mean 'seconds'?); write a number and a unit, e.g. '5 seconds' "
        "or '1 minute 30 seconds' (units: microsecond, millisecond, second, minute, hour, day, "
        "week)"
    ]


@pytest.mark.parametrize(
    "text, why",
    [
        ("1 month", "months and years are not allowed (their length varies)"),
        ("-1 seconds", "it is negative"),
        ("1.5 minutes", "only seconds may have a fraction, got 'minutes' with one"),
        ("5", "'5' has no unit"),
        ("2147483647 days", "it is too large"),
        ("interval", "it is empty after 'interval'"),
        ("  ", "it is empty"),
        ("five seconds", "expected a number, got 'five'"),
    ],
)
def test_why_an_interval_is_refused(text: str, why: str):
    with pytest.raises(BadInterval) as raised:
        parse_trigger_interval(text)
    assert str(raised.value) == why


def test_other_trigger_fields_and_types_are_left_to_the_schema():
    assert trigger_problems({"availableNow": True}, "q.yaml") == []
    assert trigger_problems({"processingTime": 5}, "q.yaml") == []
    assert trigger_problems("5 seconds", "q.yaml") == []
    assert [p.field for p in trigger_problems({"continuous": "1 sec"}, "q.yaml")] == [
        "trigger.continuous"
    ]
