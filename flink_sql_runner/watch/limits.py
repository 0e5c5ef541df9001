"""What `watch` wants of a job, and what it must never do about one.

`watch` keeps what deploys wrote; it never decides a change. It wants what the store records, or,
where an interrupted deploy's start or stop took effect (its intent settles so), what that deploy
wrote. It never starts a new version, never records what no deploy wrote, leaves prunes to
deploys, and never restarts a job into a sink another recorded job now writes (a handover a
deploy did not finish): such a job is `cannot-act`, with the reason, until the next deploy.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from flink_sql_runner.decide.decisions import Decision
from flink_sql_runner.decide.steps import Archive, Record, StartRun, StopRun
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.intents import Kind
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.sinks import SinkIndex, target_sink
from flink_sql_runner.watch.records import manifest_digest


def job_of(manifest: StoredManifest, where: str) -> Job:
    """A manifest a deploy wrote, as the job `watch` wants."""
    return Job(
        spec=manifest.job,
        tables=manifest.tables,
        source_tables=tuple(source_tables(manifest)),
        file=where,
    )


def wanted(facts: JobFacts, where: str) -> JobFacts:
    """`facts` with the job `watch` wants: the intent's manifest where an interrupted deploy's
    start or stop took effect (the next deploy would record it too), else the stored one."""
    settled = facts.intent.settled if facts.intent is not None else None
    if settled is None or not settled.completes:
        return facts
    if settled.intent.kind not in (Kind.START, Kind.STOP):
        return facts
    return replace(facts, desired=job_of(settled.intent.manifest, where))


def refusal_of(
    decision: Decision, facts: JobFacts, stored: dict[str, StoredManifest]
) -> str | None:
    """Why `watch` must not carry `decision` out; None when it may."""
    intent = facts.intent.intent if facts.intent is not None else None
    if intent is not None and intent.kind is Kind.PRUNE and decision.steps:
        return "an interrupted prune is left to the next deploy"
    if (
        intent is not None
        and intent.kind is Kind.STOP
        and any(isinstance(s, StopRun) for s in decision.steps)
    ):
        return "an interrupted stop is left to the next deploy or stop"
    wrote = {manifest_digest(m) for m in (facts.stored, intent.manifest if intent else None) if m}
    for step in decision.steps:
        if isinstance(step, StartRun) and step.clean:
            version = step.manifest.meta.query_version
            return f"it would start v{version} clean: a new version is left to deploy"
        if isinstance(step, Record) and manifest_digest(step.manifest) not in wrote:
            return "it would record a manifest no deploy wrote: left to the next deploy"
        if isinstance(step, Archive):
            return "an interrupted prune is left to the next deploy"
    for step in decision.steps:
        if not isinstance(step, StartRun):
            continue
        sink = target_sink(facts.name, step.manifest.job, step.manifest.tables)
        if sink is None:
            continue
        writers = stored.sinks if isinstance(stored, Recorded) else Recorded(stored).sinks
        for other in sorted(name for _, name in writers.overlapping(sink)):
            if other != facts.name:
                return (
                    f"its sink ({sink}) is recorded as written by {other}: not restarted into "
                    "it (the next deploy settles the handover)"
                )
    return None


class Recorded(dict[str, StoredManifest]):
    """The manifests the store records, by name, with the sinks they write indexed the first
    time they are asked for (`refusal_of` for each job of a look, without a look at every
    manifest each time). Built once and not changed."""

    @cached_property
    def sinks(self) -> SinkIndex[str]:
        """The sink of each job that is not to be left stopped, with its name."""
        return SinkIndex(
            (sink, name)
            for name, manifest in self.items()
            if manifest.job.get("desired-state") != "stopped"
            and (sink := target_sink(name, manifest.job, manifest.tables)) is not None
        )
