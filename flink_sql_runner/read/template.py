"""The defaults template every job is merged over (`templates/job-template.yaml` unless
--template-file), and the merge: the job's values win; some mappings merge key by key; placeholders
resolved in every value but the user's own text."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.intervals import trigger_problems
from flink_sql_runner.read.original import with_original_hints
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.read.schemas import document_problem, schema_problems
from flink_sql_runner.read.yamlio import YamlProblem, read_yaml_file

#: Fields merged key by key with the template; every other field replaces the template's.
MERGED_KEY_BY_KEY = ("sparkProperties", "metadata-columns")


#: Fields whose text is the user's own and never gets placeholders replaced.
VERBATIM_FIELDS = ("sql", "code", "description")


#: Keys only a final (stored) manifest carries.
FINAL_MANIFEST_KEYS = ("schema-version", "tables", "meta", "migrated-from")


def packaged_template() -> Path:
    return Path(str(resources.files("flink_sql_runner._templates").joinpath("job-template.yaml")))


def load_template(
    path: Path | None, rules: PropertyRules | None = None
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The defaults template, or None when it cannot be read at all; its problems are
    reported with the jobs'. `rules` check its properties and add their defaults."""
    rules = rules or PropertyRules()
    path = path or packaged_template()
    try:
        doc = read_yaml_file(path)
    except YamlProblem as exc:
        return None, [exc.problem]
    if doc is None:
        return rules.complete({}), []
    if not isinstance(doc, dict):
        return None, [document_problem(doc, str(path))]
    # Field by field: a broken field is reported once, here, and left out of the defaults, so
    # that no job repeats the template's mistake as its own.
    problems: list[Problem] = []
    template = {}
    for key, value in doc.items():
        found = final_only_problems({key: value}, str(path)) or with_original_hints(
            schema_problems({key: value}, "job", str(path), partial=True)
        )
        if not found and key == "trigger":
            found = trigger_problems(value, str(path))
        problems += found
        if not found:
            template[key] = value
    rules.check(template.get("sparkProperties"), str(path), problems)
    return rules.complete(template), problems


def missing_field(problem: Problem) -> bool:
    return problem.message == "is required"


def final_only_problems(doc: dict[str, Any], source: str) -> list[Problem]:
    """Fields of a final manifest found where the user writes jobs or defaults."""
    return [
        Problem(source, key, "only a final manifest (as stored, with `meta`) has this field")
        for key in FINAL_MANIFEST_KEYS
        if key in doc
    ]


def merge(template: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """The job over the template: the job's values win; some mappings merge key by key."""
    merged = {**template, **job}
    for key in MERGED_KEY_BY_KEY:
        base, own = template.get(key), job.get(key)
        if isinstance(base, dict) and isinstance(own, dict):
            merged[key] = {**base, **own}
    return merged


def resolve_placeholders(spec: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """Replace `{job_name}`-style placeholders in every string value but the user's own text."""

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            if "{" not in value:
                return value
            for key, replacement in values.items():
                value = value.replace("{" + key + "}", replacement)
            return value
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    return {k: (v if k in VERBATIM_FIELDS else resolve(v)) for k, v in spec.items()}


def property_text(value: Any) -> str:
    """Spark reads every property as text; YAML booleans become `true`/`false`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
