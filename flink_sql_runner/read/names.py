"""Table names as Spark SQL writes them: `orders`, `db.orders`, `` `kafka`.`orders` ``; and
the rule of a job's name.

A name has one to three parts (table; database and table; catalog, database and table). A part
is written plain (letters, digits and '_', not a digit first) or between backticks, which may
also hold '-' (the original tool's tables are often named `some-kafka-table`). Like Spark with
its default `spark.sql.caseSensitive=false`, names match part by part, ignoring case, backticks
stripped: `` `Kafka`.`orders` ``, `kafka.ORDERS` and `kafka.orders` are one table.

A job's name is an S3 key, a folder's and an application's name, never a path: its rule is the
job schema's (`name` in job.schema.json), checked by validation and, through `is_job_name`, by
every command that takes job names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache

from flink_sql_runner.read.schemas import ecma_regex, schema_of, shown

MAX_PARTS = 3
MAX_PART_LENGTH = 128
#: The rule for a name written without backticks, in the words of the schema's messages.
RULE = "table names use letters, digits and '_', not a digit first (at most 128)"
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]*")
_TOKEN = re.compile(r"`((?:[^`]|``)*)`|([^`.]+)|(\.)")


class BadName(ValueError):
    """A text that is not a table name this product can use; the message says how it was
    read."""


@dataclass(frozen=True)
class TableName:
    """A table name, its parts without backticks."""

    parts: tuple[str, ...]

    @cached_property
    def key(self) -> tuple[str, ...]:
        """What two names must share to be one table (Spark, case-insensitive)."""
        return tuple(part.lower() for part in self.parts)

    @property
    def table(self) -> str:
        return self.parts[-1]

    def __str__(self) -> str:
        """The canonical text: plain parts as they are, others between backticks."""
        return ".".join(part if _PLAIN.fullmatch(part) else f"`{part}`" for part in self.parts)

    def reading(self) -> str:
        """How Spark reads the name, in words."""
        quoted = [f"`{part}`" for part in self.parts]
        if len(quoted) == 1:
            return f"table {quoted[0]}"
        if len(quoted) == 2:
            return f"table {quoted[1]} in database {quoted[0]}"
        if len(quoted) == 3:
            return f"table {quoted[2]} in database {quoted[1]} of catalog {quoted[0]}"
        return f"a name of {len(quoted)} parts, {'.'.join(quoted)}"

    @property
    def view(self) -> str:
        """The temporary view the runner registers for this table when a job reads it: the
        name itself when it is one plain part, else its parts joined by '__' with '-' as '_'
        (Spark resolves a qualified name in its catalog, never to a temporary view, so the
        deployer points a job's SQL at this view: see `sqlinfo.point_at_views`)."""
        if len(self.parts) == 1 and _PLAIN.fullmatch(self.parts[0]):
            return self.parts[0]
        return "__".join(self.parts).replace("-", "_")


@lru_cache(maxsize=1 << 16)
def parse_name(text: str) -> TableName:
    """`text` read as Spark reads a multipart identifier; BadName when this product cannot use
    it. A text without backticks that breaks the rules gets the schema's own words. Kept for
    the next call with the same text (a name is read once per job that uses it)."""
    if "`" not in text:
        parts = tuple(text.split("."))
        if not all(_PLAIN.fullmatch(p) and len(p) <= MAX_PART_LENGTH for p in parts):
            raise BadName(f"{shown(text)} is not allowed: {RULE}")
        return from_parts(parts)
    parts_list: list[str] = []
    expect_part = True
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:  # an unclosed backtick
            raise BadName(f"{shown(text)} is not allowed: a backtick is not closed")
        quoted, plain, dot = match.groups()
        if dot:
            if expect_part:
                raise BadName(f"{shown(text)} is not allowed: a part of the name is empty")
            expect_part = True
        else:
            if not expect_part:
                raise BadName(f"{shown(text)} is not allowed: parts must be separated by '.' only")
            if plain is not None and not _PLAIN.fullmatch(plain):
                raise BadName(
                    f"{shown(text)} is not allowed: part {shown(plain)} is written without "
                    f"backticks, where {RULE}"
                )
            parts_list.append(quoted.replace("``", "`") if quoted is not None else plain)
            expect_part = False
        position = match.end()
    if expect_part:
        raise BadName(f"{shown(text)} is not allowed: a part of the name is empty")
    name = TableName(tuple(parts_list))
    problem = _parts_problem(name)
    if problem:
        raise BadName(f"{shown(text)} is not allowed: read as {name.reading()}; {problem}")
    return name


def _parts_problem(name: TableName) -> str | None:
    if len(name.parts) > MAX_PARTS:
        return f"a table name has at most {MAX_PARTS} parts (catalog.database.table)"
    for part in name.parts:
        if not part:
            return "a part of the name is empty"
        if len(part) > MAX_PART_LENGTH:
            return f"a part is at most {MAX_PART_LENGTH} characters"
        if not _QUOTED.fullmatch(part):
            return (
                f"part {shown(part)} may hold letters, digits, '_' and '-' (between "
                "backticks), not a '-' first"
            )
    return None


def name_problem(text: str) -> str | None:
    """The problem of a table name, or None."""
    try:
        parse_name(text)
    except BadName as exc:
        return str(exc)
    return None


def from_parts(parts: tuple[str, ...]) -> TableName:
    """A name from parts already split (by the SQL parser); BadName as `parse_name`."""
    name = TableName(parts)
    problem = _parts_problem(name)
    if problem:
        raise BadName(f"{shown(str(name))} is not allowed: read as {name.reading()}; {problem}")
    return name


#: The rule of a job's name, in words.
JOB_RULE = (
    "job names use lowercase letters, digits, '-' and '_', a letter or digit first (at most 63)"
)


@cache
def _job_name() -> re.Pattern[str]:
    return ecma_regex(schema_of("job")["properties"]["name"]["pattern"])


def is_job_name(text: str) -> bool:
    """Whether `text` is a job's name by the job schema's rule."""
    return bool(_job_name().search(text))


def job_name_problem(text: str) -> str | None:
    """Why `text` is not a job's name, or None when it is one."""
    return None if is_job_name(text) else f"{shown(text)} is not a job name: {JOB_RULE}"
