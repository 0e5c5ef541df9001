"""A plan's document shown as its pull request's Markdown (render/plan_doc.py): a plan's JSON
(`plan --output json`) and a saved plan (`plan --out`) give the Markdown `plan --output
markdown` gives for the same plan, byte for byte, for plans of every kind (tests/support/
plans.py); a forged document gives an error naming the field, or Markdown in which nothing it
holds became HTML or a link, as GitHub reads it (marked) and as the page shows it."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.act.saved_plan import body_digest, sealed, write_saved_plan
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.render.markdown import MARKER, plan_markdown
from flink_sql_runner.render.markdown_html import markdown_html
from flink_sql_runner.render.plan import plan_json, shown_keys
from flink_sql_runner.render.plan_doc import (
    BadPlanDocument,
    markdown_of_plan_doc,
    read_plan_doc,
    read_plan_json,
)
from flink_sql_runner.render.preview import previews_markdown
from tests.support.diagrams import parse_markdown
from tests.support.graphs import pipeline_job
from tests.support.plans import CASES, HOSTILE, PlanCase, previews
from tests.support.saved_plans import SQL, PlanWorld

DIGEST = "sha256:" + "3f2a" * 16


def shown(case: PlanCase, saved: tuple[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """The plan's Markdown as `plan --output markdown` makes it, and its document as `plan
    --output json` prints it (`saved`: with --out, the file's path and the digest)."""
    found = list(case.previews) if case.previews is not None else None
    lines = previews_markdown(found, case.rows) if found is not None else None
    named = (Path(saved[0]).name, saved[1]) if saved else None
    markdown = plan_markdown(case.plan, case.lineage, saved=named, previews=lines)
    extra = {"saved-plan": {"file": saved[0], "digest": saved[1]}} if saved else {}
    keys = shown_keys(case.lineage, found, case.rows)
    return markdown, json.loads(plan_json(case.plan, **extra, **keys))


@pytest.mark.parametrize("saved", [None, ("plans/plan.json", DIGEST)], ids=["plan", "with-out"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_plan_s_json_shows_as_its_pull_request_s_markdown(name: str, saved: Any) -> None:
    markdown, doc = shown(CASES[name](), saved)
    assert markdown_of_plan_doc(doc) == markdown
    about = read_plan_doc(doc)
    assert not about.saved and about.digest == (saved[1] if saved else None)
    assert about.signature is None and "nothing in it is verified here" in about.note


def test_the_plans_compared_hold_every_kind_of_decision() -> None:
    """The comparison above means something only for a corpus of every kind."""
    docs = {name: shown(make())[1] for name, make in CASES.items()}
    jobs = [job for doc in docs.values() for job in doc["jobs"]]
    assert {job["action"] for job in jobs} == {
        "noop", "start-clean", "restart-from-checkpoint", "stop-and-restart-from-checkpoint",
        "stop-and-start-clean", "stop", "prune", "error", "refused", "orphaned",
    }  # fmt: skip
    assert {"schema", "state", "downstream", "after", "after-stops"} <= {k for j in jobs for k in j}
    assert {job["state"]["refused"] for job in jobs if "state" in job} == {True, False}
    assert {job["schema"]["refused"] for job in jobs if "schema" in job} == {True, False}
    assert {change["kind"] for job in jobs for change in job["changes"]} == {"config", "query"}
    assert any(step["step"] == "prepare" for job in jobs for step in job["steps"])
    assert any(job["rollback"] for job in jobs)
    previewed = docs["previews-rows"]
    assert previewed["preview-rows"] is True and docs["previews-counts"]["preview-rows"] is False
    assert {p["unavailable"] is None for p in previewed["previews"]} == {True, False}
    assert any((p["new"] or {}).get("error") for p in previewed["previews"])
    assert {part["kind"] for p in previewed["previews"] for part in p["slice"]["parts"]} == {
        "files", "kafka"}  # fmt: skip
    assert docs["changes-downstream-lineage"]["lineage"]["links"]
    assert "lineage" not in docs["changes-without-lineage"]
    markdown = {name: markdown_of_plan_doc(doc) for name, doc in docs.items()}
    assert "```mermaid" in markdown["changes-downstream-lineage"]
    assert "Downstream of it (they read what it writes)" not in markdown["sink-swap"]
    assert "The previews are left out" not in markdown["previews-rows"]
    assert "| `2` |" in markdown["previews-rows"] and "| `2` |" not in markdown["previews-counts"]
    assert "Each job's changes and steps are left out" in markdown["shortened-700"]
    assert "No jobs." in markdown["no-jobs"]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlanWorld:
    """Both jobs deployed and running; then `orders`' description changes to text that would
    be HTML and `clicks`' SQL changes."""
    for name in PlanWorld.names:
        monkeypatch.setenv(f"{name.upper()}_MAX_FILES", "10")
    made = PlanWorld(tmp_path)
    _, results = made.deploy()
    assert all(r.ok for r in results.values()), results
    made.write_job("orders", description=json.dumps(HOSTILE))
    made.write_job("clicks", sql=SQL + " WHERE id > 0")
    return made


