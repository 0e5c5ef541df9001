"""What changed between the deployed manifest and the desired one, and how much it matters.

The rules live here, in tables, and follow Spark's own list of what may change between restarts
from one checkpoint (the Structured Streaming guide, "Recovery Semantics after Changes in a
Streaming Query"; SPEC summarises it). A QUERY change makes the old checkpoint unusable (start
clean, version + 1); a CONFIG change reaches the running job and keeps its state (restart from
the checkpoint). A field or option with no rule counts as QUERY: when in doubt, the deployer
prefers a clean start to restoring state that may not fit.

- `JOB_RULES`: the job's own fields; `sparkProperties` key by key (`property_rule`): the settings
  the checkpoint pins (the `conf` map of its offsets files, read by gather/; the hand-kept
  `PINNED_SPARK_SETTINGS` as well, for what a newer Spark pins in an older checkpoint and where no
  checkpoint is readable), and those that change what state means, are QUERY.
- Tables, by the role the table plays for the job (source or sink) and its format family
  (`family()`): `TABLE_FIELD_RULES` for format, table, schema and watermark, `OPTION_RULES` for
  options (matched case-insensitively, as Spark matches them), `SINK_FORMAT_CHANGES` for the sink
  changes Spark allows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any

from flink_sql_runner.model.same import same
from flink_sql_runner.model.sparkversion import stateless_shuffle_partitions_change
from flink_sql_runner.read.catalog import file_format
from flink_sql_runner.read.sinks import kafka_servers
from flink_sql_runner.read.sqlinfo import code_fingerprint, sql_fingerprint


class ChangeKind(IntEnum):
    """Ordered by severity: the most severe change of a job decides."""

    NONE = 0
    CONFIG = 1
    QUERY = 2

    @property
    def label(self) -> str:
        return self.name.lower()


NONE, CONFIG, QUERY = ChangeKind.NONE, ChangeKind.CONFIG, ChangeKind.QUERY


@dataclass(frozen=True)
class Rule:
    kind: ChangeKind
    why: str
    #: Compared instead of the raw value (e.g. SQL without whitespace and comments).
    normalize: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Change:
    field: str
    kind: ChangeKind
    old: Any
    new: Any
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "kind": self.kind.label,
            "old": self.old,
            "new": self.new,
            "why": self.why,
        }


MISSING = "<unset>"

# -- the job's own fields -------------------------------------------------------------------------

#: Spark settings a checkpoint pins: on restart Spark silently keeps the old value (SPEC). What a
#: checkpoint pins is read from the checkpoint itself; this list (Spark 4.3's) still counts where
#: none is readable, and for a checkpoint an older Spark wrote: a newer Spark pins what the older
#: one did not write down to a legacy default (OffsetSeqMetadata's `relevantSQLConfDefaultValues`).
PINNED_SPARK_SETTINGS = frozenset(
    {
        "spark.sql.shuffle.partitions",
        "spark.sql.streaming.stateStore.providerClass",
        "spark.sql.streaming.stateStore.rocksdb.formatVersion",
        "spark.sql.streaming.stateStore.encodingFormat",
        "spark.sql.streaming.stateStore.compression.codec",
        "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
        "spark.sql.streaming.stateStore.rowChecksum.enabled",
        "spark.sql.streaming.statefulOperator.useStrictDistribution",
        "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled",
        "spark.sql.streaming.queryEvolution.enableSourceEvolution",
        "spark.sql.dropDuplicates.deterministicKeyOrder.enabled",
        "spark.sql.function.protobufExtensions.enabled",
        "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
        "spark.sql.streaming.aggregation.stateFormatVersion",
        "spark.sql.streaming.join.stateFormatVersion",
        "spark.sql.streaming.multipleWatermarkPolicy",
        "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan",
    }
)
#: Spark settings that change what the query computes into its state (a key, a window's
#: boundary, what overflows), so old state would be read with other meaning.
SEMANTIC_SPARK_SETTINGS = frozenset(
    {"spark.sql.session.timeZone", "spark.sql.ansi.enabled", "spark.sql.caseSensitive"}
)

JOB_RULES: dict[str, Rule] = {
    "sql": Rule(QUERY, "the query changed", sql_fingerprint),
    "code": Rule(QUERY, "the code changed", code_fingerprint),
    "target-table": Rule(QUERY, "it writes another table"),
    "outputMode": Rule(QUERY, "the output mode shapes the state"),
    "source-tables": Rule(QUERY, "it reads other tables"),
    "checkpoint-root": Rule(QUERY, "its state would live elsewhere"),
    "description": Rule(CONFIG, "metadata only"),
    "trigger": Rule(CONFIG, "the checkpoint survives a new trigger interval"),
    "desired-state": Rule(CONFIG, "running or stopped"),
    "reprocessing": Rule(NONE, "how it follows its producers; its run is not touched"),
    "on-schema-change": Rule(NONE, "checked when a start changes the schema; no run is touched"),
    "on-state-change": Rule(
        NONE, "checked when a query change starts a stateful query; no run is touched"
    ),
    "handover": Rule(NONE, "how the next change is carried out; no run is touched"),
    "kafka-start": Rule(NONE, "where a new version's Kafka sources start; no run is touched"),
    "metadata-columns": Rule(CONFIG, "columns appended after the query"),
    "migrated-from": Rule(QUERY, "the original tool's (Flink) state cannot be restored by Spark"),
}
PINNED_RULE = Rule(QUERY, "the checkpoint pins this Spark setting")
#: Spark 4.1+ (SPARK-53942).
SHUFFLE_PARTITIONS_RULE = Rule(
    CONFIG,
    "Spark 4.1+ applies it to stateless shuffles on restart; state keeps its partitions",
)
#: A setting the checkpoint pins, changed (`kept`: the value Spark restores from it).
CHECKPOINT_PINNED_WHY = (
    "pinned by the checkpoint: Spark would restore {kept} and ignore the new value"
)
#: A pinned setting set to the value its checkpoint holds.
CHECKPOINT_VALUE_RULE = Rule(
    CONFIG, "pinned by the checkpoint, set to the checkpoint's own value: the restart runs with it"
)
SEMANTIC_RULE = Rule(QUERY, "this Spark setting changes what the state means")
PROPERTY_RULE = Rule(CONFIG, "a Spark setting the checkpoint does not pin")


def restored_or_meant(change: Change) -> bool:
    """Whether `change` is of a Spark setting the checkpoint restores, or one that changes what
    the state means: a restart on the old state would not run with the new value."""
    return change.why in (PINNED_RULE.why, SEMANTIC_RULE.why) or change.why.startswith(
        CHECKPOINT_PINNED_WHY.split("{", 1)[0]
    )


CONTINUOUS_RULE = Rule(QUERY, "continuous and micro-batch processing keep other progress")
UNKNOWN_RULE = Rule(QUERY, "no rule for this field; treated as a query change")


def property_rule(
    key: str,
    spark: str | None = None,
    pinned: Mapping[str, str] | None = None,
    new: Any = MISSING,
) -> Rule:
    """The rule of a Spark setting changed to `new`, for the Spark version `spark` that will run
    the job (None: unknown, the strictest rules) and the settings its checkpoint pins (`pinned`,
    setting -> value; None: unknown). Spark restores a pinned setting's value from the
    checkpoint and ignores the new one: a restart from it would silently keep the old value,
    unless the new value is the one the checkpoint holds."""
    if key == "spark.sql.shuffle.partitions" and stateless_shuffle_partitions_change(spark):
        return SHUFFLE_PARTITIONS_RULE
    if pinned is not None and key in pinned:
        if new is not MISSING and _same_setting(option_text(new), pinned[key]):
            return CHECKPOINT_VALUE_RULE
        return Rule(QUERY, CHECKPOINT_PINNED_WHY.format(kept=repr(pinned[key])))
    if key in PINNED_SPARK_SETTINGS:
        return PINNED_RULE
    if key in SEMANTIC_SPARK_SETTINGS:
        return SEMANTIC_RULE
    return PROPERTY_RULE


def _same_setting(value: str, pinned: str) -> bool:
    """Whether Spark reads `value` as the checkpoint's `pinned` (its booleans without case)."""
    if value.lower() in ("true", "false"):
        return value.lower() == pinned.lower()
    return value == pinned


