"""The table catalog: sources and sinks shared by jobs, declared once in YAML."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.files import yaml_files
from flink_sql_runner.schemas import document_problem, field_path, schema_problems
from flink_sql_runner.yamlio import YamlProblem, read_yaml_file

#: Formats Spark's file sink writes; the only output mode it supports is append. (`avro` needs
#: the spark-avro package on the cluster; it is a file format all the same.)
FILE_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text", "avro"})
#: Formats that can only be read.
SOURCE_ONLY_FORMATS = frozenset({"rate", "rate-micro-batch", "socket"})
#: Formats that can only be written.
SINK_ONLY_FORMATS = frozenset({"console", "memory", "noop", "foreach"})


@dataclass(frozen=True)
class Table:
    name: str
    definition: dict[str, Any]  # as declared, without `name` and `description`
    file: str

    @property
    def format(self) -> str | None:
        return self.definition.get("format")


def file_format(fmt: object) -> str | None:
    """The short name of the file format `fmt` names, or None when it names none. Spark also
    takes its older and class names for them (`org.apache.spark.sql.parquet`,
    `com.databricks.spark.csv`, `...datasources.parquet.ParquetFileFormat`, a
    `...ParquetDataSourceV2`), and writes each through its file sink all the same."""
    if not isinstance(fmt, str):
        return None
    if fmt in FILE_FORMATS:
        return fmt
    lower = fmt.lower()
    if not lower.startswith(("org.apache.spark.sql.", "com.databricks.spark.")):
        return None
    for segment in reversed(lower.split(".")):
        for short in FILE_FORMATS:
            if segment in (short, f"{short}fileformat", f"{short}datasourcev2"):
                return short
    return None


#: Format names Spark or a common connector knows; a near miss of one of them is a typo.
KNOWN_FORMATS = (
    FILE_FORMATS
    | SOURCE_ONLY_FORMATS
    | SINK_ONLY_FORMATS
    | {"kafka", "avro", "xml", "binaryFile", "delta", "iceberg", "hudi", "kinesis"}
)
_KNOWN_BY_LOWER = {f.lower(): f for f in KNOWN_FORMATS}


@dataclass(frozen=True)
class Catalog:
    tables: dict[str, Table]
    #: Names declared by definitions that have problems (already reported): a job using one
    #: is not told again that the table is missing.
    broken: frozenset[str] = frozenset()

    def get(self, name: str) -> Table | None:
        return self.tables.get(name)


def load_catalog(paths: list[Path]) -> Catalog:
    """Read every table file; raise InvalidInput listing every problem in every file."""
    catalog, problems = read_catalog(paths)
    if problems:
        raise InvalidInput(problems)
    return catalog


def read_catalog(paths: list[Path]) -> tuple[Catalog, list[Problem]]:
    """Every table file: the tables without problems, and every problem in every file."""
    problems: list[Problem] = []
    tables: dict[str, Table] = {}
    declared: dict[str, str] = {}
    broken: set[str] = set()
    for path in yaml_files(paths, problems):
        source = str(path)
        try:
            doc = read_yaml_file(path)
        except YamlProblem as exc:
            problems.append(exc.problem)
            continue
        if not isinstance(doc, dict):
            problems.append(document_problem(doc, source))
            continue
        problems.extend(
            p for p in schema_problems(doc, "tables", source) if not p.field.startswith("tables[")
        )
        entries = doc.get("tables")
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            field, at = f"tables[{index}]", ("tables", index)
            if not isinstance(entry, dict):
                problems.extend(schema_problems(entry, "tables", source, "table", at))
                continue
            name = entry.get("name")
            found = definition_problems(entry, source, at)
            problems.extend(found)
            if not isinstance(name, str) or any(p.field == f"{field}.name" for p in found):
                continue
            if name in declared:
                problems.append(
                    Problem(
                        source,
                        f"{field}.name",
                        f"table {name!r} is already defined in {declared[name]}",
                    )
                )
                continue
            declared[name] = source
            if found:
                broken.add(name)
                continue
            definition = {k: v for k, v in entry.items() if k not in ("name", "description")}
            tables[name] = Table(name, definition, source)
    return Catalog(tables, frozenset(broken)), problems


def definition_problems(entry: dict[str, Any], source: str, at: tuple[Any, ...]) -> list[Problem]:
    """Every problem of one table entry (`name` and definition) at field `at` of `source`:
    the schema's first, then (only when there are none) the semantic checks."""
    found = schema_problems(entry, "tables", source, "table", at)
    if found:
        return found
    return [Problem(source, f"{field_path(at)}.{f}", m) for f, m in _semantic_problems(entry)]


def _semantic_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
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
    known = _KNOWN_BY_LOWER.get(fmt.lower())
    if known is not None:
        return [
            *found,
            ("format", f"write {fmt!r} as {known!r}; the deployer matches names exactly"),
        ]
    close = difflib.get_close_matches(fmt.lower(), list(_KNOWN_BY_LOWER), n=1, cutoff=0.8)
    if close:
        found.append(
            (
                "format",
                f"unknown format {fmt!r}; did you mean {_KNOWN_BY_LOWER[close[0]]!r}? (another "
                "data source: give its fully qualified class name)",
            )
        )
    return found
