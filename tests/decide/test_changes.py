"""The change rules against Spark's own list of what may change between restarts from one
checkpoint ("Recovery Semantics after Changes in a Streaming Query", SPEC), row by row; then the
job's own fields and the README's table of what is safe to change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flink_sql_runner.decide import changes
from flink_sql_runner.decide.changes import CONFIG, QUERY, ChangeKind, diff, severity
from flink_sql_runner.model.same import same
from tests.support.jobs import BASE

KAFKA_IN = {
    "format": "kafka",
    "options": {"kafka.bootstrap.servers": "b1:9092", "subscribe": "orders"},
}
KAFKA_OUT = {"format": "kafka", "options": {"kafka.bootstrap.servers": "b1:9092", "topic": "t"}}
FILES_IN = {"format": "json", "options": {"path": "/in"}, "schema": "id BIGINT, ts TIMESTAMP"}
FILES_OUT = {"format": "parquet", "options": {"path": "/out"}}
RATE_IN = {"format": "rate-micro-batch", "options": {"rowsPerBatch": 7}}


def job_with(source: dict[str, Any], sink: dict[str, Any], **spec: Any) -> tuple[dict, dict]:
    return {**copy.deepcopy(BASE.spec), **spec}, {"src": source, "out": sink}


def options(definition: dict[str, Any], **edits: Any) -> dict[str, Any]:
    """The definition with options set (None removes one)."""
    new = copy.deepcopy(definition)
    for key, value in edits.items():
        if value is None:
            new["options"].pop(key, None)
        else:
            new["options"][key] = value
    return new


# (id, Spark's guide says, before (source, sink), after (source, sink), kind, field)
SPARK_ROWS = [
    # Changes in the number or type of input sources: not allowed.
    (
        "another-source-kind",
        "the type of input sources: not allowed",
        (KAFKA_IN, FILES_OUT),
        (FILES_IN, FILES_OUT),
        QUERY,
        "tables.src.format",
    ),
    # Changes in the parameters of input sources.
    (
        "rate-limit-added",
        "addition of rate limits is allowed",
        (KAFKA_IN, FILES_OUT),
        (options(KAFKA_IN, maxOffsetsPerTrigger=1000), FILES_OUT),
        CONFIG,
        "tables.src.options.maxOffsetsPerTrigger",
    ),
    (
        "rate-limit-changed",
        "modification of rate limits is allowed",
        (options(KAFKA_IN, maxOffsetsPerTrigger=1000), FILES_OUT),
        (options(KAFKA_IN, maxOffsetsPerTrigger=5000), FILES_OUT),
        CONFIG,
        "tables.src.options.maxOffsetsPerTrigger",
    ),
    (
        "rate-limit-removed",
        "deletion of rate limits is allowed",
        (options(KAFKA_IN, maxOffsetsPerTrigger=1000), FILES_OUT),
        (KAFKA_IN, FILES_OUT),
        CONFIG,
        "tables.src.options.maxOffsetsPerTrigger",
    ),
    (
        "file-rate-limit",
        "a file source's rate limit is a rate limit",
        (FILES_IN, FILES_OUT),
        (options(FILES_IN, maxFilesPerTrigger=5), FILES_OUT),
        CONFIG,
        "tables.src.options.maxFilesPerTrigger",
    ),
    (
        "kafka-topics-changed",
        "changes to subscribed topics are not allowed",
        (KAFKA_IN, FILES_OUT),
        (options(KAFKA_IN, subscribe="orders,returns"), FILES_OUT),
        QUERY,
        "tables.src.options.subscribe",
    ),
    (
        "kafka-pattern",
        "changes to subscribed topics are not allowed",
        (KAFKA_IN, FILES_OUT),
        (options(KAFKA_IN, subscribe=None, subscribePattern="ord.*"), FILES_OUT),
        QUERY,
        "tables.src.options.subscribePattern",
    ),
    (
        "kafka-assign",
        "changes to subscribed partitions are not allowed",
        (KAFKA_IN, FILES_OUT),
        (options(KAFKA_IN, subscribe=None, assign='{"orders":[0]}'), FILES_OUT),
        QUERY,
        "tables.src.options.assign",
    ),
    (
        "file-source-path",
        "changes to subscribed files are not allowed",
        (FILES_IN, FILES_OUT),
        (options(FILES_IN, path="/in-2"), FILES_OUT),
        QUERY,
        "tables.src.options.path",
    ),
    # Changes in the type of output sink.
    (
        "file-sink-to-kafka-sink",
        "file sink to Kafka sink is allowed",
        (KAFKA_IN, FILES_OUT),
        (KAFKA_IN, KAFKA_OUT),
        CONFIG,
        "tables.out.format",
    ),
    (
        "kafka-sink-to-file-sink",
        "Kafka sink to file sink is not allowed",
        (KAFKA_IN, KAFKA_OUT),
        (KAFKA_IN, FILES_OUT),
        QUERY,
        "tables.out.format",
    ),
    (
        "kafka-sink-to-foreach",
        "Kafka sink changed to foreach is allowed",
        (KAFKA_IN, KAFKA_OUT),
        (KAFKA_IN, {"format": "foreach"}),
        CONFIG,
        "tables.out.format",
    ),
    (
        "foreach-to-kafka-sink",
        "foreach changed to Kafka sink is allowed",
        (KAFKA_IN, {"format": "foreach"}),
        (KAFKA_IN, KAFKA_OUT),
        CONFIG,
        "tables.out.format",
    ),
    # Changes in the parameters of output sink.
    (
        "file-sink-path",
        "changes to the output directory of a file sink are not allowed",
        (KAFKA_IN, FILES_OUT),
        (KAFKA_IN, options(FILES_OUT, path="/out-2")),
        QUERY,
        "tables.out.options.path",
    ),
    (
        "kafka-sink-topic",
        "changes to the output topic of a Kafka sink are allowed",
        (KAFKA_IN, KAFKA_OUT),
        (KAFKA_IN, options(KAFKA_OUT, topic="t2")),
        CONFIG,
        "tables.out.options.topic",
    ),
    # Changes in stateful operations: not allowed (the deployer cannot tell a filter from a
    # key change in SQL, so every SQL change is a query change: a clean start is never wrong).
    (
        "stateful-sql",
        "changes to the grouping keys or aggregates are not allowed",
        (KAFKA_IN, FILES_OUT),
        (KAFKA_IN, FILES_OUT, {"sql": "SELECT id, count(*) FROM src GROUP BY id"}),
        QUERY,
        "sql",
    ),
    (
        "pinned-setting",
        "the checkpoint pins spark.sql.shuffle.partitions (SPEC)",
        (KAFKA_IN, FILES_OUT),
        (KAFKA_IN, FILES_OUT, {"sparkProperties": {"spark.sql.shuffle.partitions": "9"}}),
        QUERY,
        "sparkProperties.spark.sql.shuffle.partitions",
    ),
    (
        "state-meaning",
        "a new session time zone moves every window boundary computed in local time",
        (KAFKA_IN, FILES_OUT),
        (KAFKA_IN, FILES_OUT, {"sparkProperties": {"spark.sql.session.timeZone": "CET"}}),
        QUERY,
        "sparkProperties.spark.sql.session.timeZone",
    ),
]


@pytest.mark.parametrize(
    "guide, before, after, kind, field",
    [row[1:] for row in SPARK_ROWS],
    ids=[row[0] for row in SPARK_ROWS],
)
def test_sparks_recovery_rules(guide, before, after, kind, field):
    spec_edits = after[2] if len(after) > 2 else {}
    old_spec, old_tables = job_with(*before[:2])
    new_spec, new_tables = job_with(*after[:2])
    for key, value in spec_edits.items():
        new_spec[key] = {**new_spec.get(key, {}), **value} if isinstance(value, dict) else value
    found = diff(old_spec, old_tables, new_spec, new_tables)
    assert field in [c.field for c in found], (guide, found)
    assert severity(found) is kind, (guide, found)


# (id, source, sink before -> after or spec edits, kind)
MORE_ROWS = [
    ("starting-offsets-only-apply-clean", options(KAFKA_IN, startingOffsets="earliest"), CONFIG),
    ("kafka-client-setting", options(KAFKA_IN, **{"kafka.security.protocol": "SSL"}), CONFIG),
    ("another-kafka-cluster", options(KAFKA_IN, **{"kafka.bootstrap.servers": "b9:9092"}), QUERY),
    ("an-unknown-source-option", options(KAFKA_IN, someNewOption="x"), QUERY),
    ("rate-micro-batch-rows-is-a-rate-limit", options(RATE_IN, rowsPerBatch=9), CONFIG),
    ("rate-rows-per-second-renumbers", {"format": "rate", "options": {"rowsPerSecond": 9}}, QUERY),
    ("parsing-of-new-files", options(FILES_IN, multiLine=True), CONFIG),
    ("which-files-count", options(FILES_IN, pathGlobFilter="*.json"), QUERY),
]


@pytest.mark.parametrize("after, kind", [r[1:] for r in MORE_ROWS], ids=[r[0] for r in MORE_ROWS])
def test_source_option_rules(after, kind):
    base = {
        "kafka": KAFKA_IN,
        "rate-micro-batch": RATE_IN,
        "rate": {"format": "rate", "options": {"rowsPerSecond": 5}},
        "json": FILES_IN,
    }[after["format"]]
    found = diff(*job_with(base, FILES_OUT), *job_with(after, FILES_OUT))
    assert found and severity(found) is kind, found


def test_option_keys_match_without_case_and_values_as_text():
    old = options(KAFKA_IN, maxOffsetsPerTrigger=1000, failOnDataLoss=True)
    new = copy.deepcopy(KAFKA_IN)
    new["options"].update({"MAXOFFSETSPERTRIGGER": "1000", "failondataloss": "true"})
    assert diff(*job_with(old, FILES_OUT), *job_with(new, FILES_OUT)) == []


def test_a_sink_that_became_kafka_drops_the_file_options_without_a_query_change():
    found = diff(*job_with(KAFKA_IN, FILES_OUT), *job_with(KAFKA_IN, KAFKA_OUT))
    assert {c.field: c.kind for c in found} == {
        "tables.out.format": CONFIG,
        "tables.out.options.path": CONFIG,
        "tables.out.options.topic": CONFIG,
        "tables.out.options.kafka.bootstrap.servers": CONFIG,
    }


def test_a_continuous_trigger_is_a_query_change_an_interval_a_config_change():
    spec, tables = job_with(KAFKA_IN, FILES_OUT)
    interval = {**spec, "trigger": {"processingTime": "1 minute"}}
    continuous = {**spec, "trigger": {"continuous": "1 second"}}
    assert severity(diff(spec, tables, interval, tables)) is CONFIG
    assert severity(diff(spec, tables, continuous, tables)) is QUERY


def test_a_new_source_table_is_a_query_change():
    spec, tables = job_with(KAFKA_IN, FILES_OUT)
    more = {**tables, "other": FILES_IN}
    [change] = diff(spec, tables, spec, more)
    assert (change.field, change.kind) == ("tables.other", QUERY)


def test_nested_fields_name_the_leaf_that_changed():
    spec, tables = job_with(KAFKA_IN, FILES_OUT)
    off = {**spec, "metadata-columns": {**spec["metadata-columns"], "enabled": False}}
    [change] = diff(spec, tables, off, tables)
    assert (change.field, change.old, change.new) == ("metadata-columns.enabled", True, False)


def test_dropping_every_spark_property_names_each_one():
    spec = {k: v for k, v in copy.deepcopy(BASE.spec).items() if k != "sparkProperties"}
    found = {c.field: c.kind for c in diff(BASE.spec, BASE.tables, spec, BASE.tables)}
    assert found == {
        "sparkProperties.spark.executor.memory": CONFIG,
        "sparkProperties.spark.sql.shuffle.partitions": QUERY,
    }


def test_type_changes_count_even_when_python_calls_the_values_equal() -> None:
    assert not same(10, 10.0) and not same(True, 1) and not same({"a": 1}, {"a": True})
    assert same({"a": [1, {"b": "x"}], "c": None}, {"c": None, "a": [1, {"b": "x"}]})


def test_an_unchanged_job_is_not_normalized(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_: Any) -> Any:
        raise AssertionError("normalized an unchanged field")

    monkeypatch.setitem(changes.JOB_RULES, "sql", changes.Rule(QUERY, "changed", refuse))
    assert diff(BASE.spec, BASE.tables, BASE.spec, BASE.tables) == []
    edited = {**BASE.spec, "description": "other"}
    assert [c.field for c in diff(BASE.spec, BASE.tables, edited, BASE.tables)] == ["description"]


def test_every_kind_has_a_label():
    assert [k.label for k in ChangeKind] == ["none", "config", "query"]


# -- Kafka broker lists ---------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["src", "out"])
def test_kafka_brokers_in_another_order_or_spacing_are_no_change(table: str) -> None:
    """One cluster, written otherwise: neither a clean start (source) nor a restart (sink)."""
    source, sink = copy.deepcopy(KAFKA_IN), copy.deepcopy(KAFKA_OUT)
    for definition in (source, sink):
        definition["options"]["kafka.bootstrap.servers"] = "a:9092,b:9092"
    edited = copy.deepcopy(source if table == "src" else sink)
    edited["options"]["kafka.bootstrap.servers"] = " b:9092 ,a:9092, "
    after = (edited, sink) if table == "src" else (source, edited)
    assert diff(*job_with(source, sink), *job_with(*after)) == []


def test_a_broker_s_host_name_in_other_case_is_no_change() -> None:
    """Host names are without case: the same brokers, neither a new version nor a restart."""
    before = options(KAFKA_IN, **{"kafka.bootstrap.servers": "Kafka-1:9092,kafka-2:9092"})
    after = options(KAFKA_IN, **{"kafka.bootstrap.servers": "kafka-2:9092, KAFKA-1:9092"})
    assert diff(*job_with(before, FILES_OUT), *job_with(after, FILES_OUT)) == []


def test_another_kafka_broker_is_still_a_change() -> None:
    before = options(KAFKA_IN, **{"kafka.bootstrap.servers": "a:9092, b:9092"})
    after = options(KAFKA_IN, **{"kafka.bootstrap.servers": "a:9092, c:9092"})
    [change] = diff(*job_with(before, FILES_OUT), *job_with(after, FILES_OUT))
    assert (change.field, change.kind) == ("tables.src.options.kafka.bootstrap.servers", QUERY)
    assert (change.old, change.new) == ("a:9092, b:9092", "a:9092, c:9092")  # as written


# -- settings the checkpoint pins -----------------------------------------------------------------

MERGE_OPERATOR = "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion"
#: The `conf` map of a Spark 4.3 checkpoint's offsets file (in part).
PINNED_43 = {
    "spark.sql.shuffle.partitions": "4",
    MERGE_OPERATOR: "2",
    "spark.sql.streaming.stateStore.rowChecksum.enabled": "false",
    "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled": "true",
    "spark.sql.streaming.queryEvolution.enableSourceEvolution": "false",
}


def property_diff(before: dict[str, Any], after: dict[str, Any], **kw: Any) -> list:
    old = {**BASE.spec, "sparkProperties": before}
    new = {**BASE.spec, "sparkProperties": after}
    return diff(old, BASE.tables, new, BASE.tables, **kw)


@pytest.mark.parametrize("key", sorted(set(PINNED_43) - {"spark.sql.shuffle.partitions"}))
def test_a_setting_the_checkpoint_names_is_a_query_change(key: str) -> None:
    """Spark restores the checkpoint's value and ignores the new one: a restart from the
    checkpoint would silently keep the old value, so the job starts clean."""
    [change] = property_diff({}, {key: "7"}, pinned=PINNED_43)
    assert (change.field, change.kind) == (f"sparkProperties.{key}", QUERY)
    assert change.why == (
        f"pinned by the checkpoint: Spark would restore {PINNED_43[key]!r} and ignore the new value"
    )


def test_a_setting_the_checkpoint_does_not_name_is_a_config_change() -> None:
    [change] = property_diff({}, {"spark.sql.streaming.someNewSetting": "7"}, pinned=PINNED_43)
    assert change.kind is CONFIG


def test_setting_a_pinned_setting_to_the_checkpoints_own_value_restarts_from_it() -> None:
    """The restart gets the value asked for: nothing is lost by keeping the state."""
    [change] = property_diff({}, {MERGE_OPERATOR: "2"}, pinned=PINNED_43)
    assert change.kind is CONFIG
    assert "the checkpoint's own value" in change.why
    [removed] = property_diff({MERGE_OPERATOR: "2"}, {}, pinned=PINNED_43)
    assert removed.kind is QUERY  # back to Spark's default, which the checkpoint may not hold


def test_a_boolean_is_compared_as_the_text_spark_gets() -> None:
    key = "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled"
    [change] = property_diff({}, {key: True}, pinned=PINNED_43)
    assert change.kind is CONFIG


def test_shuffle_partitions_on_spark_4_1_or_later_restart_from_the_checkpoint() -> None:
    [change] = property_diff(
        {"spark.sql.shuffle.partitions": "4"},
        {"spark.sql.shuffle.partitions": "8"},
        pinned=PINNED_43,
        spark="4.3.0",
    )
    assert change.kind is CONFIG
    [before_41] = property_diff(
        {"spark.sql.shuffle.partitions": "4"},
        {"spark.sql.shuffle.partitions": "8"},
        pinned=PINNED_43,
        spark="4.0.1",
    )
    assert before_41.kind is QUERY


def test_the_known_list_still_counts_where_the_checkpoint_does_not_name_a_setting() -> None:
    """An older Spark's checkpoint lacks what a newer one pins; the newer Spark pins it to a
    legacy default (OffsetSeqMetadata), so the hand-kept list counts too; and it is all there is
    where no checkpoint was readable (`pinned=None`)."""
    key = "spark.sql.streaming.stateStore.encodingFormat"
    for pinned in (PINNED_43, None):
        [change] = property_diff({}, {key: "avro"}, pinned=pinned)
        assert (change.kind, change.why) == (QUERY, "the checkpoint pins this Spark setting")
    for key in sorted(set(PINNED_43) - {"spark.sql.shuffle.partitions"}):
        [change] = property_diff({}, {key: "7"}, pinned=None)
        assert change.kind is QUERY, key


def _walked_same(a, b) -> bool:
    """`same` as it was first written (recursion through `all`): the reference it keeps to."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_walked_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_walked_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _Text(str):
    pass


