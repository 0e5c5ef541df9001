"""What a plan means along the lineage: who starts first, who follows, who reads rows again.

Three passes over the decisions of `plan.build_plan`, each plain data in, plain data out:

- `follow_producers`: a consumer with `reprocessing: consistent` reads a table whose options
  carry `{query_version}` in its producer's version (the folder that version writes). When the
  producer starts clean as a new version, the consumer's source changed: it is decided again and
  starts clean too, after the producer.
- `order_by_lineage`: producers start first, consumers stop first (`after`, `stop_after`);
  jobs in a cycle are left in name order, and the cycle is said in their reasons.
- `downstream_impact`: a job that starts clean as a new version writes its results again; each
  decision names every job downstream of it and what will happen to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.decisions import Decision, Impact
from flink_sql_runner.decide.steps import StartRun, StopRun
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.read.template import resolve_placeholders

CONSISTENT = "consistent"
INDEPENDENT = "independent"  # the default
VERSION = "{query_version}"

Decide = Callable[[JobFacts], Decision]


def policy(facts: JobFacts) -> str:
    desired = facts.desired
    return str(desired.spec.get("reprocessing", INDEPENDENT)) if desired else INDEPENDENT


def versioned(definition: dict[str, Any]) -> bool:
    """Whether a table's options carry its writer's version (`{query_version}`)."""
    options = definition.get("options")
    return isinstance(options, dict) and any(VERSION in str(v) for v in options.values())


def starts(decision: Decision) -> bool:
    return any(isinstance(s, StartRun) for s in decision.steps)


def starts_clean(decision: Decision) -> bool:
    return any(isinstance(s, StartRun) and s.clean for s in decision.steps)


def stops(decision: Decision) -> bool:
    return any(isinstance(s, StopRun) for s in decision.steps)


def _producers(lineage: Lineage, consumer: str) -> dict[str, str]:
    """The table names `consumer` reads that another job writes, with that job."""
    return {
        link.read_as: link.producer
        for link in lineage.links_into(consumer)
        if link.producer != consumer
    }


def _written(lineage: Lineage, producer: str) -> str:
    job = lineage.jobs.get(producer)
    return job.writes if job is not None else "its table"


def follow_producers(
    decisions: dict[str, Decision],
    facts: dict[str, JobFacts],
    lineage: Lineage,
    decide: Decide,
) -> dict[str, Decision]:
    """Consumers with `reprocessing: consistent` decided again, producers first, on their
    versioned sources resolved to the version their producer will run."""
    decisions = dict(decisions)
    for name in lineage.order():
        job = facts.get(name)
        if job is None or job.desired is None or policy(job) != CONSISTENT:
            continue
        tables = dict(job.desired.tables)
        pinned = []
        for table, producer in sorted(_producers(lineage, name).items()):
            definition = tables.get(table)
            version = decisions[producer].version if producer in decisions else None
            if definition is None or not versioned(definition) or version is None:
                continue
            tables[table] = resolve_placeholders(definition, {"query_version": str(version)})
            pinned.append(f"{table} as {producer}'s v{version}")
        if not pinned:
            continue
        decision = decide(replace(job, desired=replace(job.desired, tables=tables)))
        note = f"reprocessing: consistent, reads {', '.join(pinned)}"
        decisions[name] = replace(decision, reason=f"{decision.reason} ({note})")
    return decisions


def order_by_lineage(decisions: dict[str, Decision], lineage: Lineage) -> dict[str, Decision]:
    """A consumer's starts after its producer's; a producer's stops after its consumer's."""
    # Copied for the jobs that have orders (`reaches` walks them) or are given one here: most
    # jobs of a plan have none, and are returned as they are.
    after: dict[str, list[str]] = {n: list(d.after) for n, d in decisions.items() if d.after}
    why: dict[str, dict[str, str]] = {}  # the jobs given an order to start after
    stop_after: dict[str, list[str]] = {}  # the jobs given an order to stop after
    # Without an order given before, every order added here follows a link between jobs not in
    # one cycle, so none can lead back: `reaches` would only walk the lineage to say so.
    given = bool(after)
    for link in lineage.links:
        producer, consumer = link.producer, link.consumer
        if producer not in decisions or consumer not in decisions or producer == consumer:
            continue
        if lineage.feed_each_other(producer, consumer):
            continue  # one cycle: no order among its jobs
        if starts(decisions[producer]) and starts(decisions[consumer]):
            if producer not in after.get(consumer, ()) and not (
                given and reaches(producer, consumer, after)
            ):
                after.setdefault(consumer, []).append(producer)
                reasons = why.setdefault(consumer, dict(decisions[consumer].why_after))
                reasons.setdefault(producer, f"writes {link.table}, which it reads")
        if stops(decisions[producer]) and stops(decisions[consumer]):
            if consumer not in stop_after.get(producer, decisions[producer].stop_after):
                stop_after.setdefault(producer, list(decisions[producer].stop_after))
                stop_after[producer].append(consumer)
    ordered = {}
    for name, decision in decisions.items():
        cycle = lineage.cycle_of(name) if decision.steps else None
        if cycle is None and name not in why and name not in stop_after:
            ordered[name] = decision  # most jobs of a plan: nothing to order
            continue
        reason = decision.reason
        if cycle is not None:
            loop = " -> ".join((*cycle, cycle[0]))
            reason += f"; in a cycle of jobs ({loop}): ordered by name, not by lineage"
        ordered[name] = replace(
            decision,
            reason=reason,
            after=tuple(after.get(name, ())),
            why_after=why.get(name, decision.why_after),
            stop_after=tuple(stop_after.get(name, decision.stop_after)),
        )
    return ordered


def reaches(start: str, goal: str, edges: dict[str, list[str]]) -> bool:
    """Whether `goal` is reachable from `start` along `edges` (an edge a->b: a after b)."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return False


