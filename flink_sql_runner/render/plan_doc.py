"""A plan's document shown as the pull request's Markdown shows the plan: what `plan --output
json` prints (or `deploy --dry-run --output json`) and what `plan --out FILE` saves, opened in
the page (`flink-sql-runner ui`).

The Markdown is the one `plan --output markdown` gives for the same plan, byte for byte, where
the document holds what the Markdown shows: both are rendered from the plan's jobs as the
document has them (render/markdown.py), with the lineage and the previews it carries read back
(model/lineage.py, model/preview.py). A document of another release may lack some of it.

The document is not trusted: it may be any file. Its shape is checked before anything is read
of it (`BadPlanDocument`, naming the field), and every text of it is escaped as the Markdown
escapes a manifest's. A saved plan's digest and signature are shown as written, never relied
on: nothing here checks them against a key (`deploy --plan` does); `ShownPlanDoc` says so.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from flink_sql_runner.act.saved_plan import FORMAT, SCHEMA_VERSION, body_digest
from flink_sql_runner.decide.changes import ChangeKind
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.model.lineage import Lineage, lineage_from_dict
from flink_sql_runner.model.preview import Preview
from flink_sql_runner.read.schemas import shape_problem, shape_validator
from flink_sql_runner.render.markdown import jobs_markdown
from flink_sql_runner.render.preview import previews_markdown


class BadPlanDocument(ValueError):
    """A document that is not a plan's (nor a saved plan's) as this release writes it: the
    field and what is wrong with it, in one line."""


_TEXT = {"type": "string"}
_TEXTS = {"type": "array", "items": _TEXT}
_BOOL = {"type": "boolean"}


def _record(needed: list[str], /, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": needed, "properties": properties}


_STEPS = {"type": "array", "items": _record(["step", "text"], step=_TEXT, text=_TEXT)}
_COLUMN = _record(["name", "type"], name=_TEXT, type=_TEXT)
#: What the Markdown reads of a job (`Decision.to_dict()`, render/plan.py's `plan_dict`).
JOB_SHAPE: dict[str, Any] = _record(
    ["name", "action", "query-version", "reason", "changes", "steps", "rollback"],
    name=_TEXT,
    action={"enum": [a.value for a in Action]},
    reason=_TEXT,
    changes={"type": "array", "items": _record(
        ["field", "kind", "old", "new", "why"],
        field=_TEXT, kind={"enum": [k.label for k in ChangeKind]}, why=_TEXT)},
    steps=_STEPS,
    rollback=_STEPS,
    after=_TEXTS,
    downstream={"type": "array", "items": _record(
        ["job", "effect", "detail"], job=_TEXT, effect=_TEXT, detail=_TEXT)},
    schema=_record(
        ["sink", "policy", "verdict", "refused", "conflicts", "readers", "notes"],
        sink=_TEXT, policy=_TEXT, verdict=_TEXT, refused=_BOOL, conflicts=_TEXTS,
        readers=_TEXTS, notes=_TEXTS, required=_TEXTS, moved=_TEXTS,
        added={"type": "array", "items": _COLUMN},
        dropped={"type": "array", "items": _COLUMN},
        renamed={"type": "array", "items": _record(["from", "to"], **{"from": _TEXT, "to": _TEXT})},
        retyped={"type": "array", "items": _record(
            ["name", "from", "to"], name=_TEXT, **{"from": _TEXT, "to": _TEXT})},
    ),
    state=_record(
        ["how", "summary", "operators", "on-state-change", "refused"],
        how=_TEXT, summary=_TEXT, refused=_BOOL,
        operators={"type": "array", "items": _record(
            ["operator", "verdict", "reasons", "mixes"],
            operator=_TEXT, verdict=_TEXT, reasons=_TEXTS, mixes=_TEXTS)},
        **{"on-state-change": _TEXT},
    ),
    **{"query-version": {"type": ["integer", "null"]}, "after-stops": _TEXTS},
)  # fmt: skip
#: A plan's document, `plan --output json`'s or a saved plan's: the keys its Markdown reads
#: (`lineage` and `previews` are checked by what reads them back).
SHAPE: dict[str, Any] = _record(
    ["jobs"],
    jobs={"type": "array", "items": JOB_SHAPE},
    lineage={"type": ["object", "null"]},
    previews={"type": "array"},
    **{
        "preview-rows": _BOOL,
        "saved-plan": _record(["file", "digest"], file=_TEXT, digest=_TEXT),
        "schema-version": {"const": SCHEMA_VERSION},
        "digest": _TEXT,
        "signature": _TEXT,
        "saved-as": {"type": ["string", "null"]},
        "deployer": _TEXT,
        "created": _TEXT,
    },
)  # fmt: skip
#: What a saved plan must hold beside: its format's version and its digest.
SAVED_REQUIRED = ("schema-version", "digest")


@functools.cache
def _checker() -> Any:
    return shape_validator(SHAPE)


@dataclass(frozen=True)
class ShownPlanDoc:
    """A plan's document as the page shows it: its Markdown, and what the document says of
    itself. Nothing of it is verified: a saved plan's `digest` and `signature` are as written
    (`digest_matches`: whether the digest is its content's, which anyone can work out again,
    so it proves nothing of a review). Its texts, and the `note` made with them (`deployer`,
    `created`), come from the document: escape them where they are shown."""

    markdown: str
    #: A saved plan (`plan --out`), not a plan's JSON output.
    saved: bool
    digest: str | None = None
    signature: str | None = None
    digest_matches: bool | None = None
    deployer: str | None = None
    created: str | None = None
    #: The plan's lineage, as the Markdown's diagram draws it (None: the document has none).
    lineage: Lineage | None = field(default=None, compare=False, repr=False)
    #: Each job's action, by name, as the document says it.
    actions: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def note(self) -> str:
        """One sentence for the page: what the document is, and that nothing vouches for it."""
        if not self.saved:
            return (
                "A plan's JSON document (plan --output json), shown as its pull request's "
                "Markdown: nothing in it is verified here."
            )
        made = f" by flink-sql-runner {self.deployer}" if self.deployer else ""
        made += f" at {self.created}" if self.created else ""
        signed = "signed, " if self.signature else "not signed, "
        return (
            f"A saved plan (plan --out), made{made}: {signed}its digest and signature are "
            "shown as the file has them, not verified here (deploy --plan verifies them)."
        )


def markdown_of_plan_doc(doc: Any) -> str:
    """The pull request's Markdown of the plan in `doc`, a plan's JSON document (`plan --output
    json`) or a saved plan's (`plan --out`); BadPlanDocument when it is neither."""
    return read_plan_doc(doc).markdown


