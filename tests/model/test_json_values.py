"""Times as every JSON output gives them: RFC 3339 UTC with milliseconds, four digits of year,
and what a time RFC 3339 cannot write becomes."""

from __future__ import annotations

from flink_sql_runner.model.json_values import json_time_field, json_time_of_ms

#: Spark's watermark for an event time of 0001-01-01T00:00:00Z.
YEAR_1 = -62_135_596_800_000


def test_a_time_before_year_1000_has_four_digits_of_year() -> None:
    """RFC 3339 wants `date-fullyear = 4DIGIT`; strftime's %Y gives `1` for year 1 on Linux."""
    assert json_time_of_ms(YEAR_1) == "0001-01-01T00:00:00.000Z"
    assert json_time_of_ms(-62_104_060_800_000 + 123) == "0002-01-01T00:00:00.123Z"
    assert json_time_of_ms(1_795_600_000_123) == "2026-11-25T09:46:40.123Z"


def test_a_time_outside_years_1_to_9999_is_null_and_the_number_beside_it() -> None:
    """RFC 3339 cannot write a year past 9999 (Spark's go to 294247): the time is null, and
    the number as written stands beside it under the key ending `-as-written`."""
    far = 1_767_225_600_000_000
    assert json_time_of_ms(far) is None
    assert json_time_of_ms(YEAR_1 - 1) is None
    assert json_time_of_ms(253_402_300_799_999) == "9999-12-31T23:59:59.999Z"
    assert json_time_field("watermark", far) == {"watermark": None, "watermark-as-written": far}
    assert json_time_field("watermark", None) == {"watermark": None}
    assert json_time_field("at", 0) == {"at": "1970-01-01T00:00:00.000Z"}