def downstream_impact(
    decisions: dict[str, Decision], facts: dict[str, JobFacts], lineage: Lineage
) -> dict[str, Decision]:
    """Each decision that starts an existing job clean as a new version, with what happens to
    every job downstream of it."""
    result = dict(decisions)
    for name, decision in decisions.items():
        job = facts.get(name)
        if job is None or job.stored is None or not starts_clean(decision):
            continue
        impacts = _impacts(name, decision, decisions, facts, lineage)
        if impacts:
            result[name] = replace(decision, downstream=tuple(impacts))
    return result


def _impacts(
    source: str,
    decision: Decision,
    decisions: dict[str, Decision],
    facts: dict[str, JobFacts],
    lineage: Lineage,
) -> list[Impact]:
    #: Jobs whose output holds results again: the job, and how (for the words).
    again: dict[str, str] = {source: f"v{decision.version} writes its results again"}
    moved: set[str] = {source}  # jobs that start clean as a new version in this deploy
    impacts = []
    for name in lineage.downstream(source):
        feeding = {t: p for t, p in _producers(lineage, name).items() if p in again}
        if not feeding:
            continue
        job, own = facts.get(name), decisions.get(name)
        consistent = job is not None and policy(job) == CONSISTENT
        definitions = job.desired.tables if job and job.desired else {}
        table, producer = sorted(feeding.items())[0]
        through = "" if producer == source else f", through {producer}"
        if consistent and own is not None and starts_clean(own) and producer in moved:
            moved.add(name)
            again[name] = "follows"
            impacts.append(
                Impact(
                    name,
                    "follows",
                    f"follows to a new version: starts clean as v{own.version} after "
                    f"{producer} is healthy and reads {table} of {producer}'s new version from "
                    "the start, once",
                )
            )
            continue
        if versioned(definitions.get(table, {})) and producer in moved:
            how = (
                f"reprocessing: {CONSISTENT} is set, but it does not start clean in this deploy"
                if consistent
                else f"set reprocessing: {CONSISTENT} on it to follow"
            )
            mine = f" (v{own.version})" if own is not None and own.version is not None else ""
            impacts.append(
                Impact(
                    name,
                    "stays",
                    f"does not follow: {VERSION} in {table}'s path is its own version{mine}, "
                    f"so it does not read the folder {producer}'s new version writes ({how})",
                )
            )
            continue
        again[name] = "again"
        hint = (
            f"{table}'s options do not carry {VERSION}, so reprocessing: {CONSISTENT} cannot "
            "move it"
            if consistent
            else f"reprocessing: {CONSISTENT} with {VERSION} in {table}'s path avoids it"
        )
        stored = facts[source].stored
        old = f"v{stored.meta.query_version}" if stored else "the old version"
        impacts.append(
            Impact(
                name,
                "reads-again",
                f"reads {old}'s rows again{through}: {source} v{decision.version} writes "
                f"{_written(lineage, source)} from the start, and its checkpoint takes them as "
                f"new ({hint})",
            )
        )
    return impacts
