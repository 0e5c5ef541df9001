"""What the original tool's users write (flink-sql-runner for Flink), recognised where it appears:
its stored format, its fields that have no place here, Flink SQL functions and PyFlink code, each
with what to write instead (docs/how-to/migrate.md, docs/how-to/flink-sql-to-spark-sql.md).
Converting a store is migrate/'s."""

from __future__ import annotations

import ast
import re
from typing import Any

from flink_sql_runner.errors import Problem

#: What to do with the original's fields that have no place in a job here.
ORIGINAL_FIELDS = {
    "flinkProperties": "the original tool's Flink settings: put what Spark needs under "
    "sparkProperties, with Spark's keys (a Flink key there gets a warning saying what it is "
    "in Spark; docs/how-to/migrate.md)",
}


def is_original(doc: Any) -> bool:
    """Whether a stored document is in the original tool's format: `meta`, no
    `schema-version`."""
    return (
        isinstance(doc, dict) and "schema-version" not in doc and isinstance(doc.get("meta"), dict)
    )


def with_original_hints(problems: list[Problem]) -> list[Problem]:
    """Problems of a job or template, where an unknown field is the original's own, saying
    what it becomes here."""
    out = []
    for problem in problems:
        hint = ORIGINAL_FIELDS.get(problem.field)
        if hint and problem.message.startswith("unknown field"):
            problem = Problem(problem.file, problem.field, hint)
        out.append(problem)
    return out


#: Flink SQL functions Spark does not have, and what Spark writes instead.
FLINK_FUNCTIONS = {
    "TUMBLE": "GROUP BY window(time, '1 minute')",
    "TUMBLE_START": "window.start, with GROUP BY window(...)",
    "TUMBLE_END": "window.end, with GROUP BY window(...)",
    "TUMBLE_ROWTIME": "window_time(window)",
    "HOP": "GROUP BY window(time, 'size', 'slide') (Flink's HOP takes the slide first)",
    "HOP_START": "window.start, with GROUP BY window(time, 'size', 'slide')",
    "HOP_END": "window.end, with GROUP BY window(time, 'size', 'slide')",
    "SESSION": "GROUP BY session_window(time, 'gap')",
    "SESSION_START": "session_window.start, with GROUP BY session_window(...)",
    "SESSION_END": "session_window.end, with GROUP BY session_window(...)",
    "CUMULATE": "no cumulating window: aggregate per window(...) and add up downstream",
    "PROCTIME": "current_timestamp() (no processing-time attribute)",
    "DESCRIPTOR": "GROUP BY window(...) instead of a window table function",
}


_FLINK_WORDS = re.compile(r"\b(TUMBLE|HOP|SESSION|CUMULATE|PROCTIME|DESCRIPTOR)", re.IGNORECASE)


def flink_sql_hints(sql: str) -> list[str]:
    """Flink SQL functions in a query, each with its line and what Spark writes instead."""
    if not _FLINK_WORDS.search(sql):
        return []
    import sqlglot  # here: a query without Flink's words is not parsed again
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        query = sqlglot.parse_one(sql, read="spark")
    except (ParseError, TokenError):
        return []
    hints = []
    for function in query.find_all(exp.Anonymous):
        name = str(function.name).upper()
        if name in FLINK_FUNCTIONS:
            line = function.meta.get("line")
            where = f"line {line}: " if line else ""
            hints.append(
                f"{where}{name} is Flink's; Spark writes {FLINK_FUNCTIONS[name]} "
                f"(docs/how-to/flink-sql-to-spark-sql.md)"
            )
    return sorted(set(hints))


def parse_failure_hint(sql: str) -> str:
    """What to add to a parse error of a query holding Flink's window functions."""
    if _FLINK_WORDS.search(sql):
        return (
            " (Flink's windows, TUMBLE/HOP/SESSION/CUMULATE and window table functions, "
            "are window(...) and session_window(...) in Spark: "
            "docs/how-to/flink-sql-to-spark-sql.md)"
        )
    return ""


def flink_code_hint(code: str) -> str | None:
    """What to say about a code job written for PyFlink (the original's `stream_env`,
    `table_env`, `pyflink` imports), or None."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        module = ""
        if isinstance(node, ast.Import):
            module = " ".join(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
        flink = module.split(".")[0] == "pyflink" or (
            isinstance(node, ast.Name) and node.id in ("stream_env", "table_env")
        )
        if flink:
            return (
                f"line {node.lineno}: PyFlink (the original's stream_env and table_env): code "
                "here is PySpark with `spark`, `F` and the source views; assign a streaming "
                "DataFrame to `execution_output` (docs/how-to/flink-sql-to-spark-sql.md)"
            )
    return None
