"""A saved plan (`plan --out FILE`): the plan's decisions as `plan --output json` shows them
(secrets masked), what each was decided from (act/plan_inputs.py), the release of the deployer
and the Spark it was judged for, when it was made, and a digest of all of it. `deploy --plan
FILE` reads it back here: a file that is not one, is damaged or was edited (its digest), was made
by another release, is older than its limit or dated in the future is refused before anything is
read from the world; act/stale.py then says whether the world is still the one it was made in.

The file is JSON, one document; its `digest` is the SHA-256 of the document without it, written
canonically (keys sorted, no spaces): the saved plan's identity, shown in the Markdown plan a
reviewer approves."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flink_sql_runner.act.plan_inputs import canonical, job_entry, store_entry, template_entry
from flink_sql_runner.decide.decisions import Decision, Plan
from flink_sql_runner.errors import EXIT_INVALID, FsrError
from flink_sql_runner.host.atomic import replace_file
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import plan_lineage
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job

FORMAT = "flink-sql-runner saved plan"
SCHEMA_VERSION = 1
#: How old a saved plan may be by default (`--max-plan-age`): a week of review.
DEFAULT_MAX_AGE = 7 * 24 * 3600.0
#: How far in the future a plan's time may be (clocks of two CI runners differ a little); a
#: plan dated later was not made by a clock to trust, and its age would say nothing.
CLOCK_SKEW = 300.0
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class BadSavedPlan(FsrError):
    """A saved plan that cannot be carried out as it is: not one, damaged, edited, of another
    release, too old. Nothing was touched."""

    exit_code = EXIT_INVALID


class StalePlan(FsrError):
    """What a saved plan was decided from changed since it was made: one line per difference.
    Nothing was touched."""

    exit_code = EXIT_INVALID

    def __init__(self, path: str, lines: list[str], fresh: Plan | None = None):
        self.lines = lines
        #: The plan made now, when one was made (under the lock, from what is).
        self.fresh = fresh
        super().__init__(
            f"{path}: the saved plan is stale; nothing was touched:\n" + "\n".join(lines)
        )


def utc_text(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime(TIME_FORMAT)


def related(decision: Decision) -> set[str]:
    """The jobs a decision was decided against beside its own: whose steps come first or
    after (one writer per sink, lineage order) and the ones downstream of it."""
    return {
        *decision.after,
        *decision.after_stops,
        *decision.stop_after,
        *(i.job for i in decision.downstream),
    }


def make_saved_plan(
    plan: Plan,
    shown: dict[str, Any],
    *,
    facts: list[JobFacts],
    jobs: list[Job],
    catalog: Catalog | None,
    template: Path,
    spark: str | None,
    deployer: str,
    store: str,
    target: str,
    handover: str,
    kafka_start: str | None,
    now: float,
    on_state_change: str | None = None,
    store_now_ms: int | None = None,
) -> dict[str, Any]:
    """The saved plan of `plan` (`shown`: its decisions as `--output json` has them, secrets
    masked), sealed with its digest. What was decided from is recorded for the jobs it acts
    on; what the store held, for those and the jobs they were decided against; `store_now_ms`,
    the store's clock its "now minus" starts were made a time of (None: none)."""
    salt = secrets.token_hex(16)
    acting = [d for d in plan.decisions if d.steps]
    names = {d.name for d in acting}
    checked = set(names)
    lineage = plan_lineage(facts) if acting else None
    for decision in acting:
        checked |= related(decision)
        if lineage is not None:
            checked |= {link.producer for link in lineage.links_into(decision.name)}
            checked |= {link.consumer for link in lineage.links_from(decision.name)}
    desired = {job.name: job for job in jobs}
    body = {
        "format": FORMAT,
        "schema-version": SCHEMA_VERSION,
        "deployer": deployer,
        "created": utc_text(now),
        "spark": spark,
        "store": store,
        "target": target,
        "handover": handover,
        "kafka-start": kafka_start,
        "on-state-change": on_state_change,
        "store-now-ms": store_now_ms,
        "salt": salt,
        "template": template_entry(template, salt) if names & set(desired) else None,
        "jobs": shown["jobs"],
        "inputs": {n: job_entry(desired[n], catalog, salt) for n in sorted(names & set(desired))},
        "store-read": {f.name: store_entry(f, salt) for f in facts if f.name in checked},
    }
    return sealed(body)