KEY = b"k" * 32


@pytest.mark.parametrize("rows", [False, True])
def test_a_saved_plan_shows_as_its_pull_request_s_markdown(world: PlanWorld, rows: bool) -> None:
    """`plan --out plan.json --output markdown --preview`: the file shows as the comment."""
    deployment = world.deployment()
    jobs = deployment.load()
    plan = deployment.plan(jobs, read_only=True)
    found = list(previews())
    doc = world.saved_doc(deployment, plan, jobs, found, rows)
    write_saved_plan(world.plan_file, doc)
    assert world.read().digest == doc["digest"], "deploy --plan's checks take it"
    expected = plan_markdown(
        plan,
        build_lineage(jobs, catalog=deployment.catalog()),
        saved=("plan.json", doc["digest"]),
        previews=previews_markdown(found, rows),
    )
    assert "```mermaid" in expected and "#### Previews" in expected
    read = json.loads(world.plan_file.read_text())
    assert markdown_of_plan_doc(read) == expected
    about = read_plan_doc(read)
    assert (about.saved, about.digest, about.digest_matches) == (True, doc["digest"], True)
    assert about.signature is None and about.deployer == "0.1.0"
    said = "not signed, its digest and signature are shown as the file has them, not verified"
    assert said in about.note


def test_a_saved_plan_s_signature_is_shown_never_trusted(world: PlanWorld) -> None:
    """The page cannot check a signature (the key is CI's): a plan sealed again by anyone
    shows the same, digest matching, as one signed; it says nothing is verified."""
    deployment = world.deployment()
    jobs = deployment.load()
    plan = deployment.plan(jobs, read_only=True)
    signed = world.saved_doc(deployment, plan, jobs, key=KEY)
    about = read_plan_doc(signed)
    assert about.signature == signed["signature"] and about.signature.startswith("hmac-sha256:")
    assert about.digest_matches and "signed, its digest and signature are shown" in about.note
    body = {k: v for k, v in copy.deepcopy(signed).items() if k not in ("digest", "signature")}
    body["jobs"][0]["reason"] = "approved by the reviewer"
    forged = sealed(body, b"not the plan key at all")
    shown_forged = read_plan_doc(forged)
    assert shown_forged.digest_matches and shown_forged.signature is not None
    assert "approved by the reviewer" in shown_forged.markdown
    assert "not verified here" in shown_forged.note
    edited = {**copy.deepcopy(signed), "deployer": "9.9.9"}
    assert read_plan_doc(edited).digest_matches is False
    assert body_digest(body) == forged["digest"]


def base_doc() -> dict[str, Any]:
    """A plan's document of every part: jobs of many kinds, a lineage, previews, --out."""
    return shown(CASES["previews-rows"](), ("plan.json", DIGEST))[1]


def saved_doc() -> dict[str, Any]:
    doc = base_doc()
    del doc["saved-plan"]
    body = {"format": "flink-sql-runner saved plan", "schema-version": 2, **doc,
            "saved-as": "plan.json"}  # fmt: skip
    return sealed(body)


