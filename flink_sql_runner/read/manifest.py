"""Job manifests: loading them, merged with the template (template.py), and validating them all
at once."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.read.catalog import (
    SINK_ONLY_FORMATS,
    SOURCE_ONLY_FORMATS,
    Catalog,
    definition_problems,
    file_format,
)
from flink_sql_runner.read.files import yaml_files
from flink_sql_runner.read.intervals import trigger_problems
from flink_sql_runner.read.kafka_start import checked_kafka_start
from flink_sql_runner.read.load_cache import Cached, LoadCache, Lookups, QueryRead, digest
from flink_sql_runner.read.names import BadName, TableName, from_parts, name_problem, parse_name
from flink_sql_runner.read.original import (
    flink_code_hint,
    flink_sql_hints,
    is_original,
    parse_failure_hint,
    with_original_hints,
)
from flink_sql_runner.read.paths import (
    SourceCheck,
    holds_paths,
    local_path,
    missing,
    resolve_paths,
)
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.read.schemas import (
    document_problem,
    required_fields,
    schema_of,
    schema_problems,
    shown,
)
from flink_sql_runner.read.sinks import (
    SinkId,
    SinkIndex,
    normalise_path,
    shared_sink_problems,
    target_sink,
)
from flink_sql_runner.read.sqlinfo import SqlProblem, code_problem, query_tables
from flink_sql_runner.read.template import (
    FINAL_MANIFEST_KEYS,
    final_only_problems,
    load_template,
    merge,
    property_text,
    resolve_placeholders,
)
from flink_sql_runner.read.yamlio import YamlProblem, parse_yaml, read_text_file

#: Required fields the template usually provides.
TEMPLATE_FIELDS = ("checkpoint-root",)
#: Said once when jobs name tables and no table is declared at all.
NO_CATALOG_HINT = (
    "no table is declared: pass the table catalog (YAML or SQL files, or folders of them) "
    "with --table-definition-path"
)


@dataclass(frozen=True)
class Job:
    """One desired job: the merged manifest plus the definitions of the tables it uses."""

    spec: dict[str, Any]
    tables: dict[str, dict[str, Any]]
    source_tables: tuple[str, ...]
    file: str
    #: The folder its relative paths were resolved against (read/paths.py); None: none were.
    base: str | None = None
    #: Its paths that were written relative: (field, as written).
    relative: tuple[tuple[str, str], ...] = ()

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

    def resolved(
        self, spec: dict[str, Any], tables: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Another manifest's fields and tables (a stored one, written before paths were
        resolved at load) with relative paths resolved as this job's were: against its base."""
        if self.base is None:
            return spec, tables
        spec, tables, _ = resolve_paths(spec, tables, self.base)
        return spec, tables


def _top_field(problem: Problem) -> str:
    """The top-level field a problem is about: `trigger` for `trigger.processingTime`,
    `source-tables` for `source-tables[0]`."""
    return problem.field.split(".", 1)[0].split("[", 1)[0]


def _embedded_table(problem: Problem) -> str | None:
    """The table of a final manifest's `tables` that a problem is about, if any."""
    if not problem.field.startswith("tables."):
        return None
    return problem.field.removeprefix("tables.").split(".", 1)[0]


#: The fields the job schema knows: a key beyond these is misspelt (`sqll`).
KNOWN_FIELDS = frozenset(schema_of("job")["properties"])


@dataclass(frozen=True)
class _MissingSource:
    """A source path a loaded job reads that is not there (a problem unless a job of the same
    deploy writes that folder: `JobLoader.source_problems`)."""

    file: str  # where the path is declared
    field: str
    table: str
    path: str  # as Spark will get it
    written: str | None  # as written, when it was relative
    job: str


