"""Warm handovers: a change of a running job prepares its new run before the old one stops.

A stop-and-restart or stop-and-start-clean decision stops the old run, then starts the new one:
the job commits nothing for a whole start (a JVM, a session, the sources, the query, the first
batch), and a new run that cannot start at all is found only once the old one is down. Warm,
its steps become: prepare the new run beside the old one (it does everything but start its
query, and writes nothing), stop the old run, then give the prepared run its go. A run that
cannot be prepared is stopped and the old one was never touched.

`deploy` and `plan` apply it (per job `handover:`, else the deploy's `--handover`); `watch`
restarts runs that are down, with nothing to overlap, and keeps the cold start, as does a
consumer that starts after its producers in the same deploy, and a new version that continues
from the old one's state (decide/state.py: its checkpoint is copied once the old run stopped).
Pure.
"""

from __future__ import annotations

from dataclasses import replace

from flink_sql_runner.decide.decisions import Action, Decision
from flink_sql_runner.decide.steps import PrepareRun, StartRun, StopRun
from flink_sql_runner.model.facts import JobFacts

WARM, COLD = "warm", "cold"
HANDOVERS = (WARM, COLD)
#: What a job that says nothing gets when the deploy says nothing either.
DEFAULT_HANDOVER = WARM
_CHANGES = (Action.STOP_AND_RESTART, Action.STOP_AND_START_CLEAN)


def handover_of(facts: JobFacts, default: str) -> str:
    """The job's own `handover`, else the deploy's."""
    own = facts.desired.spec.get("handover") if facts.desired is not None else None
    return str(own or default)


def warm(decision: Decision, facts: JobFacts, default: str = DEFAULT_HANDOVER) -> Decision:
    """`decision` carried out warm when its job's handover is warm: stop -> start becomes
    prepare -> stop -> go. Any other decision is returned as it is."""
    if decision.action not in _CHANGES or handover_of(facts, default) != WARM:
        return decision
    if decision.after:
        # It starts after jobs it reads (pipeline.py), and its run stops before theirs: there
        # is nothing to overlap, and a run prepared now would look for rows not written yet.
        return decision
    steps = list(decision.steps)
    stops = [i for i, step in enumerate(steps) if isinstance(step, StopRun)]
    starts = [i for i, step in enumerate(steps) if isinstance(step, StartRun)]
    if len(stops) != 1 or len(starts) != 1 or stops[0] > starts[0]:
        return decision
    stop, start = steps[stops[0]], steps[starts[0]]
    assert isinstance(stop, StopRun) and isinstance(start, StartRun)
    if start.continues is not None:
        # It continues from the old run's state: that state is copied once the old run stopped.
        return decision
    beside = stop.run.version or stop.manifest.meta.query_version
    steps[starts[0]] = replace(start, prepared=True)
    steps.insert(stops[0], PrepareRun(start.manifest, start.clean, start.source, beside))
    return replace(decision, steps=tuple(steps))
