"""A plan as a pull-request comment: `plan --output markdown` (and `deploy --dry-run`).

It renders the same `Plan` as the text and JSON renderers, as GitHub-flavoured Markdown that
GitHub and GitLab show alike: a table of the jobs that change (action, version, reason), the
jobs with nothing to do folded away, then per job its changes as old -> new (secrets masked,
SQL and code as a diff), its steps and what happens if the new run is not healthy; last, a
Mermaid lineage diagram with the changed jobs and everything downstream of them highlighted.

It is rendered from the plan's jobs as `plan --output json` has them (`plan_markdown` makes
them of a `Plan`), so that a plan's JSON document or a saved plan shows as the same Markdown
(render/plan_doc.py, for the page). Whatever comes from manifests, or from such a document, is
escaped: values go in code spans (longer fences for values holding backticks, `|` escaped in
tables), other text has Markdown's and HTML's signs escaped.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from typing import Any

from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.read.secrets import MASK, mask
from flink_sql_runner.render.lineage import mermaid_diagram
from flink_sql_runner.render.plan import plan_dict

#: A job of a plan's document (`plan --output json`'s `jobs`): what the Markdown reads of it.
Job = dict[str, Any]

#: The comment's first line: CI finds its own comment by it to update it.
MARKER = "<!-- flink-sql-runner plan -->"
#: GitHub refuses comments over 65,536 characters; past this the comment is made shorter.
MAX_LENGTH = 60_000
VALUE_LIMIT = 80

_ESCAPED = re.compile(r"([\\`*_\[\]<>|~&])")


def text(value: str) -> str:
    """Plain text with every sign Markdown or HTML would act on escaped, on one line."""
    return _ESCAPED.sub(r"\\\1", " ".join(str(value).split()))


def code(value: str, in_table: bool = True) -> str:
    """`value` as a code span: a fence longer than any run of backticks in it; in a table,
    `|` escaped (GitHub's tables split cells on it even in code)."""
    value = " ".join(value.split())
    if not value:
        return "(empty)"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value[0] == "`" or value[-1] == "`" else ""
    if in_table:
        value = value.replace("|", "\\|")
    return f"{fence}{pad}{value}{pad}{fence}"


def _shown(value: Any) -> str:
    if isinstance(value, str):
        shown = value
    else:
        shown = json.dumps(value, sort_keys=True, default=str)
    shown = " ".join(shown.split())
    return shown if len(shown) <= VALUE_LIMIT else shown[: VALUE_LIMIT - 3] + "..."


def _multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value.strip()


def _diff(field: str, old: Any, new: Any) -> list[str]:
    """A fenced `diff` block of two texts (SQL, code), whole, with no file headers."""
    before = old.strip("\n").splitlines() if isinstance(old, str) else []
    after = new.strip("\n").splitlines() if isinstance(new, str) else []
    lines = list(difflib.unified_diff(before, after, lineterm="", n=max(len(before), len(after))))[
        3:
    ]  # no ---, +++ and @@ lines
    body = "\n".join(lines)
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", body)), default=0) + 1)
    return [f"{code(field, in_table=False)}:", "", f"{fence}diff", body, fence]


def _change_row(change: dict[str, Any]) -> tuple[str, list[str]]:
    """The change's table row, and the diff block shown below the table (if any)."""
    field = change["field"]
    old, new = mask(change["old"], field), mask(change["new"], field)
    masked = MASK in (old, new)
    if not masked and (_multiline(old) or _multiline(new)):
        shown = "see the diff below"
        block = _diff(field, old, new)
    else:
        shown = f"{code(_shown(old))} -> {code(_shown(new))}"
        block = []
    row = f"| {code(field)} | {shown} | {text(change['kind'])} | {text(change['why'])} |"
    return row, block


def _version(job: Job) -> str:
    version = job["query-version"]
    return f"v{version}" if version is not None else "-"


def _action(job: Job) -> str:
    acting = job["steps"] or job["action"] in ("error", "refused")
    return f"**{job['action']}**" if acting else job["action"]


def _summary(jobs: list[Job]) -> str:
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job["action"]] = counts.get(job["action"], 0) + 1
    said = f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}"
    summary = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
    verdict = "changes pending" if any(job["steps"] for job in jobs) else "nothing to do"
    return f"{said} ({summary}); {verdict}"