def _trigger_rule(old: Any, new: Any) -> Rule:
    def continuous(trigger: Any) -> bool:
        return isinstance(trigger, dict) and "continuous" in trigger

    return CONTINUOUS_RULE if continuous(old) != continuous(new) else JOB_RULES["trigger"]


# -- tables ---------------------------------------------------------------------------------------


class Role(str, Enum):
    SOURCE = "source"
    SINK = "sink"


FAMILIES = ("kafka", "file", "rate", "rate-micro-batch", "socket", "catalog", "other")


def family(definition: dict[str, Any]) -> str:
    """The format family a table definition belongs to, for the rules."""
    if "table" in definition:
        return "catalog"
    fmt = definition.get("format")
    if file_format(fmt):
        return "file"
    if fmt in ("kafka", "rate", "rate-micro-batch", "socket"):
        return str(fmt)
    return "other"


TABLE_FIELD_RULES: dict[Role, dict[str, Rule]] = {
    Role.SOURCE: {
        "format": Rule(QUERY, "another kind of source has other offsets"),
        "table": Rule(QUERY, "it reads another catalog table"),
        "schema": Rule(QUERY, "the source schema shapes the plan and its state"),
        "watermark": Rule(QUERY, "the watermark shapes the state"),
        "on-schema-change": Rule(NONE, "said of the table as a sink; not used when reading"),
    },
    Role.SINK: {
        "format": Rule(QUERY, "Spark does not allow this change of sink"),
        "table": Rule(QUERY, "it writes another catalog table"),
        "schema": Rule(CONFIG, "not used when writing"),
        "watermark": Rule(CONFIG, "not used when writing"),
        "on-schema-change": Rule(NONE, "checked when a start changes the schema"),
    },
}
#: Sink changes Spark allows between restarts (by family, or format name for foreach).
SINK_FORMAT_CHANGES: dict[tuple[str, str], Rule] = {
    ("file", "kafka"): Rule(CONFIG, "Spark allows a file sink to become a Kafka sink"),
    ("kafka", "foreach"): Rule(CONFIG, "Spark allows a Kafka sink to become a foreach sink"),
    ("foreach", "kafka"): Rule(CONFIG, "Spark allows a foreach sink to become a Kafka sink"),
}

