"""Whether two manifests are the same, field for field: the one comparison the diff
(decide/changes.py), gather and the plan make of a job in git and the one stored."""

from __future__ import annotations

from typing import Any

from flink_sql_runner.model.facts import JobFacts

#: Values compared where they stand, without a call of `same` each.
_LEAVES = (str, int, float, bool, type(None))


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down: `1`, `1.0` and `True` differ (Spark would
    get other text), the order of a mapping's keys does not. (Loops, and leaves compared in
    place: a plan walks every stored manifest that is as git has it, twice.)"""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return False
        for key, value in a.items():
            other = b[key]
            if type(value) in _LEAVES:
                if type(other) is not type(value) or not value == other:
                    return False
            elif not same(value, other):
                return False
        return True
    if isinstance(a, list):
        if len(a) != len(b):
            return False
        for value, other in zip(a, b, strict=True):
            if type(value) in _LEAVES:
                if type(other) is not type(value) or not value == other:
                    return False
            elif not same(value, other):
                return False
        return True
    return bool(a == b)


def unchanged(facts: JobFacts) -> bool:
    """Whether the job's manifest in git is the stored one, field for field (`same`), as
    stored, not resolved (`Job.resolved`): the job's paths were resolved at load, so one stored
    the same holds no relative path. Compared once per job: gather compares the jobs whose
    checkpoint it may leave unread (decide/plan.py::checkpoint_unused) and keeps what it found
    (`JobFacts.found_same`), and most jobs of a plan are such jobs."""
    desired, stored = facts.desired, facts.stored
    if desired is None or stored is None:
        return False
    found = facts.found_same
    if found is not None and found[0] is desired and found[1] is stored:
        return True
    return same(stored.job, desired.spec) and same(stored.tables, desired.tables)
