"""What a query change does to state: a verdict per stateful operator of the new version's query
(kept, rebuilt, unknown), and whether the change may start as decided.

A new version starts with an empty checkpoint. Where each of its sources reads again what the
previous version's state was built from (a file source reads every file; a Kafka source declared
to start at the earliest offset), its state is rebuilt and every window comes out true. Where a
source goes on from where the previous version stopped (a Kafka carry, `latest`, a rate source),
every window open at the change would be written with only the records after it, once, as if
true: such a change is refused before anything stops, unless the job says `on-state-change:
partial`. Spark checks a state's schema, not its meaning, so the verdicts come from what each
operator computes (model/state.py), never from whether Spark would accept the old state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.changes import (
    Change,
    ChangeKind,
    diff,
    restored_or_meant,
    severity,
)
from flink_sql_runner.decide.decisions import Action, Decision, OperatorVerdict, StateReport
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.intents import Kind
from flink_sql_runner.model.offsets import AS_TABLE, CARRIED, StartPlan
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.same import unchanged
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.model.sparkversion import is_older
from flink_sql_runner.model.state import Analysed, Operator, StateFacts, join_words
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.read.kafka_start import AGO, EARLIEST, TIMESTAMP
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.read.sinks import target_sink
from flink_sql_runner.read.sqlinfo import keeps_no_state

KEPT, REBUILT, UNKNOWN = "kept", "rebuilt", "unknown"
REFUSE, PARTIAL, CONTINUE = "refuse", "partial", "continue"
#: What a job's `on-state-change` and deploy's `--on-state-change` take.
POLICIES = (REFUSE, PARTIAL, CONTINUE)
#: How a new version's state comes to be, where its query keeps any: continued from the state
#: of the version it replaces (every verdict kept), rebuilt from sources that read again,
#: partial, or unknown.
CONTINUED = "continued"
#: Said of a part whose text reads the same but computes otherwise (a cast, a time zone); left
#: out where another reason is said.
ANOTHER_WAY = " computed another way"
#: How a source of a new version starts, for its state: it reads again all it holds, reads again
#: from a time, or goes on from where the previous version stopped (or from now).
REREADS, FROM_TIME, GOES_ON = "rereads", "from-time", "goes-on"


def state_base(facts: JobFacts, spark: str | None = None) -> StoredManifest | None:
    """The manifest whose state a new version of this job would start without, where the job's
    start could be one (a query change of a query on Spark), so that what its state and the
    desired query's mean is gathered (gather/schemas.py) and judged (`check`); None where not.
    That manifest is the stored one, or an interrupted start's newer one whose run is up or took
    effect (the plan adopts it; a job's first version too, none stored yet). `spark`: the Spark
    the target runs jobs on, as the plan decides with it (a setting a checkpoint pins on one
    line may not be pinned on another)."""
    desired, stored = facts.desired, facts.stored
    if desired is None or facts.problem or facts.unknown or desired.desired_state == "stopped":
        return None
    intent = facts.intent
    adopted = (
        intent.intent.manifest
        if intent is not None and intent.intent.kind is Kind.START and intent.settled.completes
        else None
    )
    if adopted is not None and (
        stored is None or adopted.meta.query_version > stored.meta.query_version
    ):
        base, checkpoint = adopted, intent.checkpoint if intent is not None else None
        pinned = checkpoint.pinned if checkpoint is not None else None
    elif stored is None or unchanged(facts):
        return None
    else:
        base, pinned = stored, facts.checkpoint.pinned if facts.checkpoint is not None else None
    if "checkpoint-root" not in base.job:
        return None
    sql = desired.spec.get("sql")
    if desired.spec.get("code") is None and isinstance(sql, str) and keeps_no_state(sql):
        return None  # its new version keeps no state: nothing to judge, no Spark to start
    base_job, base_tables = desired.resolved(base.job, base.tables)
    changes = diff(base_job, base_tables, desired.spec, desired.tables,
                   spark or base.meta.spark_version, pinned)  # fmt: skip
    return base if severity(changes) is ChangeKind.QUERY else None


def wants_state(facts: JobFacts, spark: str | None = None) -> bool:
    """Whether a job's start could be a new version of a query on Spark (`state_base`)."""
    return state_base(facts, spark) is not None


def verdicts(old: Analysed, new: Analysed) -> tuple[OperatorVerdict, ...]:
    """A verdict for each stateful operator of `new`, against `old`'s state."""
    if old.unknown is not None:
        why = f"the running version's query cannot be read ({old.unknown})"
        return tuple(OperatorVerdict(op.describe(), UNKNOWN, (why,)) for op in new.operators)
    if [o.kind for o in old.operators] != [n.kind for n in new.operators]:
        if not old.operators:
            why = "the running version keeps no state"
        else:
            was = ", ".join(o.kind for o in old.operators)
            now = ", ".join(n.kind for n in new.operators)
            why = (
                f"the stateful operators changed ({was} -> {now}): Spark numbers their state by "
                "position"
            )
        return tuple(OperatorVerdict(op.describe(), REBUILT, (why,)) for op in new.operators)
    return tuple(_compare(o, n) for o, n in zip(old.operators, new.operators, strict=True))


def _compare(old: Operator, new: Operator) -> OperatorVerdict:
    if new.unknown or old.unknown:
        return OperatorVerdict(new.describe(), UNKNOWN, (str(new.unknown or old.unknown),))
    reasons = [
        *_differences("key", old.keys, new.keys, old.key_text, new.key_text, ()),
        *_differences(
            "aggregate", old.values, new.values, old.value_text, new.value_text, new.value_names
        ),  # fmt: skip
        *_watermarks(old, new),
    ]
    if old.join != new.join:
        reasons.append(f"join {join_words(old.join or '')} -> {join_words(new.join or '')}")
    elif old.sides != new.sides:
        reasons.append("the columns each side of the join keeps changed")
    if reasons:
        plain = [r for r in reasons if not r.endswith(ANOTHER_WAY)]
        return OperatorVerdict(new.describe(), REBUILT, tuple(plain or reasons))
    mixes = ()
    if old.before != new.before:
        was = ", ".join(old.before_text) or "none"
        now = ", ".join(new.before_text) or "none"
        mixes = (f"what it reads changed ({was} -> {now}): a window open at the change holds "
                 "records of both",)  # fmt: skip
    return OperatorVerdict(new.describe(), KEPT, (), mixes)


def _differences(
    what: str,
    old: tuple[str, ...],
    new: tuple[str, ...],
    old_text: tuple[str, ...],
    new_text: tuple[str, ...],
    names: tuple[str, ...],
) -> list[str]:
    if old == new:
        return []
    if len(old) != len(new):
        return [f"{what}s {', '.join(old_text) or 'none'} -> {', '.join(new_text) or 'none'}"]
    found = []
    for i, (o, n) in enumerate(zip(old, new, strict=True)):
        if o == n:
            continue
        was, now = _at(old_text, i), _at(new_text, i)
        windows = was.startswith("window(") and now.startswith("window(")
        if windows and _window_args(was) != _window_args(now):
            found.append(f"window {_window_args(was)} -> {_window_args(now)}")
            continue
        named = f" {names[i]}" if i < len(names) and names[i] else ""
        if was == now:
            found.append(f"{what}{named}: {now}{ANOTHER_WAY}")
        else:
            found.append(f"{what}{named}: {was} -> {now}")
    return found


def _at(texts: tuple[str, ...], i: int) -> str:
    return texts[i] if i < len(texts) else "?"


def _window_args(text: str) -> str:
    """`20 seconds` of `window(ts, 20 seconds)`."""
    inner = text[len("window(") : -1]
    return inner.split(", ", 1)[1] if ", " in inner else inner


def _watermarks(old: Operator, new: Operator) -> list[str]:
    if old.watermarks == new.watermarks:
        return []
    if len(old.watermarks) == len(new.watermarks):
        found = []
        for o, n in zip(old.watermarks, new.watermarks, strict=True):
            if o == n:
                continue
            if o[0] == n[0]:
                found.append(f"watermark on {n[1]}: {o[2]} -> {n[2]}")
            else:
                found.append(f"watermark on {o[1]} ({o[2]}) -> on {n[1]} ({n[2]})")
        return found
    was = ", ".join(f"{w[1]} {w[2]}" for w in old.watermarks) or "none"
    now = ", ".join(f"{w[1]} {w[2]}" for w in new.watermarks) or "none"
    return [f"watermarks {was} -> {now}"]


def source_starts(
    manifest: StoredManifest, starting: StartPlan | None, base: StoredManifest | None = None
) -> dict[str, tuple[str, str]]:
    """How each source table of a new version starts, for its state: REREADS, FROM_TIME or
    GOES_ON, and why, in words. `base`: the manifest whose state it starts without; a file
    source reading another folder than `base`'s does not read what that state was built from."""
    kafka = {s.table: s for s in starting.sources} if starting is not None else {}
    before = base.tables if base is not None else {}
    found: dict[str, tuple[str, str]] = {}
    for name in source_tables(manifest):
        table = manifest.tables.get(name)
        table = table if isinstance(table, dict) else {}
        options = {str(k).lower(): str(v).strip() for k, v in (table.get("options") or {}).items()}
        fmt = str(table.get("format", "")).lower()
        if "table" in table:
            starts = [k for k in options if k.startswith("starting")]
            found[name] = (
                (FROM_TIME, f"reads table {table['table']} from its {starts[0]}")
                if starts
                else (REREADS, f"reads table {table['table']} whole again")
            )
        elif fmt in FILE_FORMATS:
            found[name] = _file_start(options, before.get(name))
        elif fmt == "kafka":
            found[name] = _kafka_start(options, kafka.get(name))
        else:
            found[name] = (GOES_ON, f"a {fmt or 'catalog'} source reads on from now")
    return found


def _file_start(options: dict[str, str], before: Any) -> tuple[str, str]:
    if options.get("cleansource", "off").lower() != "off":
        return (GOES_ON, f"its files are removed once read (cleanSource "
                f"{options['cleansource']}): what the state was built from is gone")  # fmt: skip
    path = options.get("path")
    old = before.get("options", {}) if isinstance(before, dict) else {}
    old_path = {str(k).lower(): str(v).strip() for k, v in old.items()}.get("path")
    if isinstance(before, dict) and old_path != path:
        return (GOES_ON, f"it reads {path}, not {old_path} that the state was built from")
    return (REREADS, "it reads every file again")


def _kafka_start(options: dict[str, str], start: object) -> tuple[str, str]:
    declared = getattr(start, "start", None)
    kind = getattr(start, "kind", None)
    if kind == CARRIED or start is None:
        return (GOES_ON, "it goes on from where the previous version stopped")
    if kind == AS_TABLE:
        if options.get("startingoffsets", "").lower() == EARLIEST:
            return (REREADS, "it starts at the earliest offset (its table's startingOffsets)")
        if options.get("startingtimestamp") or options.get("startingoffsetsbytimestamp"):
            return (FROM_TIME, "it starts at its table's starting timestamp")
        if options.get("startingoffsets", "latest").lower() != "latest":
            return (FROM_TIME, "it starts at the offsets its table's startingOffsets names")
        return (GOES_ON, "it starts at the latest offset")
    how = getattr(declared, "how", None)
    if how == EARLIEST:
        return (REREADS, "it starts at the earliest offset, as declared")
    if how in (TIMESTAMP, AGO):
        return (FROM_TIME, f"it starts {declared.describe()}, as declared")  # type: ignore[union-attr]
    return (GOES_ON, f"it starts at {how}, as declared")


def judge(
    facts: StateFacts,
    start: StartRun,
    policy: str,
    policy_from: str,
    changes: tuple[Change, ...] = (),
    spark: str | None = None,
) -> tuple[StateReport, bool] | None:
    """What the new version of `start` does with state, and whether it continues from the
    previous version's (every verdict kept, and nothing else keeps it from Spark's restart:
    `_cannot_continue`); None where its query keeps none."""
    new = facts.new
    starts = source_starts(start.manifest, start.starting, facts.base)
    going_on = sorted(name for name, (how, _) in starts.items() if how == GOES_ON)
    from_time = sorted(name for name, (how, _) in starts.items() if how == FROM_TIME)
    accepted = policy == PARTIAL
    if new.unknown is not None:
        if not going_on:
            summary = (
                f"whether its new query keeps state cannot be told ({new.unknown}); every "
                "source it declares reads again what any state was built from, so whatever "
                "state it keeps is rebuilt"
            )
            return StateReport(REBUILT, summary, (), policy, policy_from), False
        summary = (
            f"whether its new query keeps state cannot be told ({new.unknown}); "
            f"{_sources(going_on, starts)}, so a new version with empty state would write any "
            "window open at the change with only the records after it"
        )
        if accepted:
            summary += f": accepted ({policy_from} says on-state-change: partial)"
        return StateReport(UNKNOWN, summary, (), policy, policy_from, refused=not accepted), False
    if not new.operators:
        return None
    found = verdicts(facts.old, new)
    kept = all(v.verdict == KEPT for v in found)
    why_not = _cannot_continue(facts, start, changes, spark) if kept else None
    if kept and why_not is None and (going_on or policy == CONTINUE):
        return StateReport(CONTINUED, _continued(facts), found, policy, policy_from), True
    # Every operator's state keeps its meaning, but the new version does not continue from it.
    instead = f"every operator's state is kept, but it cannot continue from it ({why_not}); " if (
        why_not is not None) else ""  # fmt: skip
    if not going_on:
        if from_time:
            summary = (
                f"state rebuilt from where {_sources(from_time, starts)}: a window open at that "
                "time holds only what came after it, and windows the previous version wrote "
                "since then are written again under the new version"
            )
        else:
            summary = (
                "state rebuilt: every source reads again what the state was built from, and "
                "windows the previous version wrote are written again under the new version"
            )
            if kept and why_not is None:
                summary += (
                    " (every operator's state is kept: `on-state-change: continue` would go "
                    "on from it instead of reading everything again)"
                )
        return StateReport(REBUILT, instead + summary, found, policy, policy_from), False
    partial = (
        f"{instead}{_sources(going_on, starts)}, so a new version with empty state would write "
        "every window open at the change with only the records after it"
    )
    if accepted:
        return StateReport(PARTIAL, f"{partial}: accepted ({policy_from} says on-state-change: "
                           "partial)", found, policy, policy_from), False  # fmt: skip
    return StateReport(PARTIAL, partial, found, policy, policy_from, refused=True), False


def _cannot_continue(
    facts: StateFacts, start: StartRun, changes: tuple[Change, ...], spark: str | None = None
) -> str | None:
    """Why a new version whose every operator keeps its state's meaning cannot continue from
    the previous version's checkpoint as Spark restarts one; None when it can. Spark restores
    the offsets of the sources it numbers and the settings the checkpoint pins, the runner goes
    on with the file sink's batch ids, and the state was kept for one output mode: each must be
    the same; and, as for any restart, no older Spark than the one that wrote it (`spark`: the
    target's)."""
    base = facts.base
    if base is None:
        return "the state's version is not known"
    version = f"v{base.meta.query_version}"
    if facts.checkpoint is None:
        return f"{version}'s checkpoint cannot be read"
    if facts.checkpoint[0] == 0:
        return f"{version} has no checkpoint"
    declared = sorted(
        s.table for s in (start.starting.sources if start.starting is not None else ())
        if s.kind != CARRIED
    )  # fmt: skip
    if declared:
        # A table's own startingOffsets wins over a carry (SPEC), and so over continuing.
        return f"where {', '.join(declared)} starts is declared: {version}'s offsets are not used"
    old_sources = {n: base.tables.get(n) for n in source_tables(base)}
    new_sources = {n: start.manifest.tables.get(n) for n in source_tables(start.manifest)}
    if old_sources != new_sources:
        both = set(old_sources) | set(new_sources)
        names = sorted(n for n in both if old_sources.get(n) != new_sources.get(n))
        return (
            f"its sources changed ({', '.join(names)}): Spark restores {version}'s offsets by "
            "source"
        )
    if target_sink(base.name, base.job, base.tables) != target_sink(
        start.manifest.name, start.manifest.job, start.manifest.tables
    ):
        return f"it writes another sink than {version}"
    if any(c.field == "outputMode" for c in changes):
        return f"its output mode changed: {version}'s state was kept for its own"
    if is_older(spark, base.meta.spark_version):
        return (
            f"{version}'s checkpoint was written by Spark {base.meta.spark_version}; the next "
            f"run uses Spark {spark}, which is older"
        )
    pinned = [c.field for c in changes if c.kind is ChangeKind.QUERY and restored_or_meant(c)]
    if pinned:
        return f"{', '.join(pinned)} changed: {version}'s checkpoint pins it, or its state means it"
    return None


def _continued(facts: StateFacts) -> str:
    assert facts.base is not None and facts.checkpoint is not None
    version = f"v{facts.base.meta.query_version}"
    files, size = facts.checkpoint
    return (
        f"state kept: the new version continues from {version}'s state and offsets, so every "
        f"window open at the change is written once, with all its records; {version}'s "
        f"checkpoint ({files} files, {human_size(size)}) is copied once {version} stopped"
    )


def _sources(names: list[str], starts: dict[str, tuple[str, str]]) -> str:
    """`source src: it goes on from where the previous version stopped`."""
    return "; ".join(f"source {name}: {starts[name][1]}" for name in names)


def check(
    decision: Decision, facts: JobFacts, policy: str | None = None, spark: str | None = None
) -> Decision:
    """The decision with its state report, where it starts a new version of a stateful query
    on Spark; one that would write windows partial unasked (the job's `on-state-change`, or
    the deploy's `policy`, which wins) becomes `refused`, without steps: nothing is stopped or
    started."""
    stored, state = facts.stored, facts.state
    base = (state.base or stored) if state is not None else None
    if state is None or base is None or "checkpoint-root" not in base.job:
        return decision  # a new job, or a job's first version on Spark: no state before it
    if facts.desired is not None:  # a manifest stored with relative paths means them here
        base = replace(base, tables=facts.desired.resolved(base.job, base.tables)[1])
    state = replace(state, base=base)
    start = next((s for s in decision.steps if isinstance(s, StartRun) and s.clean), None)
    if start is None or start.manifest.meta.query_version <= base.meta.query_version:
        return decision
    spec = start.manifest.job
    if policy is not None:
        chosen, chosen_from = policy, "the deploy"
    elif spec.get("on-state-change"):
        chosen, chosen_from = str(spec["on-state-change"]), "the job"
    else:
        chosen, chosen_from = REFUSE, "default"
    judged = judge(state, start, chosen, chosen_from, decision.changes, spark)
    if judged is None:
        return decision
    report, continues = judged
    report = _masked(report)
    if continues:
        # Its Kafka sources go on at the offsets the copied checkpoint holds, as a restart's.
        going_on = replace(start, continues=base, starting=None)
        steps = tuple(going_on if s is start else s for s in decision.steps)
        return replace(decision, reason=_continuing(decision.reason, start, base), steps=steps,
                       state=report)  # fmt: skip
    if not report.refused:
        return replace(decision, state=report)
    return replace(
        decision,
        action=Action.REFUSED,
        version=(stored or base).meta.query_version,
        reason=f"{decision.reason}; but {report.summary}; refused, nothing is stopped or "
        f"started; {_ways(start)}",
        steps=(),
        rollback=(),
        state=report,
    )


def _masked(report: StateReport) -> StateReport:
    """`report` with every secret its texts assign masked, as the plan masks the query's diff:
    they are read from the query (a filter `token = '...'`)."""
    operators = tuple(
        replace(v, operator=redact_text(v.operator), reasons=tuple(map(redact_text, v.reasons)),
                mixes=tuple(map(redact_text, v.mixes)))
        for v in report.operators
    )  # fmt: skip
    return replace(report, summary=redact_text(report.summary), operators=operators)


def _continuing(reason: str, start: StartRun, base: StoredManifest) -> str:
    """The tree's reason, said of a start that continues from `base`'s state: where its Kafka
    sources would start clean is not where it starts."""
    said = start.starting.describe() if start.starting is not None else ""
    if said:
        reason = reason.replace(f"; {said}", "", 1)
    version = start.manifest.meta.query_version
    return reason.replace(
        f"start clean as version {version}",
        f"start version {version} from v{base.meta.query_version}'s state (its offsets, its open "
        "windows)",
    )


def _ways(start: StartRun) -> str:
    """What the job can say: a start that reads again where it has Kafka sources, partial."""
    kafka = any(
        isinstance(t, dict) and str(t.get("format", "")).lower() == "kafka"
        for n, t in start.manifest.tables.items()
        if n in source_tables(start.manifest)
    )
    again = (
        "declare where its Kafka sources start again so that the state is rebuilt (kafka-start: "
        "earliest, or a time), or "
        if kafka
        else ""
    )
    return (
        f"{again}accept partial windows with `on-state-change: partial` (or deploy "
        "--on-state-change partial; docs/concepts/state.md)"
    )