_RATE_LIMIT = Rule(CONFIG, "a rate limit: Spark allows adding, removing or changing it")
_STARTING = Rule(CONFIG, "used only when a version starts clean; a restart resumes its offsets")
_READ_WHAT = Rule(QUERY, "Spark: changing what a source reads is not allowed")
_PARSING = Rule(CONFIG, "how the next files are parsed; files read before are not read again")
_WRITING = Rule(CONFIG, "how the next files are written")
_CLIENT = Rule(CONFIG, "a client setting (security, timeouts); the offsets are kept")
_CHECKPOINT = Rule(QUERY, "the deployer sets the checkpoint location per version")

#: Options known to be safe or unsafe to change, per (role, family); lower-case keys.
#: Options known to be safe or unsafe to change, per (role, family), as Spark's documentation
#: spells them (matched without case, as Spark matches them).
OPTION_RULES: dict[tuple[Role, str], dict[str, Rule]] = {
    (Role.SOURCE, "kafka"): {
        "subscribe": Rule(QUERY, "Spark: changing the subscribed topics is not allowed"),
        "subscribePattern": Rule(QUERY, "Spark: changing the subscribed topics is not allowed"),
        "assign": Rule(QUERY, "Spark: changing the assigned partitions is not allowed"),
        "kafka.bootstrap.servers": Rule(QUERY, "another cluster has other offsets"),
        "includeHeaders": Rule(QUERY, "it changes the source schema"),
        "maxOffsetsPerTrigger": _RATE_LIMIT,
        "minOffsetsPerTrigger": _RATE_LIMIT,
        "maxTriggerDelay": _RATE_LIMIT,
        "maxRecordsPerPartition": _RATE_LIMIT,
        "minPartitions": Rule(CONFIG, "how the next offsets are split into tasks"),
        "startingOffsets": _STARTING,
        "startingTimestamp": _STARTING,
        "startingOffsetsByTimestamp": _STARTING,
        "startingOffsetsByTimestampStrategy": _STARTING,
        "failOnDataLoss": Rule(CONFIG, "whether lost offsets fail the query"),
        "fetchOffset.numRetries": _CLIENT,
        "fetchOffset.retryIntervalMs": _CLIENT,
        "kafkaConsumer.pollTimeoutMs": _CLIENT,
        "groupIdPrefix": _CLIENT,
    },
    (Role.SINK, "kafka"): {
        "topic": Rule(CONFIG, "Spark allows a Kafka sink's topic to change"),
        "kafka.bootstrap.servers": Rule(CONFIG, "a Kafka sink sees only new data"),
        "includeHeaders": Rule(CONFIG, "a Kafka sink sees only new data"),
    },
    (Role.SOURCE, "file"): {
        "path": Rule(QUERY, "Spark: changing the files read is not allowed"),
        "pathGlobFilter": _READ_WHAT,
        "recursiveFileLookup": _READ_WHAT,
        "modifiedBefore": _READ_WHAT,
        "modifiedAfter": _READ_WHAT,
        "fileNameOnly": Rule(QUERY, "it changes which files count as already read"),
        "maxFileAge": Rule(QUERY, "it changes which files count as new"),
        "maxFilesPerTrigger": _RATE_LIMIT,
        "maxBytesPerTrigger": _RATE_LIMIT,
        "maxCachedFiles": _RATE_LIMIT,
        "discardCachedInputRatio": _RATE_LIMIT,
        "latestFirst": Rule(CONFIG, "the order in which new files are read"),
        "cleanSource": Rule(CONFIG, "what happens to files once read"),
        "sourceArchiveDir": Rule(CONFIG, "what happens to files once read"),
        **{
            key: _PARSING
            for key in (
                "header",
                "sep",
                "delimiter",
                "quote",
                "escape",
                "comment",
                "encoding",
                "charset",
                "multiLine",
                "mode",
                "nullValue",
                "nanValue",
                "emptyValue",
                "dateFormat",
                "timestampFormat",
                "timestampNTZFormat",
                "columnNameOfCorruptRecord",
                "lineSep",
                "ignoreLeadingWhiteSpace",
                "ignoreTrailingWhiteSpace",
                "allowComments",
                "allowUnquotedFieldNames",
                "allowSingleQuotes",
                "wholetext",
                "locale",
                "mergeSchema",
                "datetimeRebaseMode",
                "int96RebaseMode",
                "compression",
            )
        },  # fmt: skip
    },
    (Role.SINK, "file"): {
        "path": Rule(QUERY, "Spark: a file sink's output folder may not change"),
        **{
            key: _WRITING
            for key in (
                "compression",
                "codec",
                "maxRecordsPerFile",
                "header",
                "sep",
                "delimiter",
                "quote",
                "escape",
                "encoding",
                "charset",
                "dateFormat",
                "timestampFormat",
                "nullValue",
                "lineSep",
                "ignoreNullFields",
            )
        },  # fmt: skip
    },
    (Role.SOURCE, "rate"): {
        "rowsPerSecond": Rule(QUERY, "the rate source numbers rows by it: values would repeat"),
        "rampUpTime": Rule(QUERY, "the rate source numbers rows by it: values would repeat"),
        "numPartitions": Rule(CONFIG, "how the next rows are spread over partitions"),
    },
    (Role.SOURCE, "rate-micro-batch"): {
        "rowsPerBatch": _RATE_LIMIT,
        "numPartitions": Rule(CONFIG, "how the next rows are spread over partitions"),
        "advanceMillisPerBatch": Rule(CONFIG, "the timestamps of the next rows"),
        "startTimestamp": Rule(QUERY, "the timestamps of every row would move"),
    },
    (Role.SOURCE, "socket"): {
        "host": Rule(QUERY, "it reads another socket"),
        "port": Rule(QUERY, "it reads another socket"),
        "includeTimestamp": Rule(QUERY, "it changes the source schema"),
    },
    (Role.SOURCE, "catalog"): {
        "maxFilesPerTrigger": _RATE_LIMIT,
        "maxBytesPerTrigger": _RATE_LIMIT,
        "startingVersion": _STARTING,
        "startingTimestamp": _STARTING,
        "skipChangeCommits": Rule(CONFIG, "whether changed rows stop the stream"),
        "ignoreDeletes": Rule(CONFIG, "whether deleted rows stop the stream"),
        "ignoreChanges": Rule(CONFIG, "whether changed rows stop the stream"),
    },
    (Role.SINK, "catalog"): {
        "mergeSchema": Rule(CONFIG, "whether the table's schema may grow"),
    },
    (Role.SOURCE, "other"): {
        "maxFilesPerTrigger": _RATE_LIMIT,
        "maxBytesPerTrigger": _RATE_LIMIT,
    },
}
#: Options of any family that start with a prefix: Kafka's client settings.
OPTION_PREFIX_RULES: dict[tuple[Role, str], tuple[tuple[str, Rule], ...]] = {
    (Role.SOURCE, "kafka"): (("kafka.", _CLIENT),),
    (Role.SINK, "kafka"): (("kafka.", Rule(CONFIG, "a Kafka producer setting")),),
}
UNKNOWN_OPTION_RULE = Rule(QUERY, "no rule for this option; treated as a query change")
_LOWER_OPTION_RULES = {
    scope: {key.lower(): rule for key, rule in rules.items()}
    for scope, rules in OPTION_RULES.items()
}


