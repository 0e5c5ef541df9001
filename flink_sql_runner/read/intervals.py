"""Trigger intervals (`processingTime`, `continuous`) read as Spark reads them.

Spark turns the text of `Trigger.ProcessingTime(String)` and `Trigger.Continuous(String)` into a
`CalendarInterval` with `IntervalUtils.stringToInterval` (a small state machine over the text's
UTF-8 bytes, `SparkIntervalUtils` in Spark 4), then refuses months and years, adds the days as
24-hour days and refuses a negative result; PySpark's `DataStreamWriter.trigger`, which the runner
calls, first refuses blank text and strips the rest. `parse_trigger_interval` follows those rules
step by step, so `validate` refuses what the job's start would refuse (`5 secnds`), and accepts
what it would accept (`INTERVAL 1 minute 30 seconds`, `1.5 seconds`, `2 weeks`).
`tests/test_intervals.py` holds the rule against the running Spark's own answers.
"""

from __future__ import annotations

import difflib
from typing import Any

from flink_sql_runner.errors import Problem

#: The fields of `trigger` whose value is an interval.
INTERVAL_FIELDS = ("processingTime", "continuous")

_LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)

MICROS_PER_MILLI = 1_000
MICROS_PER_SECOND = 1_000_000
MICROS_PER_MINUTE = 60 * MICROS_PER_SECOND
MICROS_PER_HOUR = 60 * MICROS_PER_MINUTE
MICROS_PER_DAY = 24 * MICROS_PER_HOUR