def _job_table(jobs: list[Job]) -> list[str]:
    lines = ["| job | action | version | reason |", "|---|---|---|---|"]
    for d in jobs:
        lines.append(f"| {code(d['name'])} | {_action(d)} | {_version(d)} | {text(d['reason'])} |")
    return lines


def _job_section(job: Job, lineage: Lineage | None, diffs: bool) -> list[str]:
    name = job["name"]
    lines = ["", f"#### {code(name, in_table=False)}: {job['action']}"]
    if job["changes"]:
        rows, blocks = [], []
        for change in job["changes"]:
            row, block = _change_row(change)
            rows.append(row)
            if diffs and block:
                blocks += ["", *block]
            elif block:
                blocks += ["", f"{code(change['field'], in_table=False)}: its diff is left out."]
        lines += ["", "| field | old -> new | kind | why |", "|---|---|---|---|", *rows]
        lines += blocks
    schema = job.get("schema")
    if schema is not None and (schema["verdict"] != "same" or schema["conflicts"]):
        lines += _schema_section(schema)
    if job.get("state") is not None:
        lines += _state_section(job["state"])
    if job["steps"]:
        order = []
        after, after_stops = job.get("after", []), job.get("after-stops", [])
        if after:
            order.append(f"after {', '.join(code(a, in_table=False) for a in after)}")
        if after_stops:
            names = ", ".join(code(a, in_table=False) for a in after_stops)
            have = "has" if len(after_stops) == 1 else "have"
            order.append(f"starts once {names} {have} stopped")
        intro = "; ".join(order)
        intro = f"{intro[:1].upper()}{intro[1:]}: steps, in order:" if intro else "Steps, in order:"
        lines += ["", intro, ""]
        lines += [f"{i}. {text(step['text'])}" for i, step in enumerate(job["steps"], 1)]
    if job["rollback"]:
        back = ", then ".join(step["text"] for step in job["rollback"])
        lines += [
            "",
            text(
                f"If the new run is not healthy: stop it, then {back}; the store is left as it was."
            ),
        ]
    downstream = job.get("downstream", [])
    if downstream:
        lines += ["", "Downstream, as it starts clean and writes its results again:", ""]
        lines += [
            f"- {code(i['job'], in_table=False)} **{text(i['effect'])}**: {text(i['detail'])}"
            for i in downstream
        ]
    below = lineage.downstream(name) if lineage is not None and changed(job) else []
    if below and not downstream:
        names = ", ".join(code(n, in_table=False) for n in below)
        lines += ["", f"Downstream of it (they read what it writes): {names}."]
    return lines


def _verdict(word: str, refused: bool) -> str:
    return f"**{text(word)}, refused**" if refused else f"**{text(word)}**"


def _state_section(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"State: {_verdict(report['how'], report['refused'])} (on-state-change: "
        f"{code(report['on-state-change'], in_table=False)}): {text(report['summary'])}",
    ]
    if report["operators"]:
        lines += ["", "| stateful operator | verdict | why |", "|---|---|---|"]
        lines += [
            f"| {code(o['operator'])} | {text(o['verdict'])} | "
            f"{text('; '.join([*o['reasons'], *o['mixes']]))} |"
            for o in report["operators"]
        ]
    return lines