def option_rule(role: Role, fam: str, option: str) -> Rule:
    key = option.lower()
    if key == "checkpointlocation":
        return _CHECKPOINT
    found = _LOWER_OPTION_RULES.get((role, fam), {}).get(key)
    if found is not None:
        return found
    for prefix, rule in OPTION_PREFIX_RULES.get((role, fam), ()):
        if key.startswith(prefix):
            return rule
    return UNKNOWN_OPTION_RULE


def option_text(value: Any) -> str:
    """What Spark receives for an option value: text; YAML booleans are `true`/`false`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: Option values compared by what they mean (lower-case keys): a broker list is a set.
OPTION_NORMALIZE: dict[str, Callable[[str], str]] = {"kafka.bootstrap.servers": kafka_servers}
SAME_BROKERS = Rule(NONE, "the same brokers: a broker list compares as a set of host names")


def _same_option(key: str, old: str, new: str) -> bool:
    normalize = OPTION_NORMALIZE.get(key)
    return old == new or (normalize is not None and normalize(old) == normalize(new))


def _options(definition: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """`{lower-case key: (key as written, value as text)}`: Spark matches option keys without
    case and receives every value as text."""
    options = definition.get("options") or {}
    return {str(k).lower(): (str(k), option_text(v)) for k, v in options.items()}


def table_changes(name: str, role: Role, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """How one table's definition changed, for a job that uses it as `role`."""
    found: list[Change] = []
    fields = TABLE_FIELD_RULES[role]
    old_family, new_family = family(old), family(new)
    format_rule: Rule | None = None
    for key in sorted({*old, *new} - {"options", "description"}):
        before, after = old.get(key, MISSING), new.get(key, MISSING)
        if same(before, after):
            continue
        rule = fields.get(key, UNKNOWN_RULE)
        if key in ("format", "table") and role is Role.SINK:
            pair = (_sink_kind(old), _sink_kind(new))
            rule = SINK_FORMAT_CHANGES.get(pair, rule)
            format_rule = rule
        found.append(Change(f"tables.{name}.{key}", rule.kind, before, after, rule.why))
    before, after = _options(old), _options(new)
    for key in sorted({*before, *after}):
        old_value, new_value = before.get(key), after.get(key)
        if old_value is not None and new_value is not None:
            if _same_option(key, old_value[1], new_value[1]):
                continue
        written = (new_value or old_value or (key, ""))[0]
        if format_rule is not None and format_rule.kind is CONFIG and new_value is None:
            rule = Rule(CONFIG, "an option of the sink it no longer writes")
        else:
            fam = new_family if new_value is not None else old_family
            rule = option_rule(role, fam, key)
        shown_old = old_value[1] if old_value else MISSING
        shown_new = new_value[1] if new_value else MISSING
        found.append(
            Change(f"tables.{name}.options.{written}", rule.kind, shown_old, shown_new, rule.why)
        )
    return found