def read_plan_json(raw: str | bytes) -> ShownPlanDoc:
    """`read_plan_doc` of a file's text (a saved plan, what `plan --output json` printed), what
    is not JSON said as BadPlanDocument too. How large a file to read is the caller's limit."""
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise BadPlanDocument(f"(the document): not JSON ({exc})") from None
    except RecursionError:
        raise BadPlanDocument("(the document): nested too deep") from None
    return read_plan_doc(doc)


def read_plan_doc(doc: Any) -> ShownPlanDoc:
    """`doc`, checked and shown (`markdown_of_plan_doc`), with what it says of itself."""
    try:
        return _read(doc)
    except RecursionError:
        raise BadPlanDocument("(the document): nested too deep") from None


def _read(doc: Any) -> ShownPlanDoc:
    if not isinstance(doc, dict):
        raise BadPlanDocument("(the document): not a plan's document (a JSON object)")
    saved = "format" in doc
    if saved and doc["format"] != FORMAT:
        raise BadPlanDocument("format: not a saved plan of flink-sql-runner (plan --out)")
    found = shape_problem(doc, _checker())
    if found is not None:
        raise BadPlanDocument(f"{found[0]}: {found[1]}")
    missing = [key for key in SAVED_REQUIRED if saved and key not in doc]
    if missing:
        raise BadPlanDocument(f"{missing[0]}: is required (a saved plan has it)")
    lineage = None
    if doc.get("lineage") is not None:
        try:
            lineage = lineage_from_dict(doc["lineage"])
        except ValueError as exc:
            raise BadPlanDocument(f"lineage.{exc}") from None
    previews = None
    if "previews" in doc:
        found_previews = []
        for i, item in enumerate(doc["previews"]):
            try:
                found_previews.append(Preview.from_dict(item))
            except ValueError as exc:
                raise BadPlanDocument(f"previews[{i}].{exc}") from None
        previews = previews_markdown(found_previews, bool(doc.get("preview-rows")))
    named = _saved_as(doc, saved)
    try:
        markdown = jobs_markdown(doc["jobs"], lineage, saved=named, previews=previews)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # Not reached by a document of the shape checked above; said, never a traceback.
        raise BadPlanDocument(f"(the document): not a plan's document ({exc!r:.80})") from None
    actions = {str(job["name"]): str(job["action"]) for job in doc["jobs"]}
    if not saved:
        return ShownPlanDoc(
            markdown, False, digest=named[1] if named else None, lineage=lineage, actions=actions
        )
    body = {k: v for k, v in doc.items() if k not in ("digest", "signature")}
    return ShownPlanDoc(
        markdown,
        True,
        digest=doc["digest"],
        signature=doc.get("signature"),
        digest_matches=body_digest(body) == doc["digest"],
        deployer=doc.get("deployer"),
        created=doc.get("created"),
        lineage=lineage,
        actions=actions,
    )


def _saved_as(doc: dict[str, Any], saved: bool) -> tuple[str, str] | None:
    """The saved plan the Markdown names (its file's name and its digest), as the document
    says it: a plan's `saved-plan` (`plan --out FILE --output json`), a saved plan's own
    `saved-as` and `digest`."""
    if saved:
        name = doc.get("saved-as")
        return (name, doc["digest"]) if name is not None else None
    said = doc.get("saved-plan")
    if said is None:
        return None
    return PurePosixPath(said["file"]).name, said["digest"]
