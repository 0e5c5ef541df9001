"""A saved plan (`plan --out FILE`): the plan's decisions as `plan --output json` shows them
(secrets masked), with what its Markdown shows beside them (the lineage, the previews, the name
it was saved as: render/plan_doc.py shows it as the pull request did), what each was decided
from (act/plan_inputs.py), the release of the deployer, the target it was made for and the Spark
it was judged for, the job paths and catalog it read, when it was made, and a digest of all of
it. `deploy --plan FILE` reads it back here: a file that is not one, is damaged or was edited
(its digest), is not the one approved (`--expect-digest`) or not signed with the plan key, was
made by another release, is older than its limit or dated in the future is refused before
anything is read from the world; act/stale.py then says whether the world is still the one it
was made in.

The file is JSON, one document; its `digest` is the SHA-256 of the document without `digest` and
`signature`, written canonically (keys sorted, no spaces): the saved plan's identity, shown in the
Markdown plan a reviewer approves. Anyone holding the file can recompute it, so a digest alone
proves nothing: what binds a file to its review is the digest the reviewer saw, given to the
deploy (`--expect-digest`), or the `signature`, an HMAC-SHA256 of the digest under the plan key
only CI holds (`FLINK_SQL_RUNNER_PLAN_KEY`), which the deploy checks with the same key."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

from flink_sql_runner.act.plan_inputs import (
    Digests,
    canonical,
    job_entry,
    store_entry,
    template_entry,
    where,
)
from flink_sql_runner.decide.decisions import Action, Decision, Plan
from flink_sql_runner.errors import EXIT_INVALID, FsrError
from flink_sql_runner.host.atomic import replace_file
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import plan_lineage
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.schemas import shape_validator
from flink_sql_runner.read.secrets import PLAN_KEY_VARIABLE

FORMAT = "flink-sql-runner saved plan"
SCHEMA_VERSION = 2  # 2: bound to its review, where jobs run, its paths (issue 54)
#: How old a saved plan may be by default (`--max-plan-age`): a week of review.
DEFAULT_MAX_AGE = 7 * 24 * 3600.0
#: How far in the future a plan's time may be (clocks of two CI runners differ a little); a
#: plan dated later was not made by a clock to trust, and its age would say nothing.
CLOCK_SKEW = 300.0
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: A signature as `sealed` writes it.
SIGNATURE = re.compile(r"hmac-sha256:[0-9a-f]{64}")
#: The plan key: a secret only CI holds, which signs a saved plan and keys its digests. Read
#: from the environment only (a command line shows in `ps`); never printed.
KEY_VARIABLE = PLAN_KEY_VARIABLE
#: The fewest characters a plan key may have: one a word list cannot find.
KEY_MIN = 16
#: The largest file read as a saved plan: a plan of 10,000 jobs is about 40 MiB.
MAX_BYTES = 256 << 20


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
    target: dict[str, str | None],
    handover: str,
    kafka_start: str | None,
    now: float,
    on_state_change: str | None = None,
    store_now_ms: int | None = None,
    paths: list[Path] | None = None,
    table_paths: list[Path] | None = None,
    template_file: Path | None = None,
    prune: bool = False,
    key: bytes | None = None,
    saved_as: str | None = None,
) -> dict[str, Any]:
    """The saved plan of `plan` (`shown`: its document as `--output json` has it, secrets
    masked: its decisions, and the lineage and previews its Markdown shows), sealed with its
    digest and, with the plan `key`, signed; `saved_as`: the name of its file, as the Markdown
    names it. What was decided from is
    recorded for the jobs it acts on; what the store held, for those and the jobs each was
    decided against (`against`); `target`: every setting that says where jobs run;
    `store_now_ms`, the store's clock its "now minus" starts were made a time of (None: none)."""
    salt = secrets.token_hex(16)
    digests = Digests(salt, key)
    acting = [d for d in plan.decisions if d.steps]
    names = {d.name for d in acting}
    lineage = plan_lineage(facts) if acting else None
    against: dict[str, list[str]] = {}
    for decision in acting:
        them = related(decision)
        if lineage is not None:
            them |= {link.producer for link in lineage.links_into(decision.name)}
            them |= {link.consumer for link in lineage.links_from(decision.name)}
        against[decision.name] = sorted(them - {decision.name})
    checked = names.union(*against.values())
    desired = {job.name: job for job in jobs}
    body = {
        "format": FORMAT,
        "schema-version": SCHEMA_VERSION,
        "deployer": deployer,
        "created": utc_text(now),
        "spark": spark,
        "store": store,
        "target": target,
        "paths": [where(p) for p in paths or ()],
        "table-paths": [where(p) for p in table_paths or ()],
        "template-file": where(template_file) if template_file is not None else None,
        "prune": prune,
        "handover": handover,
        "kafka-start": kafka_start,
        "on-state-change": on_state_change,
        "store-now-ms": store_now_ms,
        "salt": salt,
        "keyed": key is not None,
        "template": template_entry(template, digests) if names & set(desired) else None,
        "jobs": shown["jobs"],
        "saved-as": saved_as,
        "lineage": shown.get("lineage"),
        **{k: shown[k] for k in ("previews", "preview-rows") if k in shown},
        "inputs": {
            n: job_entry(desired[n], catalog, digests) for n in sorted(names & set(desired))
        },
        "against": against,
        "store-read": {f.name: store_entry(f, digests) for f in facts if f.name in checked},
    }
    return sealed(body, key)


