"""The simulation's Kafka model on its own (tests/simulation/kafka.py): where a run's source
starts, Spark's refusal of offsets that leave partitions out, and the check at a version
boundary."""

from __future__ import annotations

import json

import pytest

from tests.simulation.kafka import SparkRefuses, Start, Topic, boundary_violation, start_of

pytestmark = pytest.mark.fast

TABLE = {"format": "kafka", "options": {"subscribe": "orders"}}


def carried(offsets, fill=False):
    spec = {"options": {"startingOffsets": json.dumps({"orders": offsets})}}
    return {**spec, "new-partitions": "earliest"} if fill else spec


def test_records_arrive_by_the_clock_and_a_partition_may_be_added():
    topic = Topic(created=[0.0, 0.0, 100.0])
    assert topic.ends(50) == {"0": 50, "1": 50}
    assert topic.ends(130) == {"0": 130, "1": 130, "2": 30}
    assert topic.at_time(int((1000 + 120) * 1000), 130, 1000) == {"0": 120, "1": 120, "2": 20}


def test_a_start_is_the_deployer_s_the_table_s_or_latest():
    topic = Topic()
    assert start_of(TABLE, None, topic, 40, 0) == Start({"0": 40, "1": 40}, False, "latest")
    assert start_of(TABLE, carried({"0": 7, "1": 9}), topic, 40, 0).offsets == {"0": 7, "1": 9}
    earliest = start_of(TABLE, {"options": {"startingOffsets": "earliest"}}, topic, 40, 0)
    assert earliest == Start({"0": 0, "1": 0}, True, "earliest")


def test_offsets_that_leave_a_partition_out_are_refused_unless_the_runner_fills_it():
    topic = Topic(created=[0.0, 0.0, 10.0])
    with pytest.raises(SparkRefuses, match="you must specify all TopicPartitions"):
        start_of(TABLE, carried({"0": 7, "1": 9}), topic, 40, 0)
    filled = start_of(TABLE, carried({"0": 7, "1": 9}, fill=True), topic, 40, 0)
    assert filled.offsets == {"0": 7, "1": 9, "2": 0}


def test_a_new_version_must_begin_where_the_one_it_replaces_finished():
    start = Start({"0": 7, "1": 12, "2": 0}, False, "carried offsets")
    assert boundary_violation("b", 2, start, 1, {"0": 7, "1": 12}) is None
    kind, text = boundary_violation("b", 2, start, 1, {"0": 7, "1": 9}) or ("", "")
    assert kind == "kafka-gap" and "3 records never read" in text
    kind, _ = boundary_violation("b", 2, start, 1, {"0": 9, "1": 12}) or ("", "")
    assert kind == "kafka-repeat"
    kind, _ = boundary_violation("b", 2, start, 1, None) or ("", "")
    assert kind == "kafka-start-unproven"
    assert boundary_violation("b", 2, Start({}, True, "earliest"), 1, None) is None
    assert boundary_violation("b", 1, start, 1, None) is None  # a restart: not a boundary
