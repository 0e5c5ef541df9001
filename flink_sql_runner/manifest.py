"""Job manifests: loading, merging with the template, and validating them all at once."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from flink_sql_runner.catalog import (
    SINK_ONLY_FORMATS,
    SOURCE_ONLY_FORMATS,
    Catalog,
    definition_problems,
    file_format,
)
from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.files import yaml_files
from flink_sql_runner.schemas import document_problem, required_fields, schema_problems, shown
from flink_sql_runner.sinks import shared_sink_problems
from flink_sql_runner.sqlinfo import SqlProblem, code_problem, tables_read
from flink_sql_runner.yamlio import YamlProblem, read_yaml_file

#: Fields merged key by key with the template; every other field replaces the template's.
MERGED_KEY_BY_KEY = ("sparkProperties", "metadata-columns")
#: Fields whose text is the user's own and never gets placeholders replaced.
VERBATIM_FIELDS = ("sql", "code", "description")
#: Required fields the template usually provides.
TEMPLATE_FIELDS = ("checkpoint-root",)
#: Keys only a final (stored) manifest carries.
FINAL_MANIFEST_KEYS = ("schema-version", "tables", "meta")


@dataclass(frozen=True)
class Job:
    """One desired job: the merged manifest plus the definitions of the tables it uses."""

    spec: dict[str, Any]
    tables: dict[str, dict[str, Any]]
    source_tables: tuple[str, ...]
    file: str

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def desired_state(self) -> str:
        return str(self.spec.get("desired-state", "running"))

    @property
    def checkpoint_root(self) -> str:
        return str(self.spec["checkpoint-root"]).rstrip("/")

    def checkpoint_location(self, version: int) -> str:
        return f"{self.checkpoint_root}/{self.name}/{version}"


def packaged_template() -> Path:
    return Path(str(resources.files("flink_sql_runner._templates").joinpath("job-template.yaml")))


def load_template(path: Path | None) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The defaults template, or None when it cannot be read at all; its problems are
    reported with the jobs'."""
    path = path or packaged_template()
    try:
        doc = read_yaml_file(path)
    except YamlProblem as exc:
        return None, [exc.problem]
    if doc is None:
        return {}, []
    if not isinstance(doc, dict):
        return None, [document_problem(doc, str(path))]
    # Field by field: a broken field is reported once, here, and left out of the defaults, so
    # that no job repeats the template's mistake as its own.
    problems: list[Problem] = []
    template = {}
    for key, value in doc.items():
        found = final_only_problems({key: value}, str(path)) or [
            p for p in schema_problems({key: value}, "job", str(path)) if not _missing(p)
        ]
        problems += found
        if not found:
            template[key] = value
    return template, problems


def _missing(problem: Problem) -> bool:
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


