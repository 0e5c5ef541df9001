"""The plan: every job's decision (tree.py), ordered along the lineage (pipeline.py), with one
writer per sink. Nothing here acts.

Each decision names its action (a label for people and JSON), says why, and carries the steps
the executor performs, in order, plus the steps that roll back a failed start. `plan` prints
exactly these steps; `deploy` carries them out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from flink_sql_runner.decide import pipeline
from flink_sql_runner.decide.decisions import Action, Decision, Plan
from flink_sql_runner.decide.steps import StartRun, StopRun
from flink_sql_runner.decide.tree import decide, describe_runs, error
from flink_sql_runner.decide.warm import DEFAULT_HANDOVER, warm
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.intents import Kind
from flink_sql_runner.model.lineage import Lineage, plan_lineage
from flink_sql_runner.model.same import unchanged
from flink_sql_runner.model.stored import StoredManifest, Token
from flink_sql_runner.read.kafka_start import KafkaStart
from flink_sql_runner.read.sinks import SinkId, SinkIndex, target_sink


def checkpoint_unused(facts: JobFacts) -> bool:
    """Whether the plan decides `facts`' job without anything of its checkpoint, so that
    gather need not read it (asked before it is read): a job with no intent record and one run
    up, whose manifest in git is the stored one, field for field (`same`: no change, so nothing
    is compared with what the checkpoint pins), is left alone or stopped, and starts nothing.
    Not a consumer with `reprocessing: consistent`: a producer's new version may change the
    tables it is decided on again with (pipeline.follow_producers). True only for a job stored
    as git has it: gather keeps that (`JobFacts.found_same`), and the plan does not compare the
    two again."""
    desired, stored = facts.desired, facts.stored
    if desired is None or stored is None or facts.intent is not None or facts.problem:
        return False
    if len(facts.alive) != 1 or facts.unknown or pipeline.policy(facts) == pipeline.CONSISTENT:
        return False
    # One stored with relative paths (by an older deploy) may mean the same, and has its
    # checkpoint read.
    return unchanged(facts)


def build_plan(
    facts: list[JobFacts],
    prune: bool = False,
    spark: str | None = None,
    handover: str = DEFAULT_HANDOVER,
    lineage: Lineage | None = None,
    kafka_start: KafkaStart | None = None,
    now_ms: int | None = None,
    on_state_change: str | None = None,
) -> Plan:
    """The decisions for every job, sorted by name. With `prune`, jobs whose manifest left
    --path are stopped and archived instead of left alone. No job starts into a sink another
    job writes (stored or running), unless that job is stopped first in the same deploy.
    A job starting into a sink another job lets go of starts after that job (`_hand_over`).
    Along the lineage (pipeline.py): producers start first and consumers stop first, consumers
    with `reprocessing: consistent` follow a producer's new version, and a job that starts
    clean as a new version names what happens downstream of it.
    `spark`: the Spark version the target will run jobs on, when it can tell. `handover`: how
    a change of a running job is carried out when the job does not say (decide/warm.py).
    `lineage`: `plan_lineage(facts)` (model/lineage.py) when the caller has it already.
    `kafka_start`: where a new version's Kafka sources start, for every job of the deploy
    (decide/offsets.py). `now_ms`: now on the store's clock, where a start is now minus an
    interval. `on_state_change`: the deploy's, over each job's (decide/state.py)."""
    ordered = sorted(facts, key=lambda f: f.name)
    by_name = {f.name: f for f in ordered}
    if lineage is None:
        lineage = plan_lineage(ordered)
    asked = (prune, spark, kafka_start, now_ms, on_state_change)
    decisions = {f.name: decide(f, *asked) for f in ordered}
    decisions = pipeline.follow_producers(decisions, by_name, lineage, lambda f: decide(f, *asked))
    owners: SinkIndex[str] = SinkIndex(
        (sink, f.name)
        for f in ordered
        if (recorded := _recorded(f)) is not None
        and (sink := target_sink(f.name, recorded.job, recorded.tables)) is not None
    )
    handovers: list[Handover] = []
    for name, decision in decisions.items():
        for sink in _sinks_started(decision):
            decision, givers = _respect_owners(decision, sink, owners, decisions, by_name)
            decisions[name] = decision
            handovers += [Handover(name, giver, sink) for giver in givers]
    decisions = pipeline.order_by_lineage(decisions, lineage)
    decisions = _hand_over(decisions, handovers)
    decisions = pipeline.downstream_impact(decisions, by_name, lineage)
    decisions = {name: warm(d, by_name[name], handover) for name, d in decisions.items()}
    # The tree makes most decisions with their facts' token already (replacing a decision
    # costs as much as deciding a job that changed nothing).
    return Plan(tuple(_with_token(decisions[f.name], f.token) for f in ordered))


def _with_token(decision: Decision, token: Token) -> Decision:
    return decision if decision.token == token else replace(decision, token=token)


def _recorded(facts: JobFacts) -> StoredManifest | None:
    """What the store records of a job once its open intent is settled: an interrupted start
    that took effect, or whose run is up, is recorded with the intent's manifest (and writes
    its sink, not the stored one's)."""
    settled = facts.intent.settled if facts.intent is not None else None
    if settled is not None and settled.completes and settled.intent.kind is Kind.START:
        return settled.intent.manifest
    return facts.stored


