"""Rendering results for people (text) and machines (JSON); secrets masked in both."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _string
from typing import Any

import click

from flink_sql_runner.act.results import JobResult
from flink_sql_runner.decide.changes import MISSING, Change
from flink_sql_runner.decide.decisions import Action, Decision, Plan, SchemaReport, StateReport
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.model.preview import Preview
from flink_sql_runner.read.secrets import mask

TEXT_VALUE_LIMIT = 60
#: Fields whose change the text plan shows as a unified diff of their text, every line of it.
DIFFED_FIELDS = frozenset({"sql", "code"})
#: Colours of a diff's lines on a terminal, by their first character.
DIFF_COLOURS = {"+": "green", "-": "red", "@": "cyan"}
#: How the results of an interrupted deploy mark the jobs it did not finish.
INTERRUPTED_MARKS = {"not-begun": "--  ", "left-in-flight": "??  "}
#: The marks of results that are not ok and not failures either.
RESULT_MARKS = {"skipped": "SKIP", **INTERRUPTED_MARKS}


def change_dict(change: Change) -> dict[str, Any]:
    out = change.to_dict()
    out["old"], out["new"] = mask(change.old, change.field), mask(change.new, change.field)
    return out


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= TEXT_VALUE_LIMIT else text[: TEXT_VALUE_LIMIT - 3] + "..."


def change_line(change: Change) -> str:
    item = change_dict(change)
    return (
        f"{item['field']}: {_short(item['old'])} -> {_short(item['new'])}  "
        f"[{item['kind']}: {change.why}]"
    )


def _text_lines(value: Any) -> list[str] | None:
    """The lines of a text field's value (none when unset); None when it is not text."""
    if value is None or value == MISSING:
        return []
    return value.splitlines() if isinstance(value, str) else None


def change_lines(change: Change, color: bool = False) -> list[str]:
    """A change for people: `field: old -> new`, or for SQL and code a unified diff of the
    text, deployed (-) against git (+), with every changed line in full; secrets masked first.
    `color`: the diff's lines coloured (for a terminal)."""
    item = change_dict(change)
    old, new = _text_lines(item["old"]), _text_lines(item["new"])
    if change.field not in DIFFED_FIELDS or old is None or new is None:
        return [change_line(change)]
    lines = [f"{item['field']}: deployed -> git  [{item['kind']}: {change.why}]"]
    diff = difflib.unified_diff(old, new, "deployed", "git", n=2, lineterm="")
    for line in list(diff)[2:]:  # the hunks, without the ---/+++ file names
        colour = DIFF_COLOURS.get(line[:1]) if color else None
        lines.append("  " + (click.style(line, fg=colour) if colour else line))
    return lines


