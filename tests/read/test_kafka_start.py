"""Where a new version's Kafka sources start, as written in a job (`kafka-start:`) or a deploy
(`--kafka-start`): what each form reads as, and what is refused, in words."""

from __future__ import annotations

import pytest

from flink_sql_runner.read.kafka_start import (
    AGO,
    CARRY,
    TIMESTAMP,
    BadKafkaStart,
    parse_kafka_start,
)

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    "text, how, ms",
    [
        ("carry", CARRY, None),
        (" Earliest ", "earliest", None),
        ("2026-11-25T02:00:00Z", TIMESTAMP, 1_795_572_000_000),
        ("now - 2 hours", AGO, 7_200_000),
        ("now-50 days", AGO, 50 * 86_400_000),
    ],
)
def test_each_form_reads_as_a_start(text, how, ms):
    found = parse_kafka_start(text)
    assert (found.how, found.ms) == (how, ms)


@pytest.mark.parametrize(
    "text, said",
    [
        ("soon", "'soon' is not a start"),
        ("2026-11-25T02:00:00", "has no zone"),
        ("now - 0 seconds", "the interval must be more than nothing"),
        # review of issue 52, finding 9: before, these were taken; the first crashed every
        # plan (a year before 1), the second started a version before 1970, which Kafka refuses
        ("now - 1000000 days", "the interval must be at most 50 years"),
        ("now - 30000 days", "the interval must be at most 50 years"),
        ("1960-01-01T00:00:00Z", "is before 1970"),
    ],
)
def test_what_says_no_start_is_refused_in_words(text, said):
    with pytest.raises(BadKafkaStart, match=said):
        parse_kafka_start(text)