def _value(rng, depth: int = 0):
    import datetime

    scalars = [0, 1, 1.0, True, False, None, -0.0, 0.0, float("nan"), "1", "a", "",
               _Text("a"), datetime.date(2024, 1, 1), (1, 2), [1, 2]]  # fmt: skip
    if depth > 3 or rng.random() < 0.5:
        return rng.choice(scalars)
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = ["a", "b", 1, True, "1", 1.5]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _variant(rng, value):
    """`value` with a leaf perhaps swapped for one equal in Python (1 -> 1.0 -> True, "a" ->
    a str subclass) and its keys perhaps in another order."""
    swaps: dict[Any, list[Any]] = {1: [1.0, True], 0: [0, 0.0, False, -0.0], "a": [_Text("a")]}
    if isinstance(value, dict):
        items = [(k, _variant(rng, v)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_variant(rng, v) for v in value]
    if type(value) in (int, float, str) and value in swaps and rng.random() < 0.3:
        return rng.choice(swaps[value])
    return value


@pytest.mark.parametrize("seed", range(300))
def test_same_agrees_with_walking_every_value(seed: int) -> None:
    import random

    rng = random.Random(seed)
    a = _value(rng)
    for b in (a, _variant(rng, a), _value(rng)):
        assert same(a, b) is _walked_same(a, b), (a, b)