class JobLoader:
    """Loads job files against one template and one catalog, collecting every problem."""

    def __init__(
        self,
        template: dict[str, Any] | None,
        catalog: Catalog,
        state_dir: Path,
        rules: PropertyRules | None = None,
        sources: SourceCheck = SourceCheck.NONE,
        base: Path | None = None,
        cache: LoadCache | None = None,
    ):
        """`sources`: which source paths must exist; `base`: the folder relative paths resolve
        against (the folder the command runs in, unless given); `cache`: what unchanged files
        read as before, reused (load_cache.py)."""
        # None: the template could not be read (that is reported); jobs are not told that
        # they lack what it would have given them.
        self.template = template or {}
        self._template_fields = () if template is None else TEMPLATE_FIELDS
        self.catalog = catalog
        self._state_dir = str(state_dir.resolve())
        self.rules = rules or PropertyRules()
        self.sources = sources
        self.base = os.path.abspath(base or os.getcwd())
        #: How many times a job named a table the catalog does not declare.
        self.missing_tables = 0
        self._missing_sources: list[_MissingSource] = []
        #: Whether each source path looked at is missing: looked at once per command, however
        #: many jobs read it.
        self._missing: dict[str, bool] = {}
        self.cache = cache
        #: Everything a job's read depends on beside its file and the catalog's answers.
        self._context = digest(
            [
                self.template,
                bool(self._template_fields),
                self._state_dir,
                self.base,
                self.rules.strict,
                self.rules.defaults,
            ]
        )

    def hints(self) -> list[str]:
        """What to do about the problems found so far, beyond what each says."""
        if self.missing_tables and not self.catalog.tables and not self.catalog.broken:
            return [NO_CATALOG_HINT]
        return []

    def load_file(self, path: Path, problems: list[Problem]) -> Job | None:
        source = str(path)
        try:
            text = read_text_file(path, "YAML")
        except YamlProblem as exc:
            problems.append(exc.problem)
            return None
        if self.cache is None:
            return self._load_text(text, source, problems, Lookups())
        known = self.cache.job(source, text, self._context, self.catalog)
        if known is not None:
            return self._reuse(known)
        before, warned, lookups = len(problems), len(self.rules.warnings), Lookups()
        job = self._load_text(text, source, problems, lookups)
        if job is not None and len(problems) == before:
            fields = {
                "spec": job.spec,
                "tables": job.tables,
                "source_tables": list(job.source_tables),
                "file": job.file,
                "base": job.base,
                "relative": [list(r) for r in job.relative],
            }
            warned_of = self.rules.warnings[warned:]
            cache = self.cache
            cache.keep_job(source, text, self._context, fields, warned_of, lookups, self.catalog)
        return job

    def _reuse(self, known: Cached) -> Job:
        """The job an unchanged file read as, with its warnings; its sources looked at again."""
        fields = known.job
        job = Job(
            fields["spec"],
            fields["tables"],
            tuple(fields["source_tables"]),
            fields["file"],
            fields["base"],
            tuple((str(f), str(w)) for f, w in fields["relative"]),
        )
        for warning in (Problem(*w) for w in known.warnings):
            if warning not in self.rules.warnings:
                self.rules.warnings.append(warning)

        def origin(declared: str, path: str) -> tuple[str, str]:
            if declared in known.embedded:
                return job.file, f"tables.{declared}.{path}"
            table = self.catalog.tables[declared]
            return table.file, table.field_of(path)

        if job.desired_state != "stopped":
            for name in job.source_tables:
                self._look_at_source(job, name, origin)
        return job

    def _load_text(
        self, text: str, source: str, problems: list[Problem], lookups: Lookups
    ) -> Job | None:
        try:
            doc = parse_yaml(text, source)
        except YamlProblem as exc:
            problems.append(exc.problem)
            return None
        if not isinstance(doc, dict):
            problems.append(document_problem(doc, source))
            return None
        final = "meta" in doc
        if final and is_original(doc):
            problems.append(
                Problem(
                    source,
                    "(document)",
                    "a final manifest of the original tool (`meta`, no `schema-version`): give "
                    "the job's own file, which is merged with the template, or convert stored "
                    "manifests with `flink-sql-runner migrate` (docs/how-to/migrate.md)",
                )
            )
            return None
        if final:
            spec = doc
            found = schema_problems(doc, "job", source) + self._embedded_problems(doc, source)
            found += table_name_problems(doc, source)
            found += trigger_problems(doc.get("trigger"), source)
            self.rules.check(doc.get("sparkProperties"), source, found)
        else:
            # The job's own fields, then what the merge with the template still lacks.
            found = final_only_problems(doc, source)
            doc = {k: v for k, v in doc.items() if k not in FINAL_MANIFEST_KEYS}
            spec = merge(self.template, doc)
            found += with_original_hints(schema_problems(doc, "job", source, partial=True))
            found += table_name_problems(spec, source)
            found += trigger_problems(doc.get("trigger"), source)
            self.rules.check(doc.get("sparkProperties"), source, found)
            for field in required_fields("job"):
                if field in spec:
                    continue
                if field not in TEMPLATE_FIELDS:
                    found.append(Problem(source, field, "is required"))
                elif self._template_fields:
                    found.append(Problem(source, field, "is required (here or in the template)"))
        if found:
            # Not loaded, but every other check still runs on the fields that are sound (its
            # query, its tables), so that one pass says all that must change.
            problems.extend(found)
            tables = doc.get("tables") if final else None
            if final and not isinstance(tables, dict):
                return None  # reported; its tables cannot be told
            self._check(
                dict(spec),
                source,
                tables,
                problems,
                Lookups(),
                unsound=frozenset(_top_field(p) for p in found),
                unsound_tables=frozenset(filter(None, map(_embedded_table, found))),
                misspelt=bool(set(doc) - KNOWN_FIELDS),
            )
            return None
        spec = {k: v for k, v in spec.items() if k not in FINAL_MANIFEST_KEYS}
        spec = resolve_placeholders(spec, {"job_name": spec["name"], "state_dir": self._state_dir})
        if "sparkProperties" in spec:
            spec["sparkProperties"] = {
                k: property_text(v) for k, v in spec["sparkProperties"].items()
            }
        embedded = doc.get("tables") if final else None
        return self._check(spec, source, embedded, problems, lookups)

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

    def _read_query(self, source: str, sql: str, lookups: Lookups) -> QueryRead:
        """The tables a query reads and its CTEs: as the last read of the same file found them
        in the same text (load_cache.py), else parsed now; SqlProblem if it is not one query."""
        known = self.cache.query(source, sql) if self.cache is not None else None
        if known is None:
            known = query_tables(sql)
        lookups.query = sql, known
        return known

    def _check(
        self,
        spec: dict[str, Any],
        source: str,
        embedded: dict[str, Any] | None,
        problems: list[Problem],
        lookups: Lookups,
        unsound: frozenset[str] = frozenset(),
        unsound_tables: frozenset[str] = frozenset(),
        misspelt: bool = False,
    ) -> Job | None:
        """The checks that need the catalog; None when the job has problems. `unsound`: the
        job's fields that have problems already reported (their checks are skipped);
        `unsound_tables`: the final manifest's tables that have; `misspelt`: the job has a
        field the schema does not know, perhaps meant as `sql` or `code`; `lookups` notes what
        the catalog was asked (load_cache.py)."""
        before = len(problems)

        def problem(field: str, message: str) -> None:
            problems.append(Problem(source, field, message))

        has_sql, has_code = "sql" in spec, "code" in spec
        read: list[TableName] = []
        ctes: frozenset[str] = frozenset()
        if has_sql == has_code:
            if has_sql or not misspelt:  # else the misspelt field was told as unknown
                problem("sql", "set exactly one of `sql` or `code`")
        elif has_sql:
            if "source-tables" in spec:
                problem(
                    "source-tables", "only for `code` jobs; a `sql` job's tables come from its SQL"
                )
            if "sql" not in unsound:
                try:
                    references, ctes = self._read_query(source, spec["sql"], lookups)
                except SqlProblem as exc:
                    problem("sql", str(exc) + parse_failure_hint(spec["sql"]))
                    references = []
                for hint in flink_sql_hints(spec["sql"]):
                    problem("sql", hint)
                for parts in references:
                    try:
                        read.append(from_parts(parts))
                    except BadName as exc:
                        problem("sql", f"reads table {exc}")
        else:
            if "code" not in unsound:
                reason = code_problem(spec["code"]) or flink_code_hint(spec["code"])
                if reason:
                    problem("code", reason)
            if "source-tables" not in unsound:
                read = [parse_name(text) for text in spec.get("source-tables", [])]

        resolver = _Resolver(
            self.catalog, embedded, _case_sensitive(spec), self._state_dir, lookups, unsound_tables
        )
        sources: list[str] = []
        tables: dict[str, dict[str, Any]] = {}
        for name in read:
            canonical, definition = resolver.resolve(name)
            if canonical in tables:
                continue  # the same table, written another way
            if definition is None or canonical is None:
                if not resolver.broken(name):
                    self.missing_tables += 1
                    problem(field_for(has_code), "reads " + resolver.missing(name))
                continue
            fmt = definition.get("format")
            if fmt in SINK_ONLY_FORMATS:
                problem(
                    field_for(has_code),
                    f"table {canonical!r} has format {fmt!r}, which cannot be read",
                )
            if file_format(fmt) and "schema" not in definition:
                problem(
                    field_for(has_code),
                    f"table {canonical!r} is a {file_format(fmt)} table read as a stream and "
                    "needs a `schema`",
                )
            if fmt in FIXED_SCHEMAS and "schema" in definition:
                problem(
                    field_for(has_code),
                    f"table {canonical!r} is a {fmt} table, whose columns Spark fixes "
                    f"({FIXED_SCHEMAS[fmt]}): drop its `schema` (its columns)",
                )
            sources.append(canonical)
            tables[canonical] = definition
        _view_problems(sources, ctes, field_for(has_code), problem)
        if "kafka-start" in spec and "kafka-start" not in unsound:
            kafka = tuple(s for s in sources if tables[s].get("format") == "kafka")
            broken = any(resolver.broken(name) for name in read)
            spec["kafka-start"] = checked_kafka_start(
                spec["kafka-start"], None if broken else kafka, problem
            )

        if "target-table" not in spec or "target-table" in unsound:
            return None  # reported
        target_name = parse_name(spec["target-table"])
        target, target_def = resolver.resolve(target_name)
        if target_def is None or target is None:
            if not resolver.broken(target_name):
                self.missing_tables += 1
                problem("target-table", resolver.missing(target_name, read=False))
        else:
            spec["target-table"] = target
            fmt = target_def.get("format")
            if target in sources:
                problem(
                    "target-table",
                    f"the job also reads {target!r}; a job cannot write the table it reads",
                )
            for canonical in sources:
                view = parse_name(canonical).view
                if canonical != target and view.lower() == target.lower():
                    problem(
                        "target-table",
                        f"table {canonical!r} is read as view {view!r}, the name of the table "
                        "the job writes; rename one",
                    )
            if fmt in SOURCE_ONLY_FORMATS:
                problem(
                    "target-table", f"table {target!r} has format {fmt!r}, which cannot be written"
                )
            mode = spec.get("outputMode", "append")
            if file_format(fmt) and mode != "append" and "outputMode" not in unsound:
                message = f"a {file_format(fmt)} target supports only `append`, got {mode!r}"
                problem("outputMode", message)
            tables[target] = target_def
        if has_code and "source-tables" in spec:
            spec["source-tables"] = sources

        # A table whose definition has problems (reported with the catalog) is not reported
        # again as missing, but the job cannot be loaded either.
        uses_broken = any(resolver.broken(name) for name in (*read, target_name))
        if len(problems) > before or uses_broken or unsound:
            return None
        spec, tables, relative = resolve_paths(spec, tables, self.base)
        job = Job(spec, tables, tuple(sources), source, self.base, relative)
        if job.desired_state != "stopped":  # a job stopped because its input went away
            for name in sources:
                self._look_at_source(
                    job, name, lambda declared, path: resolver.origin(declared, job.file, path)
                )
        return job

    def _look_at_source(
        self, job: Job, name: str, origin: Callable[[str, str], tuple[str, str]]
    ) -> None:
        """Note a source's path that is not there, if this command looks at it. `origin`:
        the file and field where a field of a table is written."""
        options = job.tables[name].get("options")
        if self.sources is SourceCheck.NONE or not isinstance(options, dict):
            return
        written = dict(job.relative)
        for key, value in options.items():
            field = f"tables.{name}.options.{key}"
            if str(key).lower() != "path" or not holds_paths(job.tables[name]):
                continue
            path = local_path(value)
            relative = written.get(field)
            if path is None or (relative is None and self.sources is not SourceCheck.LOCAL):
                continue
            gone = self._missing.get(path)
            if gone is None:
                gone = self._missing[path] = missing(path)
            if gone:
                file, where = origin(name, f"options.{key}")
                self._missing_sources.append(
                    _MissingSource(file, where, name, str(value), relative, job.name)
                )

    def source_problems(self, jobs: list[Job]) -> list[Problem]:
        """The missing source paths of `jobs`, one problem per declaration, naming the jobs that
        read it; a folder one of `jobs` writes need not exist yet (a pipeline's next stage)."""
        if not self._missing_sources:
            return []
        sinks = SinkIndex(
            (sink, job.name)
            for job in jobs
            if (sink := target_sink(job.name, job.spec, job.tables))
        )
        loaded = {job.name for job in jobs}
        readers: dict[tuple[str, str, str, str, str | None], list[str]] = {}
        for found in self._missing_sources:
            folder = SinkId("folder", normalise_path(found.path, found.job))
            if found.job not in loaded or sinks.overlapping(folder):
                continue
            key = (found.file, found.field, found.table, found.path, found.written)
            readers.setdefault(key, []).append(found.job)
        problems = []
        for (file, field, table, path, written), names in readers.items():
            message = f"table {table!r}: {path} does not exist"
            if written is not None:
                message += (
                    f" ({written}, resolved against {self.base}, the folder this command runs in)"
                )
            jobs_text = ", ".join(repr(n) for n in sorted(set(names)))
            message += f"; read by job{'s' if len(set(names)) > 1 else ''} {jobs_text}"
            problems.append(Problem(file, field, message))
        return problems


