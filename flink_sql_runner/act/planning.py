"""Deciding one plan from gathered facts: the decision tree over every job, then the sink
contracts of the starts it decided checked (their facts gathered through the runner's probe) and
the plan decided again with them, then the starts that cannot begin held back.

The contracts are gathered after a first decision, not before: a check is of the manifest a
start records (its new version, its checkpoint), which only deciding makes, and only the starts
a plan holds are analysed (each analysis is a Spark session in a child process), not every job
whose files changed. Deciding is plain computing: the second time costs milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.contracts import needs_check
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.preflight import without_starts_that_cannot_begin
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.gather.schemas import Check
from flink_sql_runner.model.contracts import ContractFacts
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import Lineage, plan_lineage
from flink_sql_runner.read.kafka_start import KafkaStart
from flink_sql_runner.read.manifest import Job


def decide_plan(
    facts: list[JobFacts],
    jobs: list[Job],
    *,
    prune: bool,
    spark: str | None,
    handover: str,
    kafka_start: KafkaStart | None,
    contracts: Callable[[list[Check]], dict[str, ContractFacts]],
    missing: Callable[[dict[str, Any], dict[str, str]], str | None],
) -> Plan:
    """The plan for `facts` (of the desired `jobs` and the stored ones): decided, its starts'
    sink contracts checked (`contracts` gathers their facts) and decided again with them, its
    starts whose connectors are `missing` held back."""
    lineage = plan_lineage(facts)  # the same jobs in every plan below: built once

    def decided(facts: list[JobFacts]) -> Plan:
        return build_plan(facts, prune=prune, spark=spark, handover=handover, lineage=lineage,
                          kafka_start=kafka_start)  # fmt: skip

    plan = decided(facts)
    checks = contract_checks(plan, facts, jobs, lineage)
    found = contracts(checks) if checks else {}
    if found:
        plan = decided([replace(f, contract=found.get(f.name)) for f in facts])
    return without_starts_that_cannot_begin(plan, missing)


def contract_checks(
    plan: Plan, facts: list[JobFacts], jobs: list[Job], lineage: Lineage
) -> list[Check]:
    """The starts of `plan` whose sink's schema contract is checked (decide/contracts.py):
    each with the manifest it starts, the one stored before, and the jobs of this deploy that
    read its sink, with the schema they declare for it. `lineage`: the plan's; a link from a
    desired job to another is the same in it as in the lineage of the desired `jobs` alone
    (the stored-only jobs it adds are only ever producers or consumers of their own links,
    and links to them are left out here)."""
    by_name = {f.name: f for f in facts}
    desired = {job.name: job for job in jobs}
    checks = []
    for decision in plan.decisions:
        job = by_name.get(decision.name)
        starts = [s for s in decision.steps if isinstance(s, StartRun)]
        if job is None or not starts or not needs_check(job):
            continue
        readers = tuple(
            (link.consumer, link.read_as, desired[link.consumer].tables[link.read_as].get("schema"))
            for link in lineage.links_from(decision.name)
            if link.consumer in desired
            and link.read_as in desired[link.consumer].tables
        )  # fmt: skip
        checks.append(Check(starts[0].manifest, job.stored, readers))
    return checks