#: Unit names as Spark matches them: a prefix of the text, with an optional plural `s`. Order
#: matters only among the `m` units, which Spark tries as month, minute, millisecond,
#: microsecond.
_UNITS = ("year", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond")
#: The units a trigger interval may use (months and years are refused).
TRIGGER_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week")

#: Java's `Character.isWhitespace` on one byte (Spark tests bytes, so no non-ASCII space).
_WHITESPACE = frozenset(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ")
#: What `UTF8String.trimAll` strips from both ends: whitespace and ISO control characters.
_TRIMMED = _WHITESPACE | frozenset(range(0x00, 0x20)) | {0x7F}


class BadInterval(ValueError):
    """Text Spark does not accept as a trigger interval; the message says why, in words."""


def _checked_long(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise OverflowError
    return value


def _checked_int(value: int) -> int:
    if not _INT_MIN <= value <= _INT_MAX:
        raise OverflowError
    return value


def _word(data: bytes, at: int) -> str:
    """The whitespace-separated word of `data` at byte `at`, as text."""
    start = at
    while start > 0 and data[start - 1] not in _WHITESPACE:
        start -= 1
    end = at
    while end < len(data) and data[end] not in _WHITESPACE:
        end += 1
    return data[start:end].decode("utf-8", "replace")


def _unit_hint(word: str) -> str:
    close = difflib.get_close_matches(word.rstrip("s"), _UNITS, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}s'?)" if close else ""


def parse_interval(text: str) -> tuple[int, int, int]:
    """(months, days, microseconds) of `text`, as Spark's `stringToInterval` reads it;
    BadInterval where Spark throws."""
    data = text.lower().encode("utf-8", "replace")
    start, end = 0, len(data)
    while start < end and data[start] in _TRIMMED:
        start += 1
    while end > start and data[end - 1] in _TRIMMED:
        end -= 1
    data = data[start:end]
    if not data:
        raise BadInterval("it is empty")

    months = days = micros = 0
    i = 0
    if data.startswith(b"interval"):
        if len(data) == len(b"interval"):
            raise BadInterval("it is empty after 'interval'")
        if data[len(b"interval")] not in _WHITESPACE:
            raise BadInterval(f"'{_word(data, 0)}' is not a prefix Spark knows; write 'interval '")
        i = len(b"interval") + 1

    state = "trim-before-sign"
    value = fraction = 0
    scale = -1  # the scale of the next fraction digit; -1: no fraction
    first_scale = 100_000_000  # nanoseconds of the first digit after the point
    negative = point_first = False
    try:
        while i < len(data):
            byte = data[i]
            if state == "trim-before-sign":
                if byte in _WHITESPACE:
                    i += 1
                else:
                    state = "sign"
            elif state == "sign":
                value = fraction = 0
                scale = -1
                point_first = False
                state = "trim-before-value"
                if byte == ord("-"):
                    negative = True
                    i += 1
                elif byte == ord("+"):
                    negative = False
                    i += 1
                elif ord("0") <= byte <= ord("9"):
                    negative = False
                elif byte == ord("."):
                    negative = False
                    scale = first_scale
                    point_first = True
                    i += 1
                    state = "fraction"
                else:
                    raise BadInterval(f"expected a number, got '{_word(data, i)}'")
            elif state == "trim-before-value":
                if byte in _WHITESPACE:
                    i += 1
                else:
                    state = "value"
            elif state == "value":
                if ord("0") <= byte <= ord("9"):
                    value = _checked_long(value * 10 + byte - ord("0"))
                elif byte in _WHITESPACE:
                    state = "trim-before-unit"
                elif byte == ord("."):
                    scale = first_scale
                    state = "fraction"
                else:
                    raise BadInterval(f"'{_word(data, i)}' is not a number")
                i += 1
            elif state == "fraction":
                if ord("0") <= byte <= ord("9") and scale > 0:
                    fraction += (byte - ord("0")) * scale
                    scale //= 10
                elif byte in _WHITESPACE and (not point_first or scale < first_scale):
                    fraction //= 1_000  # nanoseconds to microseconds
                    state = "trim-before-unit"
                elif ord("0") <= byte <= ord("9"):
                    raise BadInterval(f"'{_word(data, i)}' has more than 9 digits after the point")
                else:
                    raise BadInterval(f"'{_word(data, i)}' is not a number")
                i += 1
            elif state == "trim-before-unit":
                if byte in _WHITESPACE:
                    i += 1
                else:
                    state = "unit"
            elif state == "unit":
                if byte != ord("s") and scale >= 0:
                    raise BadInterval(
                        f"only seconds may have a fraction, got '{_word(data, i)}' with one"
                    )
                if negative:
                    value, fraction = -value, -fraction
                unit = next(
                    (u for u in _UNITS if data.startswith(u.encode(), i)),
                    None,
                )
                if unit is None:
                    word = _word(data, i)
                    raise BadInterval(f"unknown unit '{word}'{_unit_hint(word)}")
                if unit == "year":
                    months = _checked_int(months + _checked_long(12 * value))
                elif unit == "month":
                    months = _checked_int(months + _checked_int(value))
                elif unit == "week":
                    days = _checked_int(days + _checked_long(7 * value))
                elif unit == "day":
                    days = _checked_int(days + _checked_int(value))
                elif unit == "hour":
                    micros = _checked_long(micros + _checked_long(value * MICROS_PER_HOUR))
                elif unit == "minute":
                    micros = _checked_long(micros + _checked_long(value * MICROS_PER_MINUTE))
                elif unit == "second":
                    seconds = _checked_long(value * MICROS_PER_SECOND)
                    micros = _checked_long(_checked_long(micros + seconds) + fraction)
                elif unit == "millisecond":
                    micros = _checked_long(micros + _checked_long(value * MICROS_PER_MILLI))
                else:
                    micros = _checked_long(micros + value)
                i += len(unit)
                state = "unit-suffix"
            elif state == "unit-suffix":
                if byte == ord("s"):
                    state = "unit-end"
                elif byte in _WHITESPACE:
                    state = "trim-before-sign"
                else:
                    word = _word(data, i)
                    raise BadInterval(f"unknown unit '{word}'{_unit_hint(word)}")
                i += 1
            elif state == "unit-end":
                if byte in _WHITESPACE:
                    i += 1
                    state = "trim-before-sign"
                else:
                    word = _word(data, i)
                    raise BadInterval(f"unknown unit '{word}'{_unit_hint(word)}")
    except OverflowError:
        raise BadInterval("it is too large") from None

    if state in ("unit-suffix", "unit-end", "trim-before-sign"):
        return months, days, micros
    if state == "trim-before-value":
        raise BadInterval(f"'{_word(data, len(data) - 1)}' is not followed by a number")
    if state in ("value", "fraction"):
        raise BadInterval(f"'{_word(data, len(data) - 1)}' has no unit")
    raise BadInterval("Spark cannot read it")  # pragma: no cover (Spark's "unknown error")


def parse_trigger_interval(text: str) -> int:
    """Milliseconds of the trigger interval `text`, as PySpark's
    `writeStream.trigger(processingTime=text)` (and `continuous=`) compute them; BadInterval
    where they refuse the text."""
    # PySpark's `DataStreamWriter.trigger` refuses blank text and strips it (Python's
    # `str.strip`, which knows more spaces than Spark) before it calls Spark.
    text = text.strip()
    if not text:
        raise BadInterval("it is empty")
    months, days, micros = parse_interval(text)
    if months:
        raise BadInterval("months and years are not allowed (their length varies)")
    try:
        total = _checked_long(micros + _checked_long(days * MICROS_PER_DAY))
    except OverflowError:
        raise BadInterval("it is too large") from None
    if total < 0:
        raise BadInterval("it is negative")
    return total // MICROS_PER_MILLI


def trigger_problems(trigger: Any, source: str) -> list[Problem]:
    """The interval of a `trigger` mapping that Spark would refuse, as one problem naming
    `source` and the field (`trigger.processingTime`)."""
    if not isinstance(trigger, dict):
        return []
    problems = []
    for field in INTERVAL_FIELDS:
        text = trigger.get(field)
        if not isinstance(text, str):
            continue
        try:
            parse_trigger_interval(text)
        except BadInterval as exc:
            problems.append(
                Problem(
                    source,
                    f"trigger.{field}",
                    f"{text!r} is not an interval Spark reads: {exc}; write a number and a "
                    f"unit, e.g. '5 seconds' or '1 minute 30 seconds' (units: "
                    f"{', '.join(TRIGGER_UNITS)})",
                )
            )
    return problems