def plan_dict(plan: Plan, results: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    jobs = []
    for decision in plan.decisions:
        entry = decision.to_dict(change_dict)
        if results is not None and decision.name in results:
            entry["result"] = results[decision.name]
        jobs.append(entry)
    return {"jobs": jobs}


def lineage_dict(lineage: Lineage) -> dict[str, Any]:
    """The lineage as a plan's document carries it, what its Markdown draws: the keys of
    `lineage --output json` but what follows from them (each job's `upstream` and `downstream`,
    each table's `written-by` and `read-by`, `order`, `cycles`: `lineage_from_dict` works them
    out again), each table's location masked as a plan's values are."""
    return {
        "jobs": [
            {"name": job.name, "reads": list(job.reads), "writes": job.writes,
             "stored-only": job.stored_only}
            for job in lineage.jobs.values()
        ],
        "tables": [
            {"name": table.name, "format": table.format,
             "location": [{"kind": p.kind, "where": mask(p.where)} for p in table.places]}
            for table in lineage.tables.values()
        ],
        "links": [
            {"producer": link.producer, "consumer": link.consumer, "table": link.table,
             "read-as": link.read_as, "via": link.via}
            for link in lineage.links
        ],
        "unused-tables": list(lineage.unused_tables),
    }  # fmt: skip


def shown_keys(
    lineage: Lineage | None = None,
    previews: list[Preview] | None = None,
    preview_rows: bool = False,
) -> dict[str, Any]:
    """What a plan's document (`plan --output json`, a saved plan) holds beside its jobs for
    its Markdown to be made of it alone (render/plan_doc.py): the `lineage` it draws and, with
    `--preview`, the `previews` and whether the Markdown shows their rows (`preview-rows`)."""
    keys: dict[str, Any] = {}
    if previews is not None:
        keys["previews"] = [p.to_dict() for p in previews]
        keys["preview-rows"] = preview_rows
    if lineage is not None:
        keys["lineage"] = lineage_dict(lineage)
    return keys


def plan_json(plan: Plan, results: dict[str, dict[str, Any]] | None = None, **extra: Any) -> str:
    doc = plan_dict(plan, results)
    doc.update(extra)
    return indented_json(doc, default=str)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


#: JSON's constants, by the Python value (keys and values alike).
_CONSTANTS = {None: "null", True: "true", False: "false"}


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True or key is False or key is None:
        return _CONSTANTS[key]
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def indented_json(value: Any, default: Callable[[Any], Any] = str) -> str:
    """`json.dumps(value, indent=2, default=default)`, byte for byte, in half the time: on
    Python before 3.14 the C encoder does not indent, and json's own Python one makes a
    generator per container (a plan of 10,000 jobs holds 700,000 values)."""
    out: list[str] = []
    put = out.append

    def scalar(o: Any) -> str | None:
        kind = type(o)
        if kind is str:
            return _string(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if kind is int:
            return int.__repr__(o)
        return None

    def write(o: Any, pad: str) -> None:
        if isinstance(o, str):
            put(_string(o))
        elif o is None or o is True or o is False:
            put(_CONSTANTS[o])
        elif isinstance(o, int):
            put(int.__repr__(o))
        elif isinstance(o, float):
            put(_float(o))
        elif isinstance(o, (list, tuple)):
            if not o:
                put("[]")
                return
            inner = pad + "  "
            sep = "[" + inner
            for item in o:
                text = scalar(item)
                if text is None:
                    put(sep)
                    write(item, inner)
                else:
                    put(sep + text)
                sep = "," + inner
            put(pad + "]")
        elif isinstance(o, dict):
            if not o:
                put("{}")
                return
            inner = pad + "  "
            sep = "{" + inner
            for key, item in o.items():
                head = sep + _string(key if type(key) is str else _key(key)) + ": "
                text = scalar(item)
                if text is None:
                    put(head)
                    write(item, inner)
                else:
                    put(head + text)
                sep = "," + inner
            put(pad + "}")
        else:
            write(default(o), pad)

    write(value, "\n")
    return "".join(out)


def _stopped(names: tuple[str, ...]) -> str:
    """`a has stopped`, `a, b have stopped`: the jobs a decision's starts wait for."""
    return f"{', '.join(names)} {'has' if len(names) == 1 else 'have'} stopped"


def schema_lines(report: SchemaReport) -> list[str]:
    """What a start does to its sink's schema: a heading, then a line per column changed
    (`+` added, `-` dropped, `~` changed), per declared schema not met (`!`), and notes."""
    verdict = report.verdict + (", refused" if report.refused else "")
    lines = [f"schema of {report.sink}: {verdict} (on-schema-change: {report.policy})"]
    change = report.change
    required = set(change.get("required", []))
    lines += [
        f"  + {f['name']} {f['type']}"
        + (" NOT NULL (older files lack it: readers fail)" if f["name"] in required else "")
        for f in change.get("added", [])
    ]
    lines += [f"  - {f['name']} {f['type']}" for f in change.get("dropped", [])]
    lines += [f"  ~ {r['name']} {r['from']} -> {r['to']}" for r in change.get("retyped", [])]
    lines += [f"  ~ {r['from']} renamed {r['to']} ({r['type']})" for r in change.get("renamed", [])]
    if change.get("moved"):
        lines.append("  ~ columns moved (a positional format): " + ", ".join(change["moved"]))
    lines += [f"  ! {conflict}" for conflict in report.conflicts]
    lines += [f"  {note}" for note in report.notes]
    if report.readers:
        lines.append(f"  read by {', '.join(report.readers)}")
    return lines


def steps_lines(decision: Decision) -> list[str]:
    """What a decision will do, for people: its steps, then its rollback."""
    if not decision.steps:
        return []
    lines = ["do: " + ", then ".join(step.describe() for step in decision.steps)]
    order = [f"after {', '.join(decision.after)}"] if decision.after else []
    if decision.after_stops:
        order.append(f"starts once {_stopped(decision.after_stops)}")
    if order:
        lines[0] = "; ".join(order) + ": " + lines[0]
    if decision.stop_after:
        lines.append(f"stops after {', '.join(decision.stop_after)} stopped (they read it)")
    if decision.rollback:
        back = ", then ".join(step.describe() for step in decision.rollback)
        lines.append(
            f"if the new run is not healthy: stop it, then {back}; the store is left as it was"
        )
    lines.extend(f"downstream: {i.job} {i.effect}: {i.detail}" for i in decision.downstream)
    return lines


def plan_text(plan: Plan, color: bool = False) -> str:
    """The plan for people; `color`: SQL and code diffs coloured (for a terminal)."""
    if not plan.decisions:
        return "No jobs."
    width = max(len(d.name) for d in plan.decisions)
    action_width = max(len(d.action.value) for d in plan.decisions)
    lines = []
    for d in plan.decisions:
        version = f"v{d.version}" if d.version is not None else "-"
        lines.append(
            f"{d.name:<{width}}  {d.action.value:<{action_width}}  {version:<4}  {d.reason}"
        )
        for change in d.changes:
            first, *rest = change_lines(change, color)
            lines.append(f"{'':<{width}}    ~ {first}")
            lines.extend(f"{'':<{width}}      {line}" for line in rest)
        if d.schema is not None and d.schema.worth_saying:
            lines.extend(f"{'':<{width}}    {line}" for line in schema_lines(d.schema))
        if d.state is not None:
            lines.extend(f"{'':<{width}}    {line}" for line in state_lines(d.state))
        lines.extend(f"{'':<{width}}    {line}" for line in steps_lines(d))
    counts: dict[str, int] = {}
    for d in plan.decisions:
        counts[d.action.value] = counts.get(d.action.value, 0) + 1
    summary = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
    verdict = "changes pending" if plan.pending else "nothing to do"
    lines.append("")
    jobs = f"{len(plan.decisions)} job{'s' if len(plan.decisions) != 1 else ''}"
    lines.append(f"Plan: {jobs} ({summary}); {verdict}.")
    if any(d.action is Action.ERROR for d in plan.decisions):
        lines.append("Jobs marked `error` will not be touched; see their reasons above.")
    refused = [d for d in plan.decisions if d.action is Action.REFUSED]
    if any(d.state is None or not d.state.refused for d in refused):
        lines.append(
            "Jobs marked `refused` would break their sink's readers: nothing is stopped or "
            "started for them (docs/concepts/schema-contracts.md)."
        )
    if any(d.state is not None and d.state.refused for d in refused):
        lines.append(
            "Jobs marked `refused` for their state would write windows open at the change "
            "partial: nothing is stopped or started for them (docs/concepts/state.md)."
        )
    return "\n".join(lines)


def state_lines(report: StateReport) -> list[str]:
    """What a query change's new version does with state: a heading, what it comes to (a
    refusal says it in the reason), then a line per stateful operator with its verdict (`=`
    kept, `~` rebuilt, `?` unknown)."""
    refused = ", refused" if report.refused else ""
    lines = [f"state: {report.how}{refused} (on-state-change: {report.policy})"]
    if not report.refused:
        lines.append(f"  {report.summary}")
    marks = {"kept": "=", "rebuilt": "~", "unknown": "?"}
    lines += [f"  {marks.get(o.verdict, '?')} {o.line()}" for o in report.operators]
    return lines


def results_text(plan: Plan, results: dict[str, JobResult]) -> str:
    """What a deploy did, one block per job that was acted on, in plan order."""
    lines = []
    for decision in plan.decisions:
        result = results.get(decision.name)
        if result is None or (not decision.steps and result.outcome != "skipped"):
            continue  # nothing done; an error's reason is in the plan above
        mark = "ok  " if result.ok else RESULT_MARKS.get(result.outcome, "FAIL")
        lines.append(f"{mark} {decision.name}: {result.summary}")
        lines.extend(f"       {step}" for step in result.steps)
        lines.extend(f"       | {line}" for line in result.detail.splitlines())
    done = [results[d.name] for d in plan.decisions if d.name in results]
    failed = [r.name for r in done if not r.ok and r.outcome not in RESULT_MARKS]
    skipped = [r.name for r in done if r.outcome == "skipped"]
    unfinished = {
        outcome: [r.name for r in done if r.outcome == outcome] for outcome in INTERRUPTED_MARKS
    }
    lines.append("")
    if any(unfinished.values()):
        counts = [
            f"{len(names)} {outcome.replace('-', ' ')} ({', '.join(names)})"
            for outcome, names in [*unfinished.items(), ("failed", failed), ("skipped", skipped)]
            if names
        ]
        lines.append(
            f"Deploy interrupted: {', '.join(counts)}; deploy again to carry out the rest."
        )
    elif failed or skipped:
        said = [f"{len(failed)} failed: {', '.join(failed)}"] if failed else []
        said += [f"{len(skipped)} skipped: {', '.join(skipped)}"] if skipped else []
        lines.append(f"Deploy finished with {'; '.join(said)}.")
    else:
        lines.append("Deploy finished: all jobs ok.")
    return "\n".join(lines)
