"""Whether a saved plan (act/saved_plan.py) still holds, and the plan that carries it out.

A saved plan is carried out exactly or refused whole. `deploy --plan` loads the jobs as any
deploy does and asks `input_lines` whether what the jobs it acts on were decided from changed
(their files, the catalog files of their tables, the template, the environment values they name,
their manifests as merged and resolved); then, under the store's lock and before any step, it
gathers and decides as any deploy does and asks `world_lines` whether the store (of the jobs it
acts on and those they were decided against), the Spark the target runs, or what deploy would do
with each job it acts on changed. Any line refuses the plan. Otherwise `as_saved` keeps of the
plan decided now the decisions of the jobs the saved plan acts on (the same steps: compared
here) and leaves every other job alone, even one whose file changed since: the next plan shows
it.

Steps are compared by what they do (kind, version, clean or from the checkpoint, where, with
which offsets), not by the id of the run a stop names: a job that `watch` restarted since (same
version, from its checkpoint) is stopped as the plan says, whichever run of it is up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flink_sql_runner.act.plan_inputs import job_entry, store_entry, template_entry
from flink_sql_runner.act.saved_plan import SavedPlan
from flink_sql_runner.decide.decisions import Action, Decision, Plan
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.secrets import redact_text

#: What a step's record says that is not what it does: the run a stop names (its pid, its
#: application id) changes with every restart of the same version, and so does the step's
#: `text`, which names it too.
RUN_KEYS = ("run", "text")


def input_lines(
    saved: SavedPlan,
    jobs: list[Job],
    catalog: Catalog | None,
    template: Path,
    acting: list[str] | None = None,
) -> list[str]:
    """One line per input of a job the saved plan acts on (of `acting`, when given) that
    differs now."""
    inputs: dict[str, Any] = saved.doc["inputs"]
    desired = {job.name: job for job in jobs}
    lines: list[str] = []
    template_changed = False
    then_template = saved.doc.get("template")
    acting = saved.acting if acting is None else acting
    for name in acting:
        if name not in inputs and name in desired:  # a stored job the plan decided without a file
            lines.append(
                f"{name}: deployed from {desired[name].file} now; the plan decided it without a "
                "file (removed from the job paths)"
            )
    acting = [n for n in acting if n in inputs]
    if then_template and acting:
        # By content: the packaged template's path differs between two installations.
        if template_entry(template, saved.digests)["sha256"] != then_template["sha256"]:
            template_changed = True
            lines.append(f"template: {then_template['file']} changed since the plan")
    for name in acting:
        then = inputs[name]
        job = desired.get(name)
        if job is None:
            lines.append(f"{name}: {then['file']} is no longer among the jobs to deploy")
            continue
        now = job_entry(job, catalog, saved.digests)
        found = _job_lines(name, then, now)
        if not found and not template_changed and now["manifest-sha256"] != then["manifest-sha256"]:
            found = [f"{name}: its manifest, merged and resolved, changed since the plan"]
        lines += found
    return lines


def _job_lines(name: str, then: dict[str, Any], now: dict[str, Any]) -> list[str]:
    lines = []
    if now["file"] != then["file"]:
        lines.append(f"{name}: read from {now['file']} now, from {then['file']} at the plan")
    elif now["file-sha256"] != then["file-sha256"]:
        lines.append(f"{name}: {then['file']} {_changed(now['file-sha256'])}")
    for path in sorted({*then["table-files"], *now["table-files"]}):
        before, after = then["table-files"].get(path, "-"), now["table-files"].get(path, "-")
        if before == "-":
            lines.append(f"{name}: its tables are declared in {path} now, not at the plan")
        elif after == "-":
            lines.append(f"{name}: its tables are no longer declared in {path}")
        elif before != after:
            lines.append(f"{name}: {path} {_changed(after)}")
    for variable in sorted({*then["env"], *now["env"]}):
        before, after = then["env"].get(variable), now["env"].get(variable)
        if before != after:
            how = "is not set now" if after is None else (
                "is set now" if before is None else "changed since the plan")  # fmt: skip
            lines.append(f"{name}: environment variable {variable} {how}")
    if now["base"] != then["base"] and None not in (now["base"], then["base"]):
        lines.append(
            f"{name}: relative paths resolve against {now['base']} now, {then['base']} at the plan"
        )
    return lines


def _changed(now_digest: str | None) -> str:
    return "is gone since the plan" if now_digest is None else "changed since the plan"


def world_lines(
    saved: SavedPlan,
    facts: list[JobFacts],
    fresh: Plan,
    *,
    spark: str | None,
    store: str,
    acting: list[str] | None = None,
) -> list[str]:
    """One line per difference between the world the saved plan was decided in and the one
    `facts` and the plan decided now from them (`fresh`) show. `acting`: the jobs carried out
    (all the plan acts on unless said; `deploy-job` names one, and the store is checked of it
    and the jobs it was decided against)."""
    lines = []
    if saved.doc["store"] != store:
        lines.append(f"store: the plan was made for {saved.doc['store']}, this deploy's is {store}")
    if saved.doc["spark"] != spark:
        lines.append(
            f"spark: the target runs Spark {spark or 'of an unknown version'}, the plan was "
            f"judged for {saved.doc['spark'] or 'an unknown version'}"
        )
    against: dict[str, list[str]] = saved.doc["against"]
    names = None if acting is None else set(acting).union(*(against.get(n, ()) for n in acting))
    lines += store_lines(saved, facts, names)
    lines += decision_lines(saved, fresh, saved.acting if acting is None else acting)
    return lines


def target_lines(saved: SavedPlan, target: dict[str, str | None]) -> list[str]:
    """One line per setting that says where jobs run (act/settings.py's `where_jobs_run`) that
    differs from the plan's."""
    then: dict[str, str | None] = saved.doc["target"]
    lines = []
    for key in sorted({*then, *target}):
        before, after = then.get(key), target.get(key)
        if before != after:
            lines.append(
                f"target: {key}: the plan was made for {_said(before)}, this deploy's is "
                f"{_said(after)}"
            )
    return lines


def _said(value: str | None) -> str:
    return "none" if value is None else redact_text(value)


def store_lines(
    saved: SavedPlan, facts: list[JobFacts], names: set[str] | None = None
) -> list[str]:
    """What the store holds now of the jobs whose store the saved plan recorded (of `names`
    only, when given), where it differs (watch's restarts record nothing that differs:
    act/plan_inputs.py)."""
    by_name = {f.name: f for f in facts}
    lines = []
    for name, then in sorted(saved.doc["store-read"].items()):
        if names is not None and name not in names:
            continue
        fact = by_name.get(name)
        now = store_entry(fact, saved.digests) if fact is not None else _ABSENT
        if now["manifest-sha256"] != then["manifest-sha256"]:
            lines.append(_store_line(name, then["version"], now["version"]))
        if now["intent-sha256"] != then["intent-sha256"]:
            what = (
                "has an interrupted command's record it did not have"
                if then["intent-sha256"] is None
                else "its interrupted command's record is gone or changed"
            )
            lines.append(f"store: {name} {what} since the plan")
    return lines


_ABSENT = {"version": None, "manifest-sha256": None, "intent-sha256": None}


def _store_line(name: str, before: int | None, after: int | None) -> str:
    said = f"({_v(before)} -> {_v(after)})"
    if after is None:
        return f"store: {name} was removed from the store since the plan {said}"
    if before == after:
        return f"store: {name} was recorded again with other content since the plan ({_v(after)})"
    return f"store: {name} was deployed by another run since the plan {said}"


def _v(version: int | None) -> str:
    return "none" if version is None else f"v{version}"


def what_it_does(decision: dict[str, Any]) -> dict[str, Any]:
    """A decision as `--output json` has it, reduced to what it does."""
    return {
        "action": decision["action"],
        "query-version": decision.get("query-version"),
        "steps": [_step(s) for s in decision.get("steps", [])],
        "rollback": [_step(s) for s in decision.get("rollback", [])],
    }


def _step(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k not in RUN_KEYS}


def _steps_text(doc: dict[str, Any]) -> str:
    said = [f"{s['step']} v{s.get('query-version')}" if "query-version" in s else s["step"]
            for s in doc["steps"]]  # fmt: skip
    return f"{doc['action']}: {', '.join(said) or 'nothing'}"


def decision_lines(saved: SavedPlan, fresh: Plan, acting: list[str]) -> list[str]:
    """The jobs of `acting` whose decision now does otherwise than the saved plan's."""
    now = {d.name: d for d in fresh.decisions}
    lines = []
    for name in acting:
        then = what_it_does(saved.decisions[name])
        decision = now.get(name)
        if decision is None:
            lines.append(f"{name}: no longer among the jobs deployed (planned {_steps_text(then)})")
            continue
        found = what_it_does(decision.to_dict())
        if found != then:
            lines.append(
                f"{name}: deploy would now do otherwise (planned {_steps_text(then)}; now "
                f"{_steps_text(found)}): what runs or its checkpoint changed since the plan"
            )
    return lines


def as_saved(fresh: Plan, saved: SavedPlan, acting: list[str] | None = None) -> Plan:
    """The plan that carries the saved one out: the decisions of the jobs it acts on (checked
    the same by `world_lines`), every other job left alone."""
    acting = saved.acting if acting is None else acting
    decisions = saved.decisions
    kept = []
    for decision in fresh.decisions:
        then = decisions.get(decision.name)
        same_nothing = (
            then is not None
            and not then.get("steps")
            and not decision.steps
            and then["action"] == decision.action.value
        )
        if decision.name in acting or same_nothing:
            kept.append(decision)
        else:
            kept.append(
                Decision(
                    decision.name,
                    Action.NOOP,
                    decision.version,
                    "left alone: the saved plan does nothing with it (what changed since, the "
                    "next plan shows)",
                )
            )
    return Plan(tuple(kept))
