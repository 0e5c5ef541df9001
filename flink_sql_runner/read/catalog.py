"""The table catalog: sources and sinks shared by jobs, declared once in YAML or SQL files."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.read.ddl import SQL_SUFFIXES, parse_sql_tables
from flink_sql_runner.read.ddl_parser import JAVA_LONG
from flink_sql_runner.read.files import YAML_SUFFIXES, yaml_files
from flink_sql_runner.read.formats import (  # noqa: F401 (used by other modules)
    FILE_FORMATS,
    KNOWN_BY_LOWER,
    KNOWN_FORMATS,
    SINK_ONLY_FORMATS,
    SOURCE_ONLY_FORMATS,
    TABLE_FORMATS,
    file_format,
)
from flink_sql_runner.read.load_cache import LoadCache
from flink_sql_runner.read.names import BadName, TableName, name_problem, parse_name
from flink_sql_runner.read.schemas import document_problem, field_path, schema_problems
from flink_sql_runner.read.yamlio import YamlProblem, parse_yaml, read_text_file


@dataclass(frozen=True)
class Table:
    name: str
    definition: dict[str, Any]  # as declared, without `name` and `description`
    file: str
    #: Where in its file it is declared: `tables[2]` in YAML; in SQL, the lines of its fields.
    at: str = ""
    lines: dict[str, int] | None = field(default=None, compare=False, hash=False)

    @property
    def format(self) -> str | None:
        return self.definition.get("format")

    def field_of(self, path: str) -> str:
        """How a problem names one of its fields (`options.path`): `tables[2].options.path` in
        YAML, the field's line (`line 7`) in SQL."""
        if self.lines is None:
            return f"{self.at}.{path}" if self.at else path
        while path and path not in self.lines:
            path = path.rpartition(".")[0]
        return f"line {self.lines.get(path, self.lines.get('name', 0))}"


@dataclass(frozen=True)
class Catalog:
    """The tables by canonical name (`names.TableName`'s text); looked up as Spark resolves
    names: part by part, ignoring case and backticks."""

    tables: dict[str, Table]
    #: Names declared by definitions that have problems (already reported): a job using one
    #: is not told again that the table is missing.
    broken: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        index = {parse_name(name).key: name for name in (*self.tables, *self.broken)}
        object.__setattr__(self, "_index", index)

    def canonical(self, name: TableName) -> str | None:
        """The declared name of the table `name` resolves to (broken ones included)."""
        return self.canonical_key(name.key)

    def canonical_key(self, key: tuple[str, ...]) -> str | None:
        """The declared name of the table whose name has the key `key` (`TableName.key`)."""
        found: str | None = self._index.get(key)  # type: ignore[attr-defined]
        return found

    def resolve(self, name: TableName) -> Table | None:
        canonical = self.canonical(name)
        return self.tables.get(canonical) if canonical else None

    def is_broken(self, name: TableName) -> bool:
        return self.canonical(name) in self.broken

    def get(self, name: str) -> Table | None:
        try:
            return self.resolve(parse_name(name))
        except BadName:
            return None

    def same_table_name(self, name: TableName) -> list[str]:
        """Declared names whose last part is `name`'s: what a user may have meant."""
        return sorted(n for n in self.tables if parse_name(n).key[-1] == name.key[-1])


def load_catalog(paths: list[Path], cache: LoadCache | None = None) -> Catalog:
    """Read every table file; raise InvalidInput listing every problem in every file."""
    catalog, problems = read_catalog(paths, cache)
    if problems:
        raise InvalidInput(problems)
    return catalog


def table_files(paths: list[Path], problems: list[Problem]) -> list[Path]:
    """The YAML and SQL files named or below the named folders."""
    return yaml_files(paths, problems, YAML_SUFFIXES + SQL_SUFFIXES)


