"""Where a Kafka source of a new version starts, on the runner's side: the deployer's start
replaces the table's starting options, and carried offsets that leave partitions out (a topic
that gained partitions, one the previous version did not read) start those at the earliest."""

from __future__ import annotations

import json

import pytest

from runner.kafka_start import apply_starts, filled_offsets, with_start

pytestmark = pytest.mark.fast


def test_a_start_replaces_every_starting_option_of_the_table():
    table = {
        "format": "kafka",
        "options": {
            "subscribe": "o",
            "STARTINGOFFSETS": "latest",
            "startingOffsetsByTimestamp": "{}",
            "maxOffsetsPerTrigger": 10,
        },
    }
    assert with_start(table, {"options": {"startingTimestamp": "1700000000000"}})
    assert table["options"] == {
        "subscribe": "o",
        "maxOffsetsPerTrigger": 10,
        "startingTimestamp": "1700000000000",
    }
    assert not with_start(table, None)


def test_the_runtime_manifest_s_starts_are_applied_once_at_load():
    doc = {"tables": {"o": {"options": {"subscribe": "o"}, "start": {"options": {"a": "1"}}}}}
    apply_starts(doc)
    assert doc == {"tables": {"o": {"options": {"subscribe": "o", "a": "1"}}}}


def test_partitions_the_carried_offsets_do_not_name_start_at_the_earliest():
    asked = []

    def partitions_of(options, topics):
        asked.append(topics)
        return {"orders": [0, 1, 2, 3], "returns": [0]}

    options = {
        "kafka.bootstrap.servers": "b:9092",
        "subscribe": "orders, returns",
        "startingOffsets": json.dumps({"orders": {"0": 5, "1": 7}}),
    }
    filled = filled_offsets(options, partitions_of)
    assert json.loads(filled["startingOffsets"]) == {
        "orders": {"0": 5, "1": 7, "2": -2, "3": -2},
        "returns": {"0": -2},
    }
    assert asked == [["orders", "returns"]]


def test_offsets_stay_as_they_are_where_the_brokers_cannot_be_asked():
    def unreachable(options, topics):
        raise RuntimeError("TimeoutException")

    options = {"subscribe": "orders", "startingOffsets": '{"orders": {"0": 5}}'}
    assert filled_offsets(options, unreachable) == options
    assert filled_offsets({"subscribe": "o", "startingOffsets": "latest"}, unreachable) == {
        "subscribe": "o",
        "startingOffsets": "latest",
    }