def _schema_section(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"Schema of {code(report['sink'], in_table=False)}: "
        f"{_verdict(report['verdict'], report['refused'])} "
        f"(on-schema-change: {code(report['policy'], in_table=False)})",
    ]
    change = report
    required = set(change.get("required", []))
    rows = [
        (f["name"], f"added, {f['type']}" + (" NOT NULL: older files lack it" if f["name"] in
                                              required else ""))
        for f in change.get("added", [])
    ]  # fmt: skip
    rows += [(f["name"], f"dropped, was {f['type']}") for f in change.get("dropped", [])]
    rows += [(r["name"], f"{r['from']} -> {r['to']}") for r in change.get("retyped", [])]
    rows += [(r["from"], f"renamed {r['to']}") for r in change.get("renamed", [])]
    rows += [(name, "moved (a positional format)") for name in change.get("moved", [])]
    if rows:
        lines += ["", "| column | change |", "|---|---|"]
        lines += [f"| {code(name)} | {text(what)} |" for name, what in rows]
    said = [*report["conflicts"], *report["notes"]]
    if report["readers"]:
        said.append("read by " + ", ".join(report["readers"]))
    if said:
        lines += ["", *[f"- {text(line)}" for line in said]]
    return lines


def changed(job: Job) -> bool:
    """Whether the pull request changes the job (as the plan's document has it): its manifest
    (or a table it uses) differs from the deployed one, it is new, or it left git and is
    pruned. (A restart of a job that stopped, say, acts on it without a change.)"""
    new = job["action"] == "start-clean" and not job["changes"]
    return bool(job["changes"]) or new or job["action"] == "prune"


def _lineage_section(jobs: list[Job], lineage: Lineage) -> list[str]:
    changed_jobs = [d["name"] for d in jobs if changed(d) and d["name"] in lineage.jobs]
    downstream = sorted(
        {n for c in changed_jobs for n in lineage.downstream(c)} - set(changed_jobs)
    )
    diagram = mermaid_diagram(lineage, changed_jobs, downstream)
    lines = ["", "### Lineage", ""]
    if diagram.nodes:
        fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", diagram.text)), default=0) + 1)
        lines += [f"{fence}mermaid", diagram.text, fence, ""]
    if not diagram.nodes:
        return [
            *lines,
            "No diagram: the lineage is too large for one Mermaid diagram "
            "(`flink-sql-runner lineage --output dot` draws it).",
        ]
    legend = []
    if changed_jobs:
        legend.append("changed jobs in red")
    if downstream:
        legend.append("jobs downstream of them in yellow")
    if lineage.cycles:
        legend.append("jobs in a cycle with a red dashed border")
    # Our own sentences: no text from manifests in them.
    for sentence in ("; ".join(legend), diagram.note):
        if sentence:
            lines += [sentence[0].upper() + sentence[1:] + ".", ""]
    return lines[:-1]


def plan_markdown(
    plan: Plan,
    lineage: Lineage | None = None,
    *,
    saved: tuple[str, str] | None = None,
    previews: list[str] | None = None,
) -> str:
    """The plan as a pull-request comment; with the `lineage`, its diagram and each changed
    job's downstream jobs; with `saved` (its file and digest, `plan --out`), the saved plan a
    merge carries out; `previews`: the lines of its changed queries' previews
    (render/preview.py), after the jobs' sections. Past GitHub's size limit: shorter forms,
    saying what they leave out (the previews first). Rendered from the plan's jobs as its JSON
    document has them (`jobs_markdown`)."""
    return jobs_markdown(plan_jobs(plan), lineage, saved=saved, previews=previews)


def plan_jobs(plan: Plan) -> list[Job]:
    """The plan's jobs as `plan --output json` has them, its values as JSON reads them back
    (a value JSON has no form for, as its text)."""
    jobs: list[Job] = plan_dict(plan)["jobs"]
    for job in jobs:
        for change in job["changes"]:
            change["old"], change["new"] = _as_json(change["old"]), _as_json(change["new"])
    return jobs