class _Declarations:
    """The tables read so far, by key: a name declared twice (in any file, in either form, in
    any case) is reported where it is declared again."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.broken: set[str] = set()
        self.where: dict[tuple[str, ...], str] = {}
        #: Every table declared without a problem, as declared: (entry, place, lines).
        self.declared: list[tuple[dict[str, Any], str, dict[str, int] | None]] = []

    def add(
        self,
        entry: dict[str, Any],
        source: str,
        ok: bool,
        duplicate: Callable[[str], Problem],
        at: str = "",
        lines: dict[str, int] | None = None,
    ) -> Problem | None:
        name = parse_name(entry["name"])
        if name.key in self.where:
            return duplicate(f"table {str(name)!r} is already defined in {self.where[name.key]}")
        self.where[name.key] = source
        canonical = str(name)
        if not ok:
            self.broken.add(canonical)
        else:
            definition = {k: v for k, v in entry.items() if k not in ("name", "description")}
            self.tables[canonical] = Table(canonical, definition, source, at, lines)
            self.declared.append((entry, at, lines))
        return None

    def again(
        self, entry: dict[str, Any], source: str, at: str, lines: dict[str, int] | None
    ) -> Problem | None:
        """Declare a table as an earlier read of its unchanged file did (`LoadCache`)."""
        where = f"line {lines['name']}" if lines is not None else f"{at}.name"
        return self.add(entry, source, True, lambda m: Problem(source, where, m), at, lines)

    def catalog(self) -> Catalog:
        return Catalog(self.tables, frozenset(self.broken))


def read_catalog(
    paths: list[Path], cache: LoadCache | None = None
) -> tuple[Catalog, list[Problem]]:
    """Every table file: the tables without problems, and every problem in every file.
    `cache`: what unchanged files declared before, reused (load_cache.py)."""
    problems: list[Problem] = []
    declared = _Declarations()
    for path in table_files(paths, problems):
        _read_file(path, cache, declared, problems)
    return declared.catalog(), problems


def _read_file(
    path: Path, cache: LoadCache | None, declared: _Declarations, problems: list[Problem]
) -> None:
    source, sql = str(path), path.suffix.lower() in SQL_SUFFIXES
    try:
        text = read_text_file(path, "SQL" if sql else "YAML")
    except YamlProblem as exc:
        problems.append(exc.problem)
        return
    known = cache.table_file(source, text) if cache is not None else None
    if known is not None:
        problems.extend(filter(None, (declared.again(e, source, a, ls) for e, a, ls in known)))
        return
    before, first = len(problems), len(declared.declared)
    if sql:
        _read_sql_text(text, source, declared, problems)
    else:
        _read_yaml_text(text, source, declared, problems)
    if cache is not None and len(problems) == before:
        cache.keep_table_file(source, text, declared.declared[first:])


def _read_yaml_text(
    text: str, source: str, declared: _Declarations, problems: list[Problem]
) -> None:
    try:
        doc = parse_yaml(text, source)
    except YamlProblem as exc:
        problems.append(exc.problem)
        return
    if not isinstance(doc, dict):
        problems.append(document_problem(doc, source))
        return
    problems.extend(
        p for p in schema_problems(doc, "tables", source) if not p.field.startswith("tables[")
    )
    entries = doc.get("tables")
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        field, at = f"tables[{index}]", ("tables", index)
        if not isinstance(entry, dict):
            problems.extend(schema_problems(entry, "tables", source, "table", at))
            continue
        found = definition_problems(entry, source, at)
        problems.extend(found)
        if not isinstance(entry.get("name"), str) or any(p.field == f"{field}.name" for p in found):
            continue
        duplicate = declared.add(
            entry, source, not found, lambda m, f=field: Problem(source, f"{f}.name", m), field
        )
        if duplicate:
            problems.append(duplicate)


def _read_sql_text(
    text: str, source: str, declared: _Declarations, problems: list[Problem]
) -> None:
    """A file of CREATE TABLE statements: the entries they declare, checked like YAML ones;
    every problem is named by its line and table."""
    tables, found = parse_sql_tables(text, source)
    problems.extend(found)
    for table in tables:
        own = [] if not table.ok else definition_problems(table.entry, source, ())
        for problem in own:
            field = problem.field.lstrip(".")
            message = f"table {table.name}: {_clause(field)}: {problem.message}"
            problems.append(Problem(source, f"line {table.line_of(field)}", message))
        line = f"line {table.lines['name']}"
        duplicate = declared.add(
            table.entry,
            source,
            table.ok and not own,
            lambda m, where=line: Problem(source, where, m),
            lines=table.lines,
        )
        if duplicate:
            problems.append(duplicate)


def _clause(field: str) -> str:
    """The part of a CREATE TABLE statement a field of its entry comes from."""
    head, _, rest = field.partition(".")
    if head == "options":
        return f"OPTIONS {rest}" if rest else "OPTIONS"
    clauses = {
        "format": "USING",
        "schema": "columns",
        "watermark": "WATERMARK",
        "description": "COMMENT",
        "table": "name",
    }
    return clauses.get(head, field)


def definition_problems(entry: dict[str, Any], source: str, at: tuple[Any, ...]) -> list[Problem]:
    """Every problem of one table entry (`name` and definition) at field `at` of `source`:
    the schema's and the name's first, then (only when there are none) the semantic checks."""
    found = schema_problems(entry, "tables", source, "table", at)
    name = entry.get("name")
    problem = name_problem(name) if isinstance(name, str) else None
    if problem:
        found.append(Problem(source, f"{field_path(at)}.name" if at else "name", problem))
    if found:
        return found
    return [Problem(source, f"{field_path(at)}.{f}", m) for f, m in _semantic_problems(entry)]


#: Placeholders an option value may hold (and ${ENV_VAR}).
PLACEHOLDERS = ("job_name", "query_version", "state_dir")
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _placeholder_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """Option values with a `{name}` this product does not replace (the original tool's
    `{group_id}`, say): Spark would get the braces as they are."""
    found = []
    options = entry.get("options")
    for key, value in (options if isinstance(options, dict) else {}).items():
        for name in _PLACEHOLDER.findall(value) if isinstance(value, str) else ():
            if name in PLACEHOLDERS:
                continue
            was = (
                " (the original tool's {group_id} was rta-{job_name}-{query_version})"
                if name == "group_id"
                else ""
            )
            found.append(
                (
                    f"options.{key}",
                    f"unknown placeholder {{{name}}}: option values may use {{job_name}}, "
                    f"{{query_version}}, {{state_dir}} and ${{ENV_VAR}}{was}",
                )
            )
    return found


def _number_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """Option numbers no option can mean: an infinity or NaN (YAML's `.inf`, `.nan`, or a
    float too large, which YAML reads as `.inf`), an integer beyond a Java long. Spark would get
    the text `inf` or `nan`, or a number no option takes."""
    found = []
    options = entry.get("options")
    for key, value in (options if isinstance(options, dict) else {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            shown = ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
        elif isinstance(value, int) and value not in JAVA_LONG:
            shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:20]}…"
        else:
            continue
        found.append(
            (
                f"options.{key}",
                f"{shown} is not a number Spark reads as one; quote it to pass it as text",
            )
        )
    return found


def _semantic_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
    placeholders = _placeholder_problems(entry)
    return placeholders + _number_problems(entry) + _format_problems(entry)


def _format_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
    has_format, has_table = "format" in entry, "table" in entry
    if has_format == has_table:
        return [
            (
                "format",
                "set exactly one of `format` (a path/format table) or `table` (a catalog table)",
            )
        ]
    found = [
        (
            f"options.{key}",
            "the deployer sets the checkpoint location per version "
            "(<checkpoint-root>/<name>/<version>); remove it",
        )
        for key in (entry.get("options") or {})
        if str(key).lower() == "checkpointlocation"
    ]
    fmt = entry.get("format")
    if not isinstance(fmt, str) or fmt in KNOWN_FORMATS:
        return found
    known = KNOWN_BY_LOWER.get(fmt.lower())
    if known is not None:
        return [
            *found,
            ("format", f"write {fmt!r} as {known!r}; the deployer matches names exactly"),
        ]
    close = difflib.get_close_matches(fmt.lower(), list(KNOWN_BY_LOWER), n=1, cutoff=0.8)
    if close:
        found.append(
            (
                "format",
                f"unknown format {fmt!r}; did you mean {KNOWN_BY_LOWER[close[0]]!r}? (another "
                "data source: give its fully qualified class name)",
            )
        )
    return found