class JobLoader:
    """Loads job files against one template and one catalog, collecting every problem."""

    def __init__(self, template: dict[str, Any] | None, catalog: Catalog, state_dir: Path):
        # None: the template could not be read (that is reported); jobs are not told that
        # they lack what it would have given them.
        self.template = template or {}
        self._template_fields = () if template is None else TEMPLATE_FIELDS
        self.catalog = catalog
        self._state_dir = str(state_dir.resolve())

    def load_file(self, path: Path, problems: list[Problem]) -> Job | None:
        source = str(path)
        try:
            doc = read_yaml_file(path)
        except YamlProblem as exc:
            problems.append(exc.problem)
            return None
        if not isinstance(doc, dict):
            problems.append(document_problem(doc, source))
            return None
        final = "meta" in doc
        if final:
            spec = doc
            found = schema_problems(doc, "job", source) + self._embedded_problems(doc, source)
        else:
            # The job's own fields, then what the merge with the template still lacks.
            found = final_only_problems(doc, source)
            doc = {k: v for k, v in doc.items() if k not in FINAL_MANIFEST_KEYS}
            spec = merge(self.template, doc)
            found += [p for p in schema_problems(doc, "job", source) if not _missing(p)]
            for field in required_fields("job"):
                if field in spec:
                    continue
                if field not in TEMPLATE_FIELDS:
                    found.append(Problem(source, field, "is required"))
                elif self._template_fields:
                    found.append(Problem(source, field, "is required (here or in the template)"))
        if found:
            problems.extend(found)
            return None
        spec = {k: v for k, v in spec.items() if k not in FINAL_MANIFEST_KEYS}
        spec = resolve_placeholders(spec, {"job_name": spec["name"], "state_dir": self._state_dir})
        if "sparkProperties" in spec:
            spec["sparkProperties"] = {
                k: property_text(v) for k, v in spec["sparkProperties"].items()
            }
        embedded = doc.get("tables") if final else None
        return self._check(spec, source, embedded, problems)

    @staticmethod
    def _embedded_problems(doc: dict[str, Any], source: str) -> list[Problem]:
        """A final manifest's table definitions are checked like the catalog's."""
        tables = doc.get("tables")
        if not isinstance(tables, dict):
            return []
        return [
            problem
            for name, definition in tables.items()
            if isinstance(definition, dict)
            for problem in definition_problems(
                {"name": name, **definition}, source, ("tables", name)
            )
        ]

    def _check(
        self,
        spec: dict[str, Any],
        source: str,
        embedded: dict[str, Any] | None,
        problems: list[Problem],
    ) -> Job | None:
        before = len(problems)

        def problem(field: str, message: str) -> None:
            problems.append(Problem(source, field, message))

        has_sql, has_code = "sql" in spec, "code" in spec
        sources: list[str] = []
        if has_sql == has_code:
            problem("sql", "set exactly one of `sql` or `code`")
        elif has_sql:
            if "source-tables" in spec:
                problem(
                    "source-tables", "only for `code` jobs; a `sql` job's tables come from its SQL"
                )
            try:
                sources = tables_read(spec["sql"])
            except SqlProblem as exc:
                problem("sql", str(exc))
        else:
            reason = code_problem(spec["code"])
            if reason:
                problem("code", reason)
            sources = list(spec.get("source-tables", []))

        tables: dict[str, dict[str, Any]] = {}
        for name in sources:
            definition = self._table(name, embedded)
            if definition is None:
                if name not in self.catalog.broken:
                    message = f"reads table {shown(name)}, which is not in the table catalog"
                    problem(field_for(has_code), message)
                continue
            fmt = definition.get("format")
            if fmt in SINK_ONLY_FORMATS:
                problem(
                    field_for(has_code), f"table {name!r} has format {fmt!r}, which cannot be read"
                )
            if file_format(fmt) and "schema" not in definition:
                problem(
                    field_for(has_code),
                    f"table {name!r} is a {file_format(fmt)} table read as a stream and needs a "
                    "`schema`",
                )
            tables[name] = definition

        target = spec["target-table"]
        target_def = self._table(target, embedded)
        if target_def is None:
            if target not in self.catalog.broken:
                problem("target-table", f"table {shown(target)} is not in the table catalog")
        else:
            fmt = target_def.get("format")
            if target in sources:
                problem(
                    "target-table",
                    f"the job also reads {target!r}; a job cannot write the table it reads",
                )
            if fmt in SOURCE_ONLY_FORMATS:
                problem(
                    "target-table", f"table {target!r} has format {fmt!r}, which cannot be written"
                )
            mode = spec.get("outputMode", "append")
            if file_format(fmt) and mode != "append":
                message = f"a {file_format(fmt)} target supports only `append`, got {mode!r}"
                problem("outputMode", message)
            tables[target] = target_def

        # A table whose definition has problems (reported with the catalog) is not reported
        # again as missing, but the job cannot be loaded either.
        uses_broken = any(t in self.catalog.broken for t in (*sources, target))
        if len(problems) > before or uses_broken:
            return None
        return Job(spec=spec, tables=tables, source_tables=tuple(sources), file=source)

    def _table(self, name: str, embedded: dict[str, Any] | None) -> dict[str, Any] | None:
        """A table's definition as this job uses it, `{state_dir}` resolved."""
        if embedded is not None and isinstance(embedded.get(name), dict):
            return embedded[name]
        table = self.catalog.get(name)
        if table is None:
            return None
        return resolve_placeholders(table.definition, {"state_dir": self._state_dir})


def field_for(has_code: bool) -> str:
    return "source-tables" if has_code else "sql"


def load_jobs(
    paths: list[Path],
    template_path: Path | None,
    catalog: Catalog,
    state_dir: Path,
    require_jobs: bool = True,
) -> list[Job]:
    """Every job under `paths`, validated together; InvalidInput lists every problem."""
    template, problems = load_template(template_path)
    files = yaml_files(paths, problems)
    if require_jobs and not files and not problems:
        problems.append(Problem(", ".join(map(str, paths)), "", "no *.yaml or *.yml job files"))
    loader = JobLoader(template, catalog, state_dir)
    jobs: list[Job] = []
    seen: dict[str, str] = {}
    for path in files:
        job = loader.load_file(path, problems)
        if job is None:
            continue
        if job.name in seen:
            problems.append(
                Problem(
                    job.file, "name", f"job {job.name!r} is already defined in {seen[job.name]}"
                )
            )
            continue
        seen[job.name] = job.file
        jobs.append(job)
    problems += shared_sink_problems(jobs)
    if problems:
        raise InvalidInput(problems)
    return sorted(jobs, key=lambda j: j.name)