def _sink_kind(definition: dict[str, Any]) -> str:
    fam = family(definition)
    return "foreach" if definition.get("format") == "foreach" else fam


# -- the diff -------------------------------------------------------------------------------------


def diff(
    old_spec: dict[str, Any],
    old_tables: dict[str, Any],
    new_spec: dict[str, Any],
    new_tables: dict[str, Any],
    spark: str | None = None,
    pinned: Mapping[str, str] | None = None,
) -> list[Change]:
    """Every change, old -> new, each with its kind and why; most severe first, then by field.
    `spark`: the Spark version that will run the job, where a rule depends on it; `pinned`: the
    settings the stored version's checkpoint pins (None: no checkpoint was readable)."""
    found: list[Change] = []
    for key in sorted({*old_spec, *new_spec} - {"sparkProperties"}):
        before, after = old_spec.get(key, MISSING), new_spec.get(key, MISSING)
        if same(before, after):
            continue
        rule = JOB_RULES.get(key, UNKNOWN_RULE)
        if rule.normalize and MISSING not in (before, after):
            if rule.normalize(before) == rule.normalize(after):
                continue
        if key == "trigger":
            rule = _trigger_rule(before, after)
        found += _nested_changes(key, before, after, rule)
    old_props = old_spec.get("sparkProperties") or {}
    new_props = new_spec.get("sparkProperties") or {}
    for key in sorted({*old_props, *new_props}):
        before, after = old_props.get(key, MISSING), new_props.get(key, MISSING)
        if not same(before, after):
            rule = property_rule(key, spark, pinned, after)
            found.append(Change(f"sparkProperties.{key}", rule.kind, before, after, rule.why))
    target = new_spec.get("target-table")
    for name in sorted({*old_tables, *new_tables}):
        before, after = old_tables.get(name), new_tables.get(name)
        if before is not None and after is not None and same(before, after):
            continue
        role = Role.SINK if name == target else Role.SOURCE
        if before is None or after is None:
            why = "it writes another table" if role is Role.SINK else "it reads other tables"
            found.append(Change(f"tables.{name}", QUERY, before or MISSING, after or MISSING, why))
            continue
        found += table_changes(name, role, before, after)
    return sorted(found, key=lambda c: (-c.kind, c.field))