def _as_json(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    return json.loads(json.dumps(value, default=str))


def jobs_markdown(
    jobs: list[Job],
    lineage: Lineage | None = None,
    *,
    saved: tuple[str, str] | None = None,
    previews: list[str] | None = None,
) -> str:
    """`plan_markdown` of a plan whose jobs are `jobs`, as its JSON document has them (checked
    first when it comes from elsewhere: render/plan_doc.py)."""
    shown = previews or []
    left_out = [
        "",
        "The previews are left out: the comment would be too long "
        "(`flink-sql-runner preview NAME` shows each).",
    ] if shown else []  # fmt: skip
    forms: list[Callable[[], list[str]]] = [
        lambda: _markdown(jobs, lineage, sections=True, diffs=True, previews=shown),
        lambda: _markdown(jobs, lineage, sections=True, diffs=True, previews=left_out),
        lambda: _markdown(jobs, lineage, sections=True, diffs=False, previews=left_out),
        lambda: _markdown(jobs, lineage, sections=False, diffs=False),
        lambda: _markdown(jobs, lineage, sections=False, diffs=False, diagram=False),
    ]
    said = _saved_lines(saved)
    for form in forms:
        lines = form()
        rendered = "\n".join([*lines[:2], *said, *lines[2:]]) + "\n"
        if len(rendered) <= MAX_LENGTH:
            return rendered
    return _cut(rendered)


def _saved_lines(saved: tuple[str, str] | None) -> list[str]:
    """What a reviewer approves: the saved plan, by its digest (`deploy --plan` carries out
    that file or refuses it, never another plan)."""
    if saved is None:
        return []
    file, digest = saved
    return [
        "",
        f"Saved plan {code(file, False)}, digest {code(digest, False)}: the merge carries out "
        "exactly this plan (`deploy --plan`), or refuses it whole if anything it was decided "
        "from changed.",
    ]


def _refused_for_state(job: Job) -> bool:
    return job.get("state") is not None and bool(job["state"]["refused"])


def _markdown(
    jobs: list[Job],
    lineage: Lineage | None,
    sections: bool,
    diffs: bool,
    diagram: bool = True,
    previews: list[str] | None = None,
) -> list[str]:
    lines = [MARKER, f"### flink-sql-runner plan: {_summary(jobs)}"]
    if not jobs:
        return [*lines, "", "No jobs."]
    acting = [d for d in jobs if d["action"] != "noop"]
    idle = [d for d in jobs if d["action"] == "noop"]
    if acting:
        lines += ["", *_job_table(acting)]
    if any(d["action"] == "error" for d in jobs):
        lines += ["", "Jobs marked `error` will not be touched; see their reasons above."]
    refused = [d for d in jobs if d["action"] == "refused"]
    if any(not _refused_for_state(d) for d in refused):
        lines += ["", "Jobs marked `refused` would break their sink's readers: not touched."]
    if any(_refused_for_state(d) for d in refused):
        lines += ["", "Jobs marked `refused` for their state would write windows partial: not "
                  "touched."]  # fmt: skip
    if idle:
        count = f"{len(idle)} job{'s' if len(idle) != 1 else ''} with nothing to do"
        lines += [
            "",
            f"<details><summary>{count}</summary>",
            "",
            *_job_table(idle),
            "",
            "</details>",
        ]
    if sections:
        if not diffs:
            lines += ["", "The diffs of SQL and code are left out: the comment would be too long."]
        for d in jobs:
            if d["steps"] or d["changes"] or d.get("schema") is not None:
                lines += _job_section(d, lineage, diffs)
    else:
        lines += [
            "",
            "Each job's changes and steps are left out: the comment would be too long "
            "(`flink-sql-runner plan` prints them all).",
        ]
    lines += previews or []
    if lineage is not None and lineage.jobs:
        if diagram:
            lines += _lineage_section(jobs, lineage)
        else:
            lines += [
                "",
                "The lineage diagram is left out: the comment would be too long "
                "(`flink-sql-runner lineage --output mermaid` draws it).",
            ]
    return lines


def _cut(rendered: str) -> str:
    """Past every shorter form (tables of thousands of jobs): the first MAX_LENGTH characters,
    cut at a line (a table cut between rows is still a table), and a last line saying so."""
    head = rendered[: MAX_LENGTH - 200].rsplit("\n", 1)[0]
    if head.count("<details>") > head.count("</details>"):
        head += "\n\n</details>"
    return head + "\n\n_The plan is cut here: run `flink-sql-runner plan` for all of it._\n"