#: Formats whose columns Spark fixes: a user-specified schema is refused when reading.
FIXED_SCHEMAS = {
    "kafka": "key, value, topic, partition, offset, timestamp, timestampType",
    "rate": "timestamp, value",
    "rate-micro-batch": "timestamp, value",
    "socket": "value",
}


def _case_sensitive(spec: dict[str, Any]) -> bool:
    """Spark's `spark.sql.caseSensitive` as the job sets it (false unless set)."""
    properties = spec.get("sparkProperties")
    value = properties.get("spark.sql.caseSensitive") if isinstance(properties, dict) else None
    return str(value).strip().lower() == "true"


class _Resolver:
    """Table names to definitions, as Spark resolves them: the final manifest's own tables
    (when it has them), else the catalog's; part by part, ignoring case unless the job sets
    `spark.sql.caseSensitive`."""

    def __init__(
        self,
        catalog: Catalog,
        embedded: dict[str, Any] | None,
        sensitive: bool,
        state_dir: str,
        lookups: Lookups,
        unsound: frozenset[str] = frozenset(),
    ):
        self.catalog = catalog
        self.lookups = lookups  # what the catalog was asked
        self.embedded = embedded
        self.sensitive = sensitive
        self.state_dir = state_dir
        self.unsound = unsound  # the embedded tables whose definitions have problems
        self._embedded_keys: dict[tuple[str, ...], str] = {}
        for key in embedded or {}:
            try:
                self._embedded_keys[parse_name(str(key)).key] = str(key)
            except BadName:
                continue  # reported with the manifest's tables

    def declared(self, name: TableName) -> str | None:
        if self.embedded is not None and name.key in self._embedded_keys:
            found: str | None = self._embedded_keys[name.key]
        else:
            found = self._canonical(name)
        if found is not None and self.sensitive and parse_name(found).parts != name.parts:
            return None
        return found

    def resolve(self, name: TableName) -> tuple[str | None, dict[str, Any] | None]:
        """The declared name `name` resolves to, and the definition as this job uses it
        (`{state_dir}` resolved)."""
        declared = self.declared(name)
        if declared is None or declared in self.unsound:
            return declared, None
        if self.embedded is not None and isinstance(self.embedded.get(declared), dict):
            self.lookups.embedded.add(declared)
            return declared, self.embedded[declared]
        self.lookups.tables.add(declared)
        table = self.catalog.tables.get(declared)
        if table is None:
            return declared, None
        return declared, resolve_placeholders(table.definition, {"state_dir": self.state_dir})

    def origin(self, declared: str, job_file: str, path: str) -> tuple[str, str]:
        """The file and field where a field (`options.path`) of a table this job uses is
        written: the final manifest's own tables, else the catalog's."""
        if self.embedded is not None and declared in self.embedded:
            return job_file, f"tables.{declared}.{path}"
        self.lookups.tables.add(declared)
        table = self.catalog.tables[declared]
        return table.file, table.field_of(path)

    def _canonical(self, name: TableName) -> str | None:
        found = self.catalog.canonical(name)
        self.lookups.canonical[name.key] = found
        return found

    def broken(self, name: TableName) -> bool:
        declared = self.declared(name)
        if declared is not None:
            self.lookups.tables.add(declared)
        return declared in self.catalog.broken or declared in self.unsound

    def missing(self, name: TableName, read: bool = True) -> str:
        """Why `name` is not found, in words: how it was read, and what the catalog has."""
        text = f"table {shown(str(name))}"
        if len(name.parts) > 1 or str(name) != name.parts[0]:
            text += f" (read as {name.reading()})"
        text += ", which is not in the table catalog" if read else " is not in the table catalog"
        declared = self._canonical(name)
        if declared is not None and self.sensitive:
            return text + f" (spark.sql.caseSensitive is true; the catalog has {declared!r})"
        similar = [n for n in self.catalog.same_table_name(name) if n != str(name)]
        if similar:
            text += "; the catalog has " + ", ".join(repr(n) for n in similar[:3])
        return text