def _job(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(job for job in doc["jobs"] if job["name"] == name)


FORGED: list[tuple[str, Any, str]] = [
    ("a list", lambda d: [d], "(the document): not a plan's document (a JSON object)"),
    ("no jobs", lambda d: {"lineage": None}, "jobs: is required"),
    ("jobs a text", lambda d: {**d, "jobs": "all"}, "jobs: must be a list, got a string"),
    ("a job a list", lambda d: {**d, "jobs": [[]]}, "jobs[0]: must be a mapping, got a list"),
    ("no reason", lambda d: _drop(d, "jobs", 0, "reason"), "jobs[0].reason: is required"),
    ("reason a number", lambda d: _set(d, ("jobs", 0, "reason"), 5),
     "jobs[0].reason: must be a string, got an integer"),
    ("an unknown action", lambda d: _set(d, ("jobs", 0, "action"), "<b>launch</b>"),
     "jobs[0].action: must be one of noop, start-clean"),
    ("a version as text", lambda d: _set(d, ("jobs", 0, "query-version"), "1"),
     "jobs[0].query-version: must be an integer or null, got a string"),
    ("a step without its text", lambda d: _drop(d, "jobs", 1, "steps", 0, "text"),
     "jobs[1].steps[0].text: is required"),
    ("a change of no kind", lambda d: _set(d, ("jobs", 4, "changes", 0, "kind"), "big"),
     "jobs[4].changes[0].kind: must be one of none, config, query, got 'big'"),
    ("a downstream job a number", lambda d: _set(d, ("jobs", 4, "downstream", 0, "job"), 7),
     "jobs[4].downstream[0].job: must be a string, got an integer"),
    ("after not a list", lambda d: _set(d, ("jobs", 4, "after"), "consumer"),
     "jobs[4].after: must be a list, got a string"),
    ("a lineage of a job it does not hold",
     lambda d: _set(d, ("lineage", "links", 0, "producer"), "nobody"),
     "lineage.links[0].producer: not a job of the lineage"),
    ("a lineage job reading no table",
     lambda d: _set(d, ("lineage", "jobs", 0, "reads", 0), "nowhere"),
     "lineage.jobs[0].reads[0]: not a table of the lineage"),
    ("a lineage job twice",
     lambda d: _set(d, ("lineage", "jobs"), d["lineage"]["jobs"] * 2),
     "lineage.jobs[6].name: a job listed twice"),
    ("a lineage without tables", lambda d: _drop(d, "lineage", "tables"),
     "lineage.tables: is required"),
    ("a preview of negative rows", lambda d: _set(d, ("previews", 0, "only-new", "rows"), -1),
     "previews[0].only-new.rows: must be at least 0"),
    ("a Kafka partition that is not one",
     lambda d: _set(d, ("previews", 3, "slice", "parts", 0, "end", "orders"), {"x": 1}),
     "previews[3].slice.parts[0].end.orders: key x is not allowed: must match"),
    ("a changed row of one value",
     lambda d: _set(d, ("previews", 0, "changed", "sample", 0, "columns", "note"), [1]),
     "previews[0].changed.sample[0].columns.note: must hold at least 2 items"),
    ("previews not a list", lambda d: {**d, "previews": {}},
     "previews: must be a list, got a mapping"),
    ("--out without a digest", lambda d: _drop(d, "saved-plan", "digest"),
     "saved-plan.digest: is required"),
]  # fmt: skip
SAVED_FORGED: list[tuple[str, Any, str]] = [
    ("another format", lambda d: {**d, "format": "terraform plan"},
     "format: not a saved plan of flink-sql-runner (plan --out)"),
    ("another schema", lambda d: {**d, "schema-version": 1}, "schema-version: must be 2"),
    ("no digest", lambda d: _drop(d, "digest"), "digest: is required (a saved plan has it)"),
    ("a signature not text", lambda d: {**d, "signature": ["hmac"]},
     "signature: must be a string, got a list"),
    ("saved as a number", lambda d: {**d, "saved-as": 1},
     "saved-as: must be a string or null, got an integer"),
]  # fmt: skip


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return doc


def _drop(doc: Any, *path: Any) -> Any:
    doc = copy.deepcopy(doc)
    at = doc
    for key in path[:-1]:
        at = at[key]
    del at[path[-1]]
    return doc


@pytest.mark.parametrize(("forge", "said"), [(f, s) for _, f, s in FORGED],
                         ids=[i for i, _, _ in FORGED])  # fmt: skip
def test_a_forged_plan_document_is_refused_naming_the_field(forge: Any, said: str) -> None:
    doc = base_doc()
    assert _job(doc, "producer") is doc["jobs"][4] and doc["jobs"][1]["steps"]
    with pytest.raises(BadPlanDocument) as refused:
        markdown_of_plan_doc(forge(doc))
    assert str(refused.value).startswith(said), str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("forge", "said"), [(f, s) for _, f, s in SAVED_FORGED],
                         ids=[i for i, _, _ in SAVED_FORGED])  # fmt: skip
def test_a_forged_saved_plan_is_refused_naming_the_field(forge: Any, said: str) -> None:
    assert read_plan_doc(saved_doc()).saved
    with pytest.raises(BadPlanDocument) as refused:
        markdown_of_plan_doc(forge(saved_doc()))
    assert str(refused.value).startswith(said), str(refused.value)


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"", "(the document): not JSON (Expecting value: line 1 column 1 (char 0))"),
        (b"\xff\xfe{", "(the document): not JSON ("),
        ("[" * 100_000 + "]" * 100_000, "(the document): nested too deep"),
        ("{}", "jobs: is required"),
    ],
    ids=["empty", "not-text", "deep", "no-jobs"],
)
def test_a_file_that_is_not_a_plan_s_json_is_said(raw: Any, said: str) -> None:
    with pytest.raises(BadPlanDocument) as refused:
        read_plan_json(raw)
    assert str(refused.value).startswith(said), str(refused.value)


def test_a_file_of_a_plan_s_json_shows_as_the_document() -> None:
    markdown, doc = shown(CASES["sink-swap"]())
    assert read_plan_json(json.dumps(doc, indent=2).encode()).markdown == markdown


