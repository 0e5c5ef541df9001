"""A query change never breaks its sink's readers: the schema a new run would write, judged
against what the sink holds, what the catalog declares and what the jobs reading it declare,
under the job's `on-schema-change` policy. Pure: the facts come from gather/schemas.py, gathered
before deciding for the jobs whose start could change what they write, the rules from
runner/schema_rules.py (the same rules a run checks before its first write).

- `additive` (the default): a new column deploys; a change readers of the data already there
  cannot read (a type changed, a column dropped, renamed, or moved in a positional format) is
  refused, and so is a conflict with a declared schema: nothing is stopped or started.
- `fail`: any change of the sink's schema is refused.
- `allow`: the change deploys and the plan names what it breaks, for a user who migrates the
  readers themselves.

A new location (the sink's path carries `{query_version}`) holds nothing yet: the change is
said, with where readers must move, and deploys. What cannot be known (a code job, a source
without a declared schema, a sink whose files carry no schema) is said and deploys: the run
checks its sink again before its first write.
"""

from __future__ import annotations

from dataclasses import replace

from flink_sql_runner._runner.schema_rules import (
    compare,
    describe,
    kafka_conflicts,
    reader_conflicts,
)
from flink_sql_runner.decide.decisions import Action, Decision, SchemaReport
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.model.contracts import ALLOW, FAIL, ContractFacts
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.read.columns import parse_columns
from flink_sql_runner.read.manifest import Job


def judge(facts: ContractFacts) -> SchemaReport:
    """The schema report of one start, refused where its policy says so."""
    output, holds = facts.output, facts.holds
    readers = tuple(r.job for r in facts.readers)
    base = SchemaReport(facts.sink, facts.policy, "unknown", readers=readers)
    if output.error:
        why = f"the query does not analyse on Spark {facts.spark}: {output.error}"
        return replace(base, verdict="error", notes=(why,), refused=True)
    if output.fields is None and facts.moved_from is not None:
        note = f"writes a new location; readers of {facts.moved_from} must move to it"
        return replace(base, verdict="new-location", notes=(note,))
    if output.fields is None:
        note = f"its output schema is not known here ({output.unknown}); its run checks the sink"
        return replace(base, notes=(note,))
    new = list(output.fields)
    conflicts = []
    if facts.format == "kafka":
        conflicts += kafka_conflicts(new)
    if facts.declared is not None and facts.declared.fields is not None:
        conflicts += [f"the table's declared schema: {p}" for p in
                      reader_conflicts(list(facts.declared.fields), new)]  # fmt: skip
    for reader in facts.readers:
        if reader.declared is not None and reader.declared.fields is not None:
            conflicts += [f"{reader.job} reads it as {reader.table}: {p}" for p in
                          reader_conflicts(list(reader.declared.fields), new)]  # fmt: skip
    notes: list[str] = []
    if facts.moved_from is not None:
        verdict, change = "new-location", {}
        notes.append(f"writes a new location; readers of {facts.moved_from} must move to it")
    elif holds.unknown is not None:
        verdict, change = "unknown", {}
        notes.append(f"what the sink holds is not known ({holds.unknown}); its run checks it")
    elif facts.format == "kafka":
        verdict, change = "same", {}
    else:
        change = compare([list(h) for h in holds.history], new, facts.format)
        verdict = change["verdict"]
        if verdict != "same" and holds.sources:
            notes.append(f"the sink holds {holds.sources[-1]}")
    report = SchemaReport(
        facts.sink,
        facts.policy,
        verdict,
        change,
        tuple(conflicts),
        readers,
        tuple(notes),
        output.fields,
    )
    kafka_broken = facts.format == "kafka" and bool(conflicts)
    if facts.policy == ALLOW and not kafka_broken:
        return report
    refused = verdict == "breaking" or bool(conflicts)
    if facts.policy == FAIL and verdict == "additive":
        refused = True
    return replace(report, refused=refused)


def check(decision: Decision, facts: JobFacts) -> Decision:
    """The decision with its schema report, from the contract facts gathered for the version
    its start takes; a start the report refuses becomes a `refused` decision without steps:
    nothing is stopped or started."""
    if not facts.contracts:
        return decision
    start = next((s for s in decision.steps if isinstance(s, StartRun)), None)
    contract = facts.contract_for(start.manifest.meta.query_version) if start else None
    if contract is None:
        return decision
    report = judge(contract)
    if not report.refused:
        return replace(decision, schema=report)
    version = facts.stored.meta.query_version if facts.stored else None
    why = _refusal(report, contract)
    return replace(
        decision,
        action=Action.REFUSED,
        version=version,
        reason=f"{decision.reason}; but {why}",
        steps=(),
        rollback=(),
        schema=report,
    )


def _refusal(report: SchemaReport, facts: ContractFacts) -> str:
    if report.verdict == "error":
        return f"{report.notes[0]}; refused, nothing is stopped or started"
    what = describe(report.change) if report.change.get("verdict") not in (None, "same") else ""
    broken = "; ".join([what, *report.conflicts] if what else report.conflicts)
    readers = f" (read by {', '.join(report.readers)})" if report.readers else ""
    ways = (
        "set `on-schema-change: allow` once its readers are migrated, or write the new version "
        "to a new location ({query_version} in the sink's path)"
    )
    if facts.policy == FAIL:
        return (
            f"its schema in {report.sink} would change ({broken}){readers}; refused under "
            f"on-schema-change: fail (from {facts.policy_from}), nothing is stopped or started"
        )
    return (
        f"it would break the readers of {report.sink}{readers}: {broken}; refused "
        f"(on-schema-change: {facts.policy}, from {facts.policy_from}), nothing is stopped or "
        f"started; {ways}"
    )


def declared_conflicts(jobs: list[Job], lineage: Lineage) -> list[tuple[str, str, str]]:
    """Offline, for `validate`: each job that reads another's sink under a declared schema the
    writer's own declared schema does not meet, as (file, field, message). The metadata
    columns the writer appends are not in its declaration and are not compared."""
    by_name = {job.name: job for job in jobs}
    found = []
    for link in lineage.links:
        producer, consumer = by_name.get(link.producer), by_name.get(link.consumer)
        if producer is None or consumer is None:
            continue
        written = producer.tables.get(link.table) or {}
        read = consumer.tables.get(link.read_as) or {}
        if not written.get("schema") or not read.get("schema") or written is read:
            continue
        try:
            have, want = parse_columns(written["schema"]), parse_columns(read["schema"])
        except ValueError:
            continue  # reported where the table is read
        settings = producer.spec.get("metadata-columns") or {}
        meta = str(settings.get("create-timestamp-column", "__create_timestamp"))
        want = [f for f in want if not f["name"].startswith("__query_") and f["name"] != meta]
        for problem in reader_conflicts(want, have):
            found.append(
                (
                    consumer.file,
                    f"tables.{link.read_as}.schema",
                    f"{problem} by {producer.name}, whose table {link.table} declares "
                    f"`{written['schema']}`",
                )
            )
    return found