def _view_problems(
    sources: list[str], ctes: frozenset[str], field: str, problem: Callable[[str, str], None]
) -> None:
    """Each source is registered as a view (`TableName.view`): two of them, or one and a CTE,
    must not share that name."""
    seen: dict[str, str] = {}
    for canonical in sources:
        view = parse_name(canonical).view
        if view != canonical and view.lower() in ctes:
            problem(field, f"table {canonical!r} is read as view {view!r}, the name of a CTE here")
        if view.lower() in seen:
            problem(
                field,
                f"tables {seen[view.lower()]!r} and {canonical!r} would both be read as view "
                f"{view!r}; rename one",
            )
        seen[view.lower()] = canonical


def table_name_problems(spec: dict[str, Any], source: str) -> list[Problem]:
    """The job's table names that Spark SQL would not read as this product needs them."""
    named = [("target-table", spec.get("target-table"))]
    tables = spec.get("source-tables")
    if isinstance(tables, list):
        named += [(f"source-tables[{i}]", text) for i, text in enumerate(tables)]
    found = []
    for field, text in named:
        problem = name_problem(text) if isinstance(text, str) else None
        if problem:
            found.append(Problem(source, field, problem))
    return found


def field_for(has_code: bool) -> str:
    return "source-tables" if has_code else "sql"


def load_jobs(
    paths: list[Path],
    template_path: Path | None,
    catalog: Catalog,
    state_dir: Path,
    require_jobs: bool = True,
    rules: PropertyRules | None = None,
    sources: SourceCheck = SourceCheck.NONE,
    cache: LoadCache | None = None,
) -> list[Job]:
    """Every job under `paths`, validated together; InvalidInput lists every problem.
    `rules` say how properties are checked (and collect the warnings); `sources`, which source
    paths must exist (relative ones resolve against the folder the command runs in); `cache`,
    what unchanged files read as before (load_cache.py)."""
    template, problems = load_template(template_path, rules)
    files = yaml_files(paths, problems)
    if require_jobs and not files and not problems:
        problems.append(Problem(", ".join(map(str, paths)), "", "no *.yaml or *.yml job files"))
    loader = JobLoader(template, catalog, state_dir, rules, sources, cache=cache)
    jobs: list[Job] = []
    seen: dict[str, str] = {}
    for job in [loader.load_file(path, problems) for path in files]:
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
    problems += loader.source_problems(jobs)
    if problems:
        raise InvalidInput(problems, loader.hints())
    return sorted(jobs, key=lambda j: j.name)