def _sinks_started(decision: Decision) -> list[SinkId]:
    found = []
    for step in decision.steps:
        if isinstance(step, StartRun):
            sink = target_sink(decision.name, step.manifest.job, step.manifest.tables)
            if sink is not None and sink not in found:
                found.append(sink)
    return found


class Handover(NamedTuple):
    """`taker` will start into `sink`, which `giver` writes until it stops in this deploy."""

    taker: str
    giver: str
    sink: SinkId


def _respect_owners(
    decision: Decision,
    sink: SinkId,
    owners: SinkIndex[str],
    decisions: dict[str, Decision],
    facts: dict[str, JobFacts],
) -> tuple[Decision, list[str]]:
    """`decision` and the other jobs that write `sink` and let go of it in this deploy (it
    starts after them, `_hand_over`); an error (and none) when one keeps writing it. `owners`:
    the sink each job's recorded manifest writes, added by name."""
    if decision.action is Action.ERROR:
        return decision, []
    givers = []
    for _, other in owners.overlapping(sink):
        if other == decision.name:
            continue
        theirs = decisions[other]
        desired = facts[other].desired
        moves = desired is not None and not (
            (new := target_sink(other, desired.spec, desired.tables)) and new.overlaps(sink)
        )
        running = any(isinstance(s, StopRun) for s in theirs.steps) or not facts[other].alive
        # A job left stopped whose manifest in git moved its sink lets go of the old one: it
        # runs nowhere now, and will run into its new sink.
        idle = theirs.action is Action.NOOP and not facts[other].runs
        if theirs.action is Action.PRUNE or (moves and running and (theirs.steps or idle)):
            givers.append(other)
            continue
        state = (
            f"running {describe_runs(facts[other].alive)}" if facts[other].alive else "not running"
        )
        owner = _owner_words(facts[other])
        return error(
            facts[decision.name],
            f"would write {sink}, which job {other} ({owner}, {state}) writes: two writers of "
            f"one sink lose rows; stop and remove {other} first (deploy --prune stops and "
            "archives jobs no longer under --path)",
            decision.version,
            decision.changes,
        ), []
    return decision, givers


def _owner_words(facts: JobFacts) -> str:
    """`stored v2`; or, for a job whose first version's start took effect unrecorded (the
    owners count its intent's sink), `v1, its start not yet recorded`."""
    if facts.stored is not None:
        return f"stored v{facts.stored.meta.query_version}"
    if facts.intent is not None:
        return f"v{facts.intent.intent.manifest.meta.query_version}, its start not yet recorded"
    return "not stored"


def _hand_over(decisions: dict[str, Decision], handovers: list[Handover]) -> dict[str, Decision]:
    """Each taker's starts ordered after its giver. After the giver's whole decision (`after`)
    where it can: a giver whose new run fails starts its old run in the sink again (its
    rollback), and the taker is then held back. Where that would wait in a circle (jobs that
    swap sinks, or pass them round), after the giver's stops only (`after_stops`), and the giver
    has no rollback: once it stopped, its old sink is the taker's. The lineage's order, made
    before, stands; otherwise the first in name order starts first."""
    # Copied for the jobs that have orders (`reaches` walks them) or are given one here: most
    # jobs of a plan take no sink over, and are returned as they are.
    after = {n: list(d.after) for n, d in decisions.items() if d.after}
    after_stops: dict[str, list[str]] = {}
    why: dict[str, dict[str, str]] = {}  # the takers
    given: dict[str, list[str]] = {}  # giver: who takes which of its sinks once it stopped
    for taker, giver, sink in sorted(handovers, key=lambda h: (h.taker, h.giver), reverse=True):
        decision = decisions[taker]
        if decision.action is Action.ERROR or giver in after_stops.get(taker, decision.after_stops):
            continue
        why.setdefault(taker, dict(decision.why_after))
        why[taker].setdefault(giver, f"the writer of {sink} until now")
        if giver in after.get(taker, ()):
            continue
        if pipeline.reaches(giver, taker, after):
            after_stops.setdefault(taker, list(decision.after_stops)).append(giver)
            given.setdefault(giver, []).append(f"{taker} takes over {sink} once it has stopped")
        else:
            after.setdefault(taker, []).append(giver)
    result = {}
    for name, decision in decisions.items():
        if name in why:
            starts_after = tuple(after.get(name, ()))
            starts_after_stops = tuple(after_stops.get(name, decision.after_stops))
            if (starts_after, starts_after_stops, why[name]) != (
                decision.after, decision.after_stops, decision.why_after
            ):  # fmt: skip
                decision = replace(
                    decision,
                    after=starts_after,
                    after_stops=starts_after_stops,
                    why_after=why[name],
                )
        if name in given and decision.rollback:
            decision = replace(
                decision,
                rollback=(),
                reason=f"{decision.reason}; no rollback: if the new run is not healthy, it "
                f"stays stopped ({'; '.join(given[name])})",
            )
        result[name] = decision
    return result
