"""Table definitions written as Spark SQL DDL (`*.sql` files of the table catalog).

A file holds `CREATE TABLE` statements, separated by ';'. They are parsed here, never run, and
become the same entries a YAML catalog file declares:

    CREATE TABLE orders (
      order_id BIGINT, price DOUBLE, order_time TIMESTAMP,
      WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE
    ) USING json OPTIONS (path 'data/orders', maxFilesPerTrigger 10)

is `{name: orders, format: json, options: {path: ..., maxFilesPerTrigger: 10}, schema:
"order_id BIGINT, price DOUBLE, order_time TIMESTAMP", watermark: {column: order_time, delay:
1 minute}}`. A statement Spark would turn into a table of its own catalog (no USING, or a
table format such as delta or iceberg without a location) is a catalog table:
`{name: db.events, table: db.events}`, read with `readStream.table` and written with `toTable`.

The tokenizer and parser are small and exact about lines: every problem names its line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.ddl_parser import Parser, Statement
from flink_sql_runner.read.ddl_tokens import WORD, SqlSyntax, Token, text_of, tokenize
from flink_sql_runner.read.formats import FILE_FORMATS, TABLE_FORMATS
from flink_sql_runner.read.names import BadName, from_parts
from flink_sql_runner.read.schemas import shown
from flink_sql_runner.read.yamlio import YamlProblem, read_text_file

SQL_SUFFIXES = (".sql",)
UNUSED_CLAUSES = (
    "TBLPROPERTIES",
    "PARTITIONED BY",
    "CLUSTERED BY",
    "SORTED BY",
    "ROW FORMAT",
    "STORED AS",
)


@dataclass(frozen=True)
class SqlTable:
    """One table a `.sql` file declares: the catalog entry, and the line of each field."""

    entry: dict[str, Any]
    lines: dict[str, int]
    line: int
    #: False when the statement has problems (reported): the name is taken, the table unusable.
    ok: bool = True

    @property
    def name(self) -> str:
        return str(self.entry["name"])

    def line_of(self, field_path: str) -> int:
        """The line of a field of the entry (`options.path`, `watermark.delay`, ...)."""
        path = field_path
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path.rpartition(".")[0]
        return self.line


# -- from statements to catalog entries -----------------------------------------------------------


def read_sql_tables(path: Path) -> tuple[list[SqlTable], list[Problem]]:
    """Every table a `.sql` file declares, and every problem in it (one per line)."""
    source = str(path)
    try:
        text = read_text_file(path, "SQL")
    except YamlProblem as exc:
        return [], [exc.problem]
    return parse_sql_tables(text, source)


def parse_sql_tables(text: str, source: str) -> tuple[list[SqlTable], list[Problem]]:
    problems: list[Problem] = []
    try:
        tokens = tokenize(text)
    except SqlSyntax as exc:
        return [], [Problem(source, f"line {exc.line}", str(exc))]
    parser = Parser(tokens, text)
    tables: list[SqlTable] = []
    while parser.peek.kind != "end":
        if parser.peek.is_punct(";"):
            parser.next()
            continue
        start = parser.index
        try:
            statement = parser.statement()
        except SqlSyntax as exc:
            name = _name_near(tokens, start)
            prefix = f"table {name}: " if name else ""
            problems.append(Problem(source, f"line {exc.line}", prefix + str(exc)))
            if name:
                line = tokens[start].line
                tables.append(SqlTable({"name": name}, {"name": line}, line, ok=False))
            parser.skip_statement()
            continue
        table, found = _judge(statement, text)
        problems += [
            Problem(source, f"line {line}", f"table {statement.name}: {message}")
            for line, message in found
        ]
        tables.append(table)
    if not tables and not problems:
        problems.append(Problem(source, "", "declares no tables (CREATE TABLE ...)"))
    return tables, problems


def _name_near(tokens: list[Token], start: int) -> str | None:
    """The table name of a statement that does not parse, when it got that far."""
    index = start
    while (
        index < len(tokens) and tokens[index].kind == "word" and not tokens[index].is_word("TABLE")
    ):
        index += 1
    if index >= len(tokens) - 1 or not tokens[index].is_word("TABLE"):
        return None
    index += 1
    if tokens[index].is_word("IF"):
        index += 3
    parts = []
    while index < len(tokens) and tokens[index].kind in ("word", "quoted"):
        parts.append(tokens[index].value)
        if not (index + 1 < len(tokens) and tokens[index + 1].is_punct(".")):
            break
        index += 2
    try:
        return str(from_parts(tuple(parts))) if parts else None
    except BadName:
        return None


def _judge(statement: Statement, text: str) -> tuple[SqlTable, list[tuple[int, str]]]:
    """The catalog entry a statement declares, and the problems that keep it from being one
    (the entry is then marked not ok)."""
    issues = list(statement.issues)
    lines: dict[str, int] = {"name": statement.name_line}
    entry: dict[str, Any] = {"name": str(statement.name)}
    if statement.comment is not None:
        entry["description"] = statement.comment
        lines["description"] = statement.clauses["COMMENT"]
    options = dict(statement.options)
    lines.update({f"options.{k}" if k else "options": n for k, n in statement.option_lines.items()})
    has_path = any(key.lower() == "path" for key in options)
    if statement.location is not None:
        if has_path:
            issues.append(
                (statement.clauses["LOCATION"], "LOCATION and OPTIONS (path ...) both set a path")
            )
        options["path"] = statement.location
        lines["options.path"] = statement.clauses["LOCATION"]
        lines.setdefault("options", statement.clauses["LOCATION"])
        has_path = True
    fmt = statement.using
    catalog_table = statement.flink_with is None and (
        fmt is None or (fmt.lower() in TABLE_FORMATS and not has_path)
    )
    if fmt is not None and not catalog_table:
        entry["format"] = fmt
        lines["format"] = statement.clauses["USING"]
        if fmt in FILE_FORMATS and not has_path:
            issues.append(
                (
                    statement.clauses["USING"],
                    f"a {fmt} table needs LOCATION '...' or OPTIONS (path '...'); a table of "
                    "Spark's catalog is declared without USING",
                )
            )
    if catalog_table:
        if not all(WORD.fullmatch(part) for part in statement.name.parts):
            issues.append(
                (
                    statement.name_line,
                    "a table of Spark's catalog (no USING, or a table format without a "
                    "location) is named with letters, digits and '_' only here",
                )
            )
        entry["table"] = str(statement.name)
        lines["table"] = statement.name_line
    else:
        for clause in UNUSED_CLAUSES:
            if clause in statement.clauses:
                issues.append(
                    (
                        statement.clauses[clause],
                        f"{clause} is not used: the deployer never creates tables, and the "
                        "runner reads and writes with USING and OPTIONS only",
                    )
                )
        if statement.keys_line is not None:
            issues.append(
                (
                    statement.keys_line,
                    "keys and constraints are not used by Spark's stream readers and writers; "
                    "drop them",
                )
            )
        if statement.columns:
            seen: dict[str, int] = {}
            for column in statement.columns:
                issues += column.issues
                lowered = column.name.value.lower()
                if lowered in seen:
                    issues.append(
                        (column.name.line, f"column {shown(column.name.value)} is declared twice")
                    )
                seen[lowered] = column.name.line
            entry["schema"] = ", ".join(text_of(c.tokens) for c in statement.columns)
            lines["schema"] = statement.columns_line
    if options:
        entry["options"] = options
    if statement.watermark is not None:
        line, column, delay = statement.watermark
        names = {c.name.value.lower() for c in statement.columns}
        if statement.columns and not catalog_table and column.lower() not in names:
            issues.append((line, f"WATERMARK FOR {shown(column)}: no such column"))
        entry["watermark"] = {"column": column, "delay": delay}
        lines["watermark"] = line
    table = SqlTable(entry, lines, statement.line, ok=not issues)
    return table, sorted(set(issues))