def body_digest(body: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


def sealed(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its digest."""
    return {**body, "digest": body_digest(body)}


def write_saved_plan(path: Path, doc: dict[str, Any]) -> None:
    try:
        replace_file(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise FsrError(f"{path}: cannot write the saved plan: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class SavedPlan:
    """A saved plan as read and checked: its file, its document, its digest."""

    path: str
    doc: dict[str, Any]

    @property
    def digest(self) -> str:
        return str(self.doc["digest"])

    @property
    def salt(self) -> str:
        return str(self.doc["salt"])

    @property
    def decisions(self) -> dict[str, dict[str, Any]]:
        return {str(d["name"]): d for d in self.doc["jobs"]}

    @property
    def acting(self) -> list[str]:
        """The jobs it does something with, in its order."""
        return [str(d["name"]) for d in self.doc["jobs"] if d.get("steps")]


def read_saved_plan(path: Path, *, deployer: str, now: float, max_age: float) -> SavedPlan:
    """The saved plan at `path`, checked: BadSavedPlan (exit 2) naming the file and what is
    wrong when it cannot be carried out whatever the world is."""
    where = str(path)
    try:
        doc = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise BadSavedPlan(f"{where}: cannot read the saved plan: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadSavedPlan(f"{where}: not a saved plan (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadSavedPlan(f"{where}: format: not a saved plan of flink-sql-runner (plan --out)")
    if doc.get("schema-version") != SCHEMA_VERSION:
        raise BadSavedPlan(
            f"{where}: schema-version: {doc.get('schema-version')!r} is not supported (this "
            f"flink-sql-runner reads {SCHEMA_VERSION}); plan again"
        )
    body = {k: v for k, v in doc.items() if k != "digest"}
    if doc.get("digest") != body_digest(body):
        raise BadSavedPlan(
            f"{where}: digest: does not match the plan's content: the file is damaged or was "
            "edited; plan again (a saved plan is carried out as it was reviewed, or not at all)"
        )
    problems = _shape_problems(doc)
    if problems:  # sealed, yet not made by a plan: written by hand and sealed again
        raise BadSavedPlan(f"{where}: " + "; ".join(problems))
    if doc["deployer"] != deployer:
        raise BadSavedPlan(
            f"{where}: deployer: made by flink-sql-runner {doc['deployer']}, this is {deployer}: "
            "another release may decide otherwise; plan again with this one"
        )
    _check_age(where, str(doc["created"]), now, max_age)
    return SavedPlan(where, doc)


def _shape_problems(doc: dict[str, Any]) -> list[str]:
    problems = []
    for key, kind in (("deployer", str), ("created", str), ("salt", str), ("jobs", list),
                      ("inputs", dict), ("store-read", dict), ("handover", str)):  # fmt: skip
        if not isinstance(doc.get(key), kind):
            problems.append(f"{key}: missing or not a {kind.__name__}")
    jobs = doc.get("jobs")
    if isinstance(jobs, list) and not all(
        isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("steps"), list)
        for d in jobs
    ):
        problems.append("jobs: each needs a name and its steps")
    for section, keys in (("inputs", INPUT_KEYS), ("store-read", STORE_KEYS)):
        entries = doc.get(section)
        for name, entry in sorted(entries.items()) if isinstance(entries, dict) else ():
            missing = [k for k in keys if not isinstance(entry, dict) or k not in entry]
            if missing:
                problems.append(f"{section}.{name}: missing {', '.join(missing)}")
    return problems


#: What each job's entry of `inputs` and `store-read` holds (act/plan_inputs.py).
INPUT_KEYS = ("file", "file-sha256", "table-files", "env", "base", "manifest-sha256")
STORE_KEYS = ("version", "manifest-sha256", "intent-sha256")


def _check_age(where: str, created: str, now: float, max_age: float) -> None:
    try:
        made = datetime.strptime(created, TIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        raise BadSavedPlan(f"{where}: created: {created!r} is not a UTC time") from None
    if made > now + CLOCK_SKEW:
        raise BadSavedPlan(
            f"{where}: created: {created} is {made - now:.0f} s in the future (more than the "
            f"{CLOCK_SKEW:.0f} s two clocks may differ): its age cannot be told; check the "
            "clocks and plan again"
        )
    if now - made > max_age:
        raise BadSavedPlan(
            f"{where}: created: {created}, {_days(now - made)} ago, older than "
            f"--max-plan-age ({_days(max_age)}); plan again"
        )


def _days(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    return f"{seconds / 3600:.1f} h"
