"""The table catalog: sources and sinks shared by jobs, declared once in YAML."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.files import yaml_files
from flink_sql_runner.schemas import schema_problems
from flink_sql_runner.yamlio import YamlProblem, read_yaml_file

#: Formats Spark's file sink writes; the only output mode it supports is append.
FILE_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text"})
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

    @property
    def is_file_sink(self) -> bool:
        return self.format in FILE_FORMATS


@dataclass(frozen=True)
class Catalog:
    tables: dict[str, Table]

    def get(self, name: str) -> Table | None:
        return self.tables.get(name)


def load_catalog(paths: list[Path]) -> Catalog:
    """Read every table file; raise InvalidInput listing every problem in every file."""
    problems: list[Problem] = []
    tables: dict[str, Table] = {}
    for path in yaml_files(paths, problems):
        source = str(path)
        try:
            doc = read_yaml_file(path)
        except YamlProblem as exc:
            problems.append(exc.problem)
            continue
        found = schema_problems(doc, "tables", source)
        problems.extend(found)
        entries = doc.get("tables") if isinstance(doc, dict) else None
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, dict):
                continue
            field = f"tables[{index}]"
            problems.extend(Problem(source, f"{field}.{f}", m) for f, m in _table_problems(entry))
            if found:
                continue  # semantic checks still run; tables of a broken file are not used
            name = entry["name"]
            if name in tables:
                problems.append(
                    Problem(
                        source,
                        f"{field}.name",
                        f"table {name!r} is already defined in {tables[name].file}",
                    )
                )
                continue
            definition = {k: v for k, v in entry.items() if k not in ("name", "description")}
            tables[name] = Table(name, definition, source)
    if problems:
        raise InvalidInput(problems)
    return Catalog(tables)


def _table_problems(entry: dict[str, Any]) -> list[tuple[str, str]]:
    has_format, has_table = "format" in entry, "table" in entry
    if has_format == has_table:
        return [
            (
                "format",
                "set exactly one of `format` (a path/format table) or `table` (a catalog table)",
            )
        ]
    return []
