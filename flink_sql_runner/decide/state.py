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

from flink_sql_runner.decide.changes import ChangeKind, diff, severity, unchanged
from flink_sql_runner.decide.decisions import Action, Decision, OperatorVerdict, StateReport
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.offsets import AS_TABLE, CARRIED, StartPlan
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.state import Analysed, Operator, StateFacts, join_words
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.read.kafka_start import EARLIEST, TIMESTAMP
from flink_sql_runner.read.sqlinfo import keeps_no_state

KEPT, REBUILT, UNKNOWN = "kept", "rebuilt", "unknown"
REFUSE, PARTIAL = "refuse", "partial"
#: Said of a part whose text reads the same but computes otherwise (a cast, a time zone); left
#: out where another reason is said.
ANOTHER_WAY = " computed another way"
#: How a source of a new version starts, for its state: it reads again all it holds, reads again
#: from a time, or goes on from where the previous version stopped (or from now).
REREADS, FROM_TIME, GOES_ON = "rereads", "from-time", "goes-on"


def wants_state(facts: JobFacts) -> bool:
    """Whether a job's start could be a new version of a stored query on Spark (a query change),
    so that what its state means is gathered (gather/schemas.py) and judged (`check`)."""
    desired, stored = facts.desired, facts.stored
    if desired is None or stored is None or facts.problem or facts.unknown:
        return False
    if desired.desired_state == "stopped" or "checkpoint-root" not in stored.job:
        return False
    if unchanged(facts):
        return False
    sql = desired.spec.get("sql")
    if isinstance(sql, str) and keeps_no_state(sql):
        return False  # its new version keeps no state: nothing to judge, no Spark to start
    stored_job, stored_tables = desired.resolved(stored.job, stored.tables)
    pinned = facts.checkpoint.pinned if facts.checkpoint is not None else None
    changes = diff(stored_job, stored_tables, desired.spec, desired.tables,
                   stored.meta.spark_version, pinned)  # fmt: skip
    return severity(changes) is ChangeKind.QUERY


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


def source_starts(manifest: StoredManifest, starting: StartPlan | None) -> dict[str, str]:
    """How each source table of a new version starts, for its state: REREADS, FROM_TIME or
    GOES_ON, with what it is in words."""
    kafka = {s.table: s for s in starting.sources} if starting is not None else {}
    found: dict[str, str] = {}
    for name in source_tables(manifest):
        table = manifest.tables.get(name)
        table = table if isinstance(table, dict) else {}
        fmt = str(table.get("format", "")).lower()
        if "table" not in table and fmt in FILE_FORMATS:
            found[name] = REREADS
        elif fmt == "kafka":
            found[name] = _kafka_start(table, kafka.get(name))
        else:
            found[name] = GOES_ON
    return found


def _kafka_start(table: dict[str, Any], start: object) -> str:
    declared = getattr(start, "start", None)
    kind = getattr(start, "kind", None)
    if kind == CARRIED or start is None:
        return GOES_ON
    if kind == AS_TABLE:
        options = {str(k).lower(): str(v) for k, v in (table.get("options") or {}).items()}
        return REREADS if options.get("startingoffsets", "").strip() == EARLIEST else GOES_ON
    how = getattr(declared, "how", None)
    return REREADS if how == EARLIEST else FROM_TIME if how == TIMESTAMP else GOES_ON


def judge(facts: StateFacts, start: StartRun, policy: str, policy_from: str) -> StateReport | None:
    """What the new version of `start` does with state; None where its query keeps none."""
    new = facts.new
    starts = source_starts(start.manifest, start.starting)
    going_on = sorted(name for name, how in starts.items() if how == GOES_ON)
    from_time = sorted(name for name, how in starts.items() if how == FROM_TIME)
    accepted = policy == PARTIAL
    if new.unknown is not None:
        if not going_on:
            return None  # every source reads again: whatever state it keeps is rebuilt
        return StateReport(
            UNKNOWN,
            f"whether its new query keeps state cannot be told ({new.unknown}), and "
            f"{_names(going_on)} {_go_on(going_on)} on from where the previous version stopped",
            (),
            policy,
            policy_from,
            refused=not accepted,
        )
    if not new.operators:
        return None
    found = verdicts(facts.old, new)
    if not going_on:
        if from_time:
            summary = (
                f"state rebuilt from the declared start of {_names(from_time)}: a window open "
                "at that time holds only what came after it, and windows the previous version "
                "wrote since then are written again under the new version"
            )
        else:
            summary = "state rebuilt: every source reads again what the state was built from"
        return StateReport(REBUILT, summary, found, policy, policy_from)
    partial = (
        f"{_names(going_on)} {_go_on(going_on)} on from where the previous version stopped, so "
        "a new version with empty state would write every window open at the change with only "
        "the records after it"
    )
    if accepted:
        return StateReport(PARTIAL, f"{partial}: accepted ({policy_from} says on-state-change: "
                           "partial)", found, policy, policy_from)  # fmt: skip
    return StateReport(PARTIAL, partial, found, policy, policy_from, refused=True)


def _names(names: list[str]) -> str:
    return ("source " if len(names) == 1 else "sources ") + ", ".join(names)


def _go_on(names: list[str]) -> str:
    return "goes" if len(names) == 1 else "go"


def check(decision: Decision, facts: JobFacts, policy: str | None = None) -> Decision:
    """The decision with its state report, where it starts a new version of a stored job's
    stateful query; one that would write windows partial unasked becomes `refused`, without
    steps: nothing is stopped or started. `policy`: the deploy's `--on-state-change`, which
    wins over the job's."""
    stored, state = facts.stored, facts.state
    if stored is None or state is None or "checkpoint-root" not in stored.job:
        return decision  # a new job, or a job's first version on Spark: no state before it
    start = next((s for s in decision.steps if isinstance(s, StartRun) and s.clean), None)
    if start is None or start.manifest.meta.query_version <= stored.meta.query_version:
        return decision
    spec = start.manifest.job
    if policy is not None:
        chosen, chosen_from = policy, "the deploy"
    elif spec.get("on-state-change"):
        chosen, chosen_from = str(spec["on-state-change"]), "the job"
    else:
        chosen, chosen_from = REFUSE, "default"
    report = judge(state, start, chosen, chosen_from)
    if report is None:
        return decision
    if not report.refused:
        return replace(decision, state=report)
    ways = (
        "declare where its sources start again so that the state is rebuilt (kafka-start: "
        "earliest, or a time), or accept partial windows with `on-state-change: partial`"
    )
    return replace(
        decision,
        action=Action.REFUSED,
        version=stored.meta.query_version,
        reason=f"{decision.reason}; but {report.summary}; refused, nothing is stopped or "
        f"started; {ways}",
        steps=(),
        rollback=(),
        state=report,
    )