def _nested_changes(key: str, before: Any, after: Any, rule: Rule) -> list[Change]:
    """One change for a plain field; for a mapping whose values changed, one per changed leaf
    (`metadata-columns.enabled`), found with DeepDiff, all under the field's rule."""
    if not (isinstance(before, dict) and isinstance(after, dict)) or rule.normalize:
        return [Change(key, rule.kind, before, after, rule.why)]
    from deepdiff import DeepDiff  # slow to import; only needed when something changed

    leaves = []
    for levels in DeepDiff(before, after, view="tree").values():
        for level in levels:
            path = level.path(output_format="list")
            old = _at(before, path)
            new = _at(after, path)
            field = ".".join([key, *(str(p) for p in path)])
            leaves.append(Change(field, rule.kind, old, new, rule.why))
    return leaves or [Change(key, rule.kind, before, after, rule.why)]


def _at(value: Any, path: list[Any]) -> Any:
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def severity(changes: list[Change]) -> ChangeKind:
    return max((c.kind for c in changes), default=ChangeKind.NONE)


# -- the README's table ---------------------------------------------------------------------------


def safe_to_change_markdown() -> str:
    """The rules as the README's table of what is safe to change (`python -m
    flink_sql_runner.decide.changes` prints it)."""

    def verdict(rule: Rule) -> str:
        if rule.kind is NONE:
            return "nothing (recorded at the next change)"
        return "restart from checkpoint" if rule.kind is CONFIG else "**new version**"

    rows = ["| where | what | on change | why |", "|---|---|---|---|"]
    for key, rule in JOB_RULES.items():
        rows.append(f"| job | `{key}` | {verdict(rule)} | {rule.why} |")
    rows.append(f"| job | `trigger` to or from `continuous` | {verdict(CONTINUOUS_RULE)} | "
                f"{CONTINUOUS_RULE.why} |")  # fmt: skip
    pinned = CHECKPOINT_PINNED_WHY.format(kept="its value")
    rows.append(
        "| sparkProperties | any setting the checkpoint pins (the `conf` map of its latest offsets "
        f"file) | {verdict(Rule(QUERY, pinned))} | {pinned} |"
    )
    rows.append(
        "| sparkProperties | a setting the checkpoint pins, set to the checkpoint's own value | "
        f"{verdict(CHECKPOINT_VALUE_RULE)} | {CHECKPOINT_VALUE_RULE.why} |"
    )
    for key in sorted(PINNED_SPARK_SETTINGS):
        rows.append(f"| sparkProperties | `{key}` | {verdict(PINNED_RULE)} | {PINNED_RULE.why} |")
    rows.append(
        f"| sparkProperties | `spark.sql.shuffle.partitions` on Spark 4.1+ | "
        f"{verdict(SHUFFLE_PARTITIONS_RULE)} | {SHUFFLE_PARTITIONS_RULE.why} |"
    )
    for key in sorted(SEMANTIC_SPARK_SETTINGS):
        rows.append(
            f"| sparkProperties | `{key}` | {verdict(SEMANTIC_RULE)} | {SEMANTIC_RULE.why} |"
        )
    rows.append(f"| sparkProperties | any other | {verdict(PROPERTY_RULE)} | {PROPERTY_RULE.why} |")
    for role in Role:
        for key, rule in TABLE_FIELD_RULES[role].items():
            rows.append(f"| {role.value} table | `{key}` | {verdict(rule)} | {rule.why} |")
    for (old, new), rule in SINK_FORMAT_CHANGES.items():
        rows.append(f"| sink table | format {old} to {new} | {verdict(rule)} | {rule.why} |")
    for (role, fam), rules in OPTION_RULES.items():
        grouped: dict[Rule, list[str]] = {}
        for key, rule in rules.items():
            grouped.setdefault(rule, []).append(key)
        for prefix, rule in OPTION_PREFIX_RULES.get((role, fam), ()):
            grouped.setdefault(rule, []).append(f"{prefix}*")
        for rule, keys in grouped.items():
            shown = ", ".join(f"`{k}`" for k in keys)
            rows.append(f"| {fam} {role.value} | {shown} | {verdict(rule)} | {rule.why} |")
    for key in OPTION_NORMALIZE:
        rows.append(
            f"| any table | `{key}` written in another order, spacing or case of host names | "
            f"{verdict(SAME_BROKERS)} | {SAME_BROKERS.why} |"
        )
    rows.append(f"| any table | `checkpointLocation` | refused by `validate` | {_CHECKPOINT.why} |")
    rows.append(
        f"| any table | any other option | {verdict(UNKNOWN_OPTION_RULE)} | "
        f"{UNKNOWN_OPTION_RULE.why} |"
    )
    rows.append(f"| job | any other field | {verdict(UNKNOWN_RULE)} | {UNKNOWN_RULE.why} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(safe_to_change_markdown(), end="")
