"""Parsing `CREATE TABLE` statements (ddl.py says what they declare): the statement as
written, or SqlSyntax with the line where it goes wrong. Flink's forms are read far enough to
say what Spark writes instead."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from flink_sql_runner.read.ddl_tokens import SqlSyntax, Token
from flink_sql_runner.read.names import BadName, TableName, from_parts
from flink_sql_runner.read.schemas import shown


@dataclass
class Column:
    name: Token
    tokens: list[Token]  # the whole definition: name, type, NOT NULL, COMMENT '...'
    issues: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Statement:
    """One CREATE TABLE as written, before it is judged."""

    line: int
    name: TableName
    name_line: int
    columns: list[Column] = field(default_factory=list)
    columns_line: int = 0
    watermark: tuple[int, str, str] | None = None  # line, column, delay
    keys_line: int | None = None  # PRIMARY KEY / CONSTRAINT
    clauses: dict[str, int] = field(default_factory=dict)  # clause -> line
    using: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    option_lines: dict[str, int] = field(default_factory=dict)
    location: str | None = None
    comment: str | None = None
    flink_with: dict[str, Any] | None = None  # the original tool's WITH (...) options
    issues: list[tuple[int, str]] = field(default_factory=list)


_UNITS = {
    "MILLISECOND": "millisecond",
    "SECOND": "second",
    "MINUTE": "minute",
    "HOUR": "hour",
    "DAY": "day",
}
_FLINK_TYPES = {
    "ROW": "Flink's ROW: write STRUCT<name: TYPE, ...>",
    "BYTES": "Flink's BYTES: write BINARY",
    "MULTISET": "Flink's MULTISET has no Spark type: use MAP<TYPE, INT>",
    "RAW": "Flink's RAW has no Spark type",
}
_COLUMN_END = ("NOT", "NULL", "COMMENT", "DEFAULT", "GENERATED", "METADATA", "VIRTUAL")


#: The range of Spark's longest integer option (a Java long); catalog.py holds YAML to it too.
JAVA_LONG = range(-(2**63), 2**63)


def option_number(text: str) -> int | float | None:
    """An option's number as written (`10`, `-1.5`, `1e3`), or None when no option can mean it:
    an integer beyond a Java long (which also spares Python's limit on converting thousands of
    digits), a float that overflows to infinity or a non-zero one that underflows to 0."""
    if re.fullmatch(r"-?\d+", text):
        if len(text.lstrip("-").lstrip("0")) > 19:
            return None
        value = int(text)
        return value if value in JAVA_LONG else None
    number = float(text)
    mantissa = re.split(r"[eE]", text)[0]
    if math.isinf(number) or (number == 0 and mantissa.strip("-0.") != ""):
        return None
    return number


def _abridged(text: str) -> str:
    digits = sum(c.isdigit() for c in text)
    return f"{text[:20]}… ({digits} digits)" if len(text) > 40 else text


class Parser:
    def __init__(self, tokens: list[Token], source: str):
        self.tokens = tokens
        self.source = source
        self.index = 0

    @property
    def peek(self) -> Token:
        return self.tokens[self.index]

    def next(self) -> Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def accept(self, *words: str) -> Token | None:
        if self.peek.is_word(*words):
            return self.next()
        return None

    def expect_word(self, word: str, after: str) -> Token:
        token = self.next()
        if not token.is_word(word):
            raise SqlSyntax(token.line, f"expected {word} after {after}, found {token.shown}")
        return token

    def expect_punct(self, char: str, after: str) -> Token:
        token = self.next()
        if not token.is_punct(char):
            raise SqlSyntax(token.line, f"expected '{char}' {after}, found {token.shown}")
        return token

    def skip_statement(self) -> None:
        while self.peek.kind != "end" and not self.peek.is_punct(";"):
            self.next()

    def skip_parens(self) -> None:
        """Past a balanced (...) starting at the current token."""
        start = self.expect_punct("(", "here")
        depth = 1
        while depth:
            token = self.next()
            if token.kind == "end":
                raise SqlSyntax(start.line, "the '(' opened here is not closed")
            depth += token.is_punct("(") - token.is_punct(")")

    # -- CREATE TABLE ---------------------------------------------------------------------------
    def statement(self) -> Statement:
        first = self.next()
        if not first.is_word("CREATE"):
            what = first.value.upper() if first.kind == "word" else first.shown
            raise SqlSyntax(
                first.line, f"only CREATE TABLE statements declare tables here, found {what}"
            )
        if self.accept("OR"):
            self.expect_word("REPLACE", "CREATE OR")
        self.accept("TEMPORARY", "TEMP")
        self.accept("EXTERNAL")
        kind = self.next()
        if not kind.is_word("TABLE"):
            what = kind.value.upper() if kind.kind == "word" else kind.shown
            raise SqlSyntax(kind.line, f"only CREATE TABLE declares a table here, found {what}")
        if self.accept("IF"):
            self.expect_word("NOT", "IF")
            self.expect_word("EXISTS", "IF NOT")
        name_token = self.peek
        statement = Statement(first.line, self.table_name(), name_token.line)
        if self.peek.is_punct("("):
            statement.columns_line = self.peek.line
            self.elements(statement)
        self.clauses(statement)
        return statement

    def table_name(self) -> TableName:
        parts, first = [], self.peek
        while True:
            token = self.next()
            if token.kind not in ("word", "quoted"):
                raise SqlSyntax(token.line, f"expected a table name, found {token.shown}")
            parts.append(token.value)
            if not self.peek.is_punct("."):
                break
            self.next()
        try:
            return from_parts(tuple(parts))
        except BadName as exc:
            raise SqlSyntax(first.line, f"table name {exc}") from None

    def elements(self, statement: Statement) -> None:
        self.expect_punct("(", "here")
        if self.peek.is_punct(")"):
            raise SqlSyntax(self.peek.line, "the column list is empty")
        while True:
            token = self.peek
            if token.is_word("WATERMARK"):
                self.watermark(statement)
            elif token.is_word("PRIMARY", "CONSTRAINT", "UNIQUE", "FOREIGN", "CHECK"):
                statement.keys_line = token.line
                self.skip_element()
            elif token.is_word("LIKE"):
                raise SqlSyntax(token.line, "CREATE TABLE ... (LIKE ...) is not supported here")
            else:
                statement.columns.append(self.column())
            closing = self.next()
            if closing.is_punct(")"):
                return
            if not closing.is_punct(","):
                raise SqlSyntax(
                    closing.line, f"expected ',' or ')' in the column list, found {closing.shown}"
                )

    def skip_element(self) -> None:
        depth = 0
        while True:
            token = self.peek
            if token.kind == "end" or (depth == 0 and (token.is_punct(",") or token.is_punct(")"))):
                return
            depth += token.is_punct("(") - token.is_punct(")")
            self.next()

    def column(self) -> Column:
        name = self.next()
        if name.kind not in ("word", "quoted"):
            raise SqlSyntax(name.line, f"expected a column name, found {name.shown}")
        column = Column(name, [name])
        if self.peek.is_word("AS"):
            column.issues.append(
                (
                    self.peek.line,
                    f"column {shown(name.value)} is computed (Flink's `name AS expression`): "
                    "compute it in the job's query",
                )
            )
            self.skip_element()
            return column
        type_tokens = self.column_type()
        if not type_tokens:
            raise SqlSyntax(name.line, f"column {shown(name.value)} has no type")
        column.tokens.extend(type_tokens)
        issue = _type_issue(type_tokens)
        if issue:
            column.issues.append((type_tokens[0].line, f"column {shown(name.value)}: {issue}"))
        while self.peek.is_word(*_COLUMN_END):
            token = self.next()
            if token.is_word("NOT"):
                column.tokens += [token, self.expect_word("NULL", "NOT")]
            elif token.is_word("NULL"):
                column.tokens.append(token)
            elif token.is_word("COMMENT"):
                first = self.peek
                value = self.string("COMMENT")
                if self.tokens[self.index - 1] is not first:  # 'a' 'b': one literal for Spark
                    quoted = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
                    first = Token("string", quoted, value, first.line, first.start, first.end)
                column.tokens += [token, first]
            elif token.is_word("METADATA", "VIRTUAL"):
                column.issues.append(
                    (
                        token.line,
                        f"column {shown(name.value)} is a Flink metadata column: Spark's "
                        "sources give their metadata as fixed columns (the Kafka source's key, "
                        "topic, partition, offset, timestamp)",
                    )
                )
                self.skip_element()
            else:  # DEFAULT, GENERATED
                column.issues.append(
                    (
                        token.line,
                        f"column {shown(name.value)}: {token.value.upper()} is not used by "
                        "Spark's stream readers and writers: compute the value in the query",
                    )
                )
                self.skip_element()
        return column

    def column_type(self) -> list[Token]:
        """A column's type: a word (two for INTERVAL ... TO ...), then what it takes between
        (...) or <...>, and COLLATE name; Flink's WITH[OUT] [LOCAL] TIME ZONE is read too,
        to be reported."""
        first = self.next()
        if first.kind != "word" or first.is_word(*_COLUMN_END):
            raise SqlSyntax(first.line, f"expected a column type, found {first.shown}")
        tokens = [first]
        if first.is_word("INTERVAL"):
            while self.peek.is_word(*_UNITS, "YEAR", "MONTH", "TO"):
                tokens.append(self.next())
        while self.peek.is_punct("(") or self.peek.is_punct("<"):
            opening, depth = self.peek, 0
            while True:
                token = self.next()
                if token.kind == "end" or token.is_punct(";"):
                    raise SqlSyntax(opening.line, f"the {opening.text!r} opened here is not closed")
                tokens.append(token)
                depth += (token.is_punct("(") or token.is_punct("<")) - (
                    token.is_punct(")") or token.is_punct(">")
                )
                if depth == 0:
                    break
        if self.peek.is_word("COLLATE"):
            tokens += [self.next(), self.next()]
        if self.peek.is_word("WITH", "WITHOUT"):
            while self.peek.is_word("WITH", "WITHOUT", "LOCAL", "TIME", "ZONE"):
                tokens.append(self.next())
        return tokens

    def watermark(self, statement: Statement) -> None:
        start = self.next()
        if statement.watermark is not None:
            raise SqlSyntax(start.line, "a table has at most one WATERMARK")
        self.expect_word("FOR", "WATERMARK")
        column = self.next()
        if column.kind not in ("word", "quoted"):
            raise SqlSyntax(
                column.line, f"expected a column after WATERMARK FOR, found {column.shown}"
            )
        self.expect_word("AS", f"WATERMARK FOR {column.text}")
        form = (
            "write WATERMARK FOR column AS column - INTERVAL 'n' UNIT (Spark's "
            "withWatermark(column, delay))"
        )
        again = self.next()
        if again.kind not in ("word", "quoted") or again.value.lower() != column.value.lower():
            raise SqlSyntax(again.line, form)
        delay = "0 seconds"
        if self.peek.is_punct("-"):
            self.next()
            if not self.accept("INTERVAL"):
                raise SqlSyntax(self.peek.line, form)
            delay = self.interval(form)
        if not (self.peek.is_punct(",") or self.peek.is_punct(")")):
            raise SqlSyntax(self.peek.line, form)
        statement.watermark = (start.line, column.value, delay)

    def interval(self, form: str) -> str:
        amount = self.next()
        if amount.kind == "string" and self.peek.kind != "word":
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s+([A-Za-z]+?)S?\s*", amount.value.upper())
            if match and match.group(2) in _UNITS:
                return _delay(match.group(1), match.group(2))
            raise SqlSyntax(amount.line, f"cannot read INTERVAL {amount.text}; {form}")
        if amount.kind not in ("string", "number") or not re.fullmatch(
            r"\d+(?:\.\d+)?", amount.value.strip()
        ):
            raise SqlSyntax(amount.line, form)
        unit = self.next()
        name = unit.value.upper().removesuffix("S") if unit.kind == "word" else ""
        if name not in _UNITS:
            raise SqlSyntax(
                unit.line,
                f"unknown interval unit {unit.shown}; use one of {', '.join(_UNITS)} ({form})",
            )
        if self.peek.is_punct("("):  # Flink's SECOND(3): a precision
            self.skip_parens()
        if self.peek.is_word("TO"):
            raise SqlSyntax(
                self.peek.line, f"an interval range (... TO ...) is not supported; {form}"
            )
        return _delay(amount.value.strip(), name)

    # -- the clauses after the columns ----------------------------------------------------------
    def clauses(self, statement: Statement) -> None:
        while not (self.peek.kind == "end" or self.peek.is_punct(";")):
            token = self.next()
            clause = token.value.upper() if token.kind == "word" else ""
            if clause in ("PARTITIONED", "CLUSTERED", "SORTED"):
                self.expect_word("BY", clause)
                clause = f"{clause} BY"
            elif clause in ("ROW", "STORED"):
                self.expect_word("FORMAT" if clause == "ROW" else "AS", clause)
                clause = "ROW FORMAT" if clause == "ROW" else "STORED AS"
            if clause in statement.clauses:
                raise SqlSyntax(token.line, f"{clause} is given twice")
            if clause == "USING":
                statement.using = self.provider()
            elif clause == "OPTIONS":
                self.properties(statement.options, statement.option_lines, "OPTIONS")
                statement.option_lines.setdefault("", token.line)
            elif clause == "TBLPROPERTIES":
                self.properties({}, {}, "TBLPROPERTIES")
            elif clause in ("LOCATION", "COMMENT"):
                value = self.string(clause)
                if clause == "LOCATION":
                    statement.location = value
                else:
                    statement.comment = value
            elif clause in ("PARTITIONED BY", "CLUSTERED BY", "SORTED BY"):
                self.skip_parens()
                if clause == "CLUSTERED BY" and self.accept("INTO"):
                    self.next()
                    self.expect_word("BUCKETS", "INTO n")
            elif clause in ("ROW FORMAT", "STORED AS"):
                self.skip_statement()
            elif clause == "WITH" and self.peek.is_punct("("):
                statement.flink_with = {}
                self.properties(statement.flink_with, {}, "WITH")
                statement.issues.append((token.line, _with_hint(statement.flink_with)))
            elif clause == "AS":
                raise SqlSyntax(
                    token.line,
                    "CREATE TABLE ... AS SELECT runs a query; a job's query belongs in its "
                    "manifest",
                )
            else:
                raise SqlSyntax(token.line, f"unexpected {token.shown} after the table's columns")
            statement.clauses[clause] = token.line

    def string(self, after: str) -> str:
        """A string literal; adjacent ones are one string, as in Spark ('a' 'b' is 'ab')."""
        token = self.next()
        if token.kind != "string":
            raise SqlSyntax(token.line, f"expected a string after {after}, found {token.shown}")
        value = token.value
        while self.peek.kind == "string":
            value += self.next().value
        return value

    def provider(self) -> str:
        parts = []
        while True:
            token = self.next()
            if token.kind not in ("word", "quoted"):
                raise SqlSyntax(token.line, f"expected a format after USING, found {token.shown}")
            parts.append(token.value)
            if not self.peek.is_punct("."):
                return ".".join(parts)
            self.next()

    def properties(self, into: dict[str, Any], lines: dict[str, int], clause: str) -> None:
        self.expect_punct("(", f"after {clause}")
        seen: dict[str, int] = {}
        while True:
            key_token = self.peek
            key = self.property_key(clause)
            if self.peek.is_punct("="):
                self.next()
            value = self.property_value(key)
            lowered = key.lower()
            if lowered in seen:  # Spark's options ignore case
                raise SqlSyntax(
                    key_token.line,
                    f"{clause} {shown(key)} is set twice (first on line {seen[lowered]})",
                )
            seen[lowered] = key_token.line
            into[key] = value
            lines[key] = key_token.line
            closing = self.next()
            if closing.is_punct(")"):
                return
            if not closing.is_punct(","):
                raise SqlSyntax(
                    closing.line, f"expected ',' or ')' in {clause}, found {closing.shown}"
                )

    def property_key(self, clause: str) -> str:
        token = self.next()
        if token.kind == "string":
            return token.value
        parts = []
        while token.kind in ("word", "quoted"):
            parts.append(token.value)
            if not self.peek.is_punct("."):
                return ".".join(parts)
            self.next()
            token = self.next()
        raise SqlSyntax(token.line, f"expected an option name in {clause}, found {token.shown}")

    def property_value(self, key: str) -> Any:
        if self.peek.kind == "string":
            return self.string(f"option {shown(key)}")
        token = self.next()
        negative = token.is_punct("-")
        if negative:
            token = self.next()
        if token.kind == "number":
            text = ("-" if negative else "") + token.text
            number = option_number(text)
            if number is None:
                raise SqlSyntax(
                    token.line,
                    f"option {shown(key)}: {_abridged(text)} is not a number Spark reads as "
                    "one; quote it to pass it as text",
                )
            return number
        if token.is_word("TRUE", "FALSE") and not negative:
            return token.value.upper() == "TRUE"
        raise SqlSyntax(
            token.line,
            f"option {shown(key)}: expected a string, a number, true or false, found {token.shown}",
        )


#: Flink connectors and the Spark format that does their work.
_CONNECTORS = {
    "kafka": "USING kafka",
    "upsert-kafka": "USING kafka",
    "datagen": "USING rate",
    "print": "USING console",
    "blackhole": "USING noop",
    "kinesis": "USING kinesis",
}


def _with_hint(options: dict[str, Any]) -> str:
    connector = str(options.get("connector", ""))
    if connector == "filesystem":
        fmt = options.get("format", "<format>")
        instead = f"USING {fmt} LOCATION '<path>'"
    else:
        instead = _CONNECTORS.get(connector, "USING <format>")
    return (
        f"Flink's WITH ('connector' = ...) clause: write {instead} OPTIONS (key 'value', ...) "
        "with the Spark source's or sink's own options (docs/how-to/flink-sql-to-spark-sql.md)"
    )


def _delay(amount: str, unit: str) -> str:
    word = _UNITS[unit]
    return f"{amount} {word}" if amount == "1" else f"{amount} {word}s"


def _type_issue(tokens: list[Token]) -> str | None:
    """Flink's types that Spark does not read the same way."""
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.is_word("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ", "TIME") and (
            following is not None and following.is_punct("(")
        ):
            return (
                f"Spark's {token.value.upper()} takes no precision (Flink's "
                f"{token.value.upper()}(p)): write {token.value.upper()}"
            )
        if (
            token.is_word("WITH", "WITHOUT")
            and following is not None
            and following.is_word("LOCAL", "TIME")
        ):
            return "Flink's TIMESTAMP ... TIME ZONE: write TIMESTAMP_LTZ or TIMESTAMP_NTZ"
        if token.kind == "word" and token.value.upper() in _FLINK_TYPES:
            return _FLINK_TYPES[token.value.upper()]
    return None