def test_a_value_nested_too_deep_is_said_not_a_crash() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    doc = _set(base_doc(), ("jobs", 4, "changes", 0, "new"), deep)
    with pytest.raises(BadPlanDocument, match=r"^\(the document\): nested too deep$"):
        markdown_of_plan_doc(doc)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


def test_no_value_a_forged_document_holds_breaks_the_page() -> None:
    """Any value of a plan's document replaced by one of another kind: an error that names a
    field (one line, no traceback), or Markdown."""
    rng = random.Random(56)
    docs = [base_doc(), saved_doc(), shown(CASES["stop-restart-prune-hostile"]())[1]]
    values = [None, 0, -1, 1.5, "", HOSTILE, [], {}, True, [HOSTILE], {"x": HOSTILE}]
    tried = said = 0
    for doc in docs:
        paths = _paths(doc)[1:]
        for path in rng.sample(paths, 120):
            forged = _set(doc, path, rng.choice(values))
            tried += 1
            try:
                markdown = markdown_of_plan_doc(forged)
            except BadPlanDocument as exc:
                said += 1
                assert re.match(r"^[^\n]+: [^\n]+$", str(exc)), str(exc)
                assert "not a plan's document (" not in str(exc), f"{path}: {exc}"
            else:
                assert markdown.startswith(MARKER + "\n")
    assert tried == 360 and 0 < said < tried


#: Where a document's text must be one of a few words: left as it is below.
WORDS = {"action", "kind"}


def hostile(value: Any, path: tuple[Any, ...] = ()) -> Any:
    """`value` with every text a forged document may set (values, and the keys that are data:
    a change's values' own, names of views, columns and topics) made text that would be HTML,
    a link, emphasis or a table cell in Markdown (`HOSTILE` after it)."""
    if isinstance(value, str):
        return value if path[-1:] and path[-1] in WORDS or path == ("format",) else (
            f"{value} {HOSTILE}")  # fmt: skip
    if isinstance(value, list):
        return [hostile(item, (*path, i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        data = (
            "changes" in path
            and ("old" in path or "new" in path)
            or path[-1:] in (("rows-in",), ("key",), ("columns",), ("start",), ("end",))
            or path[-2:-1] == ("sample",)
            and path[-3:-2] in (("only-new",), ("only-old",))
        )
        return {(f"{k} {HOSTILE}" if data else k): hostile(v, (*path, k)) for k, v in value.items()}
    return value


#: What the plan's Markdown is made of, as GitHub reads it: no link, image or HTML inline.
INLINE = {"text", "codespan", "strong", "em", "escape", "br"}
#: What the page's HTML is made of.
TAGS = {"h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "strong",
        "em", "ol", "ul", "li", "details", "summary", "br"}  # fmt: skip


@pytest.mark.parametrize("kind", ["plan", "saved"])
def test_text_of_a_forged_document_is_inert_in_the_markdown_and_the_page(kind: str) -> None:
    doc = hostile(base_doc() if kind == "plan" else saved_doc())
    if kind == "saved":
        doc = sealed({k: v for k, v in doc.items() if k not in ("digest", "signature")})
    markdown = markdown_of_plan_doc(doc)
    # Outside code spans and blocks (where it is text) every sign escaped.
    assert markdown.count("\\<script\\>alert(1)\\</script\\> \\](javascript:alert(1))") > 20
    blocks = parse_markdown(markdown)
    for block in blocks:
        if block["type"] in ("heading", "table", "paragraph", "list"):
            assert set(block["inline"]) <= INLINE, block
        if block["type"] == "html":
            html = block["text"].strip()
            assert html in (MARKER, "</details>") or re.fullmatch(
                r"<details><summary>[^<>]*</summary>", html
            ), html
    assert {b["type"] for b in blocks} >= {"heading", "table", "code", "html", "list"}
    page = markdown_html(markdown)
    assert set(re.findall(r"<([a-z0-9]+)", page)) <= TAGS
    assert set(re.findall(r"<[a-z0-9]+( [^>]*)?>", page)) <= {
        "", ' class="language-diff"', ' class="language-mermaid"'}  # fmt: skip
    assert "<script" not in page and "<img" not in page and "href" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 20


def test_a_plan_s_json_holds_no_secret_a_sink_s_location_holds() -> None:
    """The lineage a plan's document carries shows each table's location masked, as the
    plan's values are."""
    job = pipeline_job("leaky", "/in", "s3a://ci:hunter2-secret@bucket/out")
    doc = json.loads(plan_json(CASES["no-jobs"]().plan, **shown_keys(build_lineage([job]))))
    assert "hunter2" not in json.dumps(doc)
    (where,) = [p["where"] for t in doc["lineage"]["tables"] for p in t["location"]
                if "bucket" in p["where"]]  # fmt: skip
    assert where == "s3://*****@bucket/out"  # s3a:// and s3:// are one place