def body_digest(body: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


def signature(digest: str, key: bytes) -> str:
    return "hmac-sha256:" + hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def sealed(body: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    """`body` with its digest, and with `key` its signature."""
    digest = body_digest(body)
    doc = {**body, "digest": digest}
    if key is not None:
        doc["signature"] = signature(digest, key)
    return doc


def plan_key(environ: dict[str, str] | None = None) -> bytes | None:
    """The plan key from the environment (None: not set); BadSavedPlan when it is too short to
    be one. The key itself is never shown."""
    text = (os.environ if environ is None else environ).get(KEY_VARIABLE, "")
    if not text:
        return None
    if len(text) < KEY_MIN:
        raise BadSavedPlan(
            f"{KEY_VARIABLE}: {len(text)} characters, fewer than {KEY_MIN}: a plan key must be "
            "one a word list cannot find (e.g. `openssl rand -hex 32`)"
        )
    return text.encode("utf-8")


def write_saved_plan(path: Path, doc: dict[str, Any]) -> None:
    try:
        # In the order the plan's document has (the digest's canonical form is sorted): the
        # Markdown it shows again has a preview's columns in the query's order.
        replace_file(path, json.dumps(doc, indent=2) + "\n")
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

    #: The plan key it was checked with (None: none), which keys its digests.
    key: bytes | None = None
    #: How it is bound to its review: "signed", "expected digest", or "" (trusted as it is).
    bound: str = ""

    @property
    def digests(self) -> Digests:
        return Digests(str(self.doc["salt"]), self.key if self.doc.get("keyed") else None)

    @property
    def paths(self) -> list[str]:
        return [str(p) for p in self.doc["paths"]]

    @property
    def table_paths(self) -> list[str]:
        return [str(p) for p in self.doc["table-paths"]]

    @property
    def template_file(self) -> str | None:
        """The template it was made with (`--template-file`; None: the packaged one)."""
        found = self.doc["template-file"]
        return None if found is None else str(found)

    @property
    def decisions(self) -> dict[str, dict[str, Any]]:
        return {str(d["name"]): d for d in self.doc["jobs"]}

    @property
    def acting(self) -> list[str]:
        """The jobs it does something with, in its order."""
        return [str(d["name"]) for d in self.doc["jobs"] if d.get("steps")]

    def one_job(self, name: str) -> bool:
        """Whether `deploy-job --plan FILE NAME` has something to do (False: the plan leaves
        NAME alone); BadSavedPlan when the plan has no NAME, or when NAME's steps are ordered
        with another job's the plan acts on (one writer per sink, producers before consumers):
        carried out alone, one writer could start while the other still writes."""
        decision = self.decisions.get(name)
        if decision is None:
            raise BadSavedPlan(f"{self.path}: jobs: no job {name} in the saved plan")
        if not decision.get("steps"):
            return False
        linked = {other for other in _ordered(decision)}
        linked |= {other for other, d in self.decisions.items() if name in _ordered(d)}
        linked = sorted(n for n in linked - {name} if self.decisions.get(n, {}).get("steps"))
        if linked:
            raise BadSavedPlan(
                f"{self.path}: {name}: its steps are ordered with those of {', '.join(linked)} "
                "(one writer per sink, producers before consumers): carry them out together "
                "with deploy --plan"
            )
        return True


def _ordered(decision: dict[str, Any]) -> list[str]:
    """The jobs a saved decision's steps come after or before (its `after`, `after-stops`,
    `stop-after`)."""
    return [str(n) for key in ("after", "after-stops", "stop-after") for n in decision.get(key, [])]


def read_saved_plan(
    path: Path,
    *,
    deployer: str,
    now: float,
    max_age: float,
    key: bytes | None = None,
    expect_digest: str | None = None,
) -> SavedPlan:
    """The saved plan at `path`, checked: BadSavedPlan (exit 2) naming the file and what is
    wrong when it cannot be carried out whatever the world is. `expect_digest`: the digest the
    review approved; `key`: the plan key, which must have signed it."""
    where = str(path)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise BadSavedPlan(f"{where}: cannot read the saved plan: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise BadSavedPlan(f"{where}: not a saved plan (larger than {MAX_BYTES >> 20} MiB)")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise BadSavedPlan(f"{where}: not a saved plan (not JSON: {exc})") from None
    except RecursionError:
        raise BadSavedPlan(f"{where}: not a saved plan (nested too deep)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadSavedPlan(f"{where}: format: not a saved plan of flink-sql-runner (plan --out)")
    if doc.get("schema-version") != SCHEMA_VERSION:
        raise BadSavedPlan(
            f"{where}: schema-version: {doc.get('schema-version')!r} is not supported (this "
            f"flink-sql-runner reads {SCHEMA_VERSION}); plan again"
        )
    body = {k: v for k, v in doc.items() if k not in ("digest", "signature")}
    if doc.get("digest") != body_digest(body):
        raise BadSavedPlan(
            f"{where}: digest: does not match the plan's content: the file is damaged or was "
            "edited; plan again (a saved plan is carried out as it was reviewed, or not at all)"
        )
    bound = _bound(where, doc, key, expect_digest)
    problems = _shape_problems(doc)
    if problems:  # sealed, yet not made by a plan: written by hand and sealed again
        raise BadSavedPlan(f"{where}: " + "; ".join(problems))
    if doc["deployer"] != deployer:
        raise BadSavedPlan(
            f"{where}: deployer: made by flink-sql-runner {doc['deployer']}, this is {deployer}: "
            "another release may decide otherwise; plan again with this one"
        )
    _check_age(where, str(doc["created"]), now, max_age)
    return SavedPlan(where, doc, key, bound)


def _bound(where: str, doc: dict[str, Any], key: bytes | None, expected: str | None) -> str:
    """How the file is bound to its review, checked: BadSavedPlan when it is not the approved
    one, or not signed with the key given, or signed with a key not given."""
    said = []
    if expected is not None:
        if expected.strip() != doc["digest"]:
            raise BadSavedPlan(
                f"{where}: digest: {doc['digest']} is not the approved one (--expect-digest "
                f"{expected.strip()}): this is not the plan that was reviewed"
            )
        said.append("expected digest")
    found = doc.get("signature")
    if key is not None:
        if found is None or not doc.get("keyed"):
            raise BadSavedPlan(
                f"{where}: signature: none: the plan was not made with the plan key "
                f"({KEY_VARIABLE}); plan again where the key is set"
            )
        if not isinstance(found, str) or not SIGNATURE.fullmatch(found):
            raise BadSavedPlan(f"{where}: signature: not one flink-sql-runner writes")
        if not hmac.compare_digest(found, signature(str(doc["digest"]), key)):
            raise BadSavedPlan(
                f"{where}: signature: not made with this plan key ({KEY_VARIABLE}): the file "
                "was sealed again by someone without the key, or the key differs"
            )
        said.append("signed")
    elif doc.get("keyed"):
        raise BadSavedPlan(
            f"{where}: signature: the plan was signed with a plan key and this deploy has none "
            f"({KEY_VARIABLE}): it can be neither checked nor compared with the world"
        )
    return " and ".join(said)


def _shape_problems(doc: dict[str, Any]) -> list[str]:
    """What a sealed document lacks of a saved plan's shape: its first problem, then that every
    job it acts on has what it was decided from recorded: its inputs, or for a stored job with
    no file (removed from git, pruned) what the store held of it."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(doc))
    if error is not None:
        field = ".".join(str(p) for p in error.absolute_path) or "(the document)"
        return [f"{field}: {error.message}"]
    problems = []
    for decision in doc["jobs"]:
        name = decision["name"]
        if not decision["steps"] or name in doc["inputs"]:
            continue
        stored = doc["store-read"].get(name)
        never_stored = stored is None or (
            stored["version"] is None and stored["intent-sha256"] is None
        )
        if never_stored:  # a job the store has nothing of is deployed from a file
            problems.append(
                f"inputs.{name}: missing: the plan acts on {name} ({decision['action']}) "
                "without recording what it was decided from"
            )
    for name in doc["inputs"]:
        if name not in doc["against"]:
            problems.append(f"against.{name}: missing")
    return problems


_TEXT = {"type": "string"}
_TEXT_OR_NONE = {"type": ["string", "null"]}
_DIGEST_OR_NONE = {"type": ["string", "null"]}
SHAPE: dict[str, Any] = {
    "type": "object",
    "required": [
        "deployer", "created", "spark", "store", "target", "paths", "table-paths",
        "template-file", "prune",
        "handover", "kafka-start", "on-state-change", "store-now-ms", "salt", "keyed",
        "template", "jobs", "inputs", "against", "store-read",
    ],
    "properties": {
        "deployer": _TEXT,
        "created": _TEXT,
        "spark": _TEXT_OR_NONE,
        "store": _TEXT,
        "target": {
            "type": "object",
            "required": ["kind"],
            "properties": {"kind": _TEXT},
            "additionalProperties": _TEXT_OR_NONE,
        },
        "paths": {"type": "array", "items": _TEXT},
        "table-paths": {"type": "array", "items": _TEXT},
        "template-file": _TEXT_OR_NONE,
        "prune": {"type": "boolean"},
        "handover": _TEXT,
        "kafka-start": _TEXT_OR_NONE,
        "on-state-change": _TEXT_OR_NONE,
        "store-now-ms": {"type": ["integer", "null"]},
        "salt": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
        "keyed": {"type": "boolean"},
        "template": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["file", "sha256"],
                    "properties": {"file": _TEXT, "sha256": _DIGEST_OR_NONE},
                },
            ]
        },
        "jobs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "action", "steps"],
                "properties": {
                    "name": _TEXT,
                    "action": {"enum": [a.value for a in Action]},
                    "query-version": {"type": ["integer", "null"]},
                    "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
                    "rollback": {"type": "array", "items": {"$ref": "#/$defs/step"}},
                    "after": {"type": "array", "items": _TEXT},
                    "after-stops": {"type": "array", "items": _TEXT},
                    "stop-after": {"type": "array", "items": _TEXT},
                },
            },
        },
        "inputs": {"type": "object", "additionalProperties": {"$ref": "#/$defs/inputs"}},
        "against": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": _TEXT},
        },
        "store-read": {"type": "object", "additionalProperties": {"$ref": "#/$defs/store"}},
        # What the Markdown shows beside the jobs (render/plan_doc.py checks them whole).
        "saved-as": _TEXT_OR_NONE,
        "lineage": {"type": ["object", "null"]},
        "previews": {"type": "array", "items": {"type": "object"}},
        "preview-rows": {"type": "boolean"},
    },
    "$defs": {
        "step": {
            "type": "object",
            "required": ["step"],
            "properties": {"step": _TEXT, "text": _TEXT},
        },
        "inputs": {
            "type": "object",
            "required": ["file", "file-sha256", "table-files", "env", "base", "manifest-sha256"],
            "properties": {
                "file": _TEXT,
                "file-sha256": _DIGEST_OR_NONE,
                "table-files": {"type": "object", "additionalProperties": _DIGEST_OR_NONE},
                "env": {"type": "object", "additionalProperties": _DIGEST_OR_NONE},
                "base": _TEXT_OR_NONE,
                "manifest-sha256": _DIGEST_OR_NONE,
            },
        },
        "store": {
            "type": "object",
            "required": ["version", "manifest-sha256", "intent-sha256"],
            "properties": {
                "version": {"type": ["integer", "null"]},
                "manifest-sha256": _DIGEST_OR_NONE,
                "intent-sha256": _DIGEST_OR_NONE,
            },
        },
    },
}  # fmt: skip


@cache
def _validator() -> Any:
    """SHAPE's checker, made when a saved plan is first read (jsonschema is imported then)."""
    return shape_validator(SHAPE)


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
