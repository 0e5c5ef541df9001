"""What the deployer reads from a job's SQL or code, without Spark.

sqlglot is imported where a text is parsed or tokenised, not with this module: a command whose
queries were all read before (`LoadCache`, `Fingerprints`) never pays for its import."""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flink_sql_runner.read import sql_skeleton
from flink_sql_runner.read.sql_skeleton import EDGE as _EDGE
from flink_sql_runner.read.sql_skeleton import NOT_PLAIN as _NOT_PLAIN

if TYPE_CHECKING:
    from sqlglot import exp

DIALECT = "spark"
#: sqlglot reads `GROUP BY window(...)` (Spark's time-window function) as a WINDOW clause.
#: Parsing only checks syntax and finds table names, so the call is renamed for the parser.
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]+, text: (.*?), line: \d+.*?>")
#: Strings, names between backticks and comments are passed over: `window(` there is not a call
#: (one left open runs to the end, a last backslash with it: no text is read twice).
_WINDOW_CALL = re.compile(
    r"('(?:[^'\\]|\\.)*(?:'|\\?\Z)|\"(?:[^\"\\]|\\.)*(?:\"|\\?\Z)|`(?:[^`]|``)*(?:`|\Z)"
    r"|--[^\n]*|/\*.*?(?:\*/|\Z))"
    r"|\b(window)(\s*\()",
    re.IGNORECASE | re.DOTALL,
)


class SqlProblem(ValueError):
    """The SQL is not one query Spark's streaming runner can run."""


def _parse_query(sql: str) -> tuple[exp.Expression, list[int]]:
    """The one query in `sql`, and where `window(` calls were renamed for the parser (their
    positions in the parsed text, to map the parser's offsets back to `sql`)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    calls = [m.start() for m in _WINDOW_CALL.finditer(sql) if m.group(2)]
    renamed = [start + 4 * i for i, start in enumerate(calls)]
    try:
        text = _WINDOW_CALL.sub(lambda m: f"fsr_{m[2]}{m[3]}" if m[2] else m[0], sql)
        statements = [s for s in sqlglot.parse(text, read=DIALECT) if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        detail = first.get("description", str(exc)).split(". Line")[0] if first else str(exc)
        detail = _TOKEN_REPR.sub(lambda m: repr(m.group(1)), detail)
        raise SqlProblem(f"does not parse{where}: {detail}") from None
    except TokenError as exc:
        raise SqlProblem(f"does not parse: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - sqlglot's own failure (`1.ebd`: a decimal's)
        raise SqlProblem(f"does not parse: {type(exc).__name__} in sqlglot") from None
    if len(statements) != 1:
        raise SqlProblem(f"must be exactly one query, found {len(statements)} statements")
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        kind = type(statement).__name__.upper()
        raise SqlProblem(f"must be a query (SELECT ...), found {kind}")
    return statement, renamed


@dataclass(frozen=True)
class Reference:
    """A table the query reads, as written: its parts (backticks stripped) and where it is in
    the SQL text (`start` to `end`, end exclusive; None when the parser gave no position)."""

    parts: tuple[str, ...]
    start: int | None
    end: int | None


def table_references(sql: str) -> list[Reference]:
    """Every table reference of a query, in order; names of its CTEs are not tables (Spark
    matches them ignoring case). SqlProblem if the SQL is not one query."""
    return read_tables(sql)[0]


def read_tables(sql: str) -> tuple[list[Reference], frozenset[str]]:
    """`table_references`, and the names of the query's CTEs in lower case."""
    from sqlglot import exp

    query, renamed = _parse_query(sql)
    ctes = frozenset(cte.alias_or_name.lower() for cte in query.find_all(exp.CTE))

    def original(position: int) -> int:
        return position - 4 * bisect.bisect_right([r + 4 for r in renamed], position)

    found = []
    for table in query.find_all(exp.Table):
        if not table.name:
            continue
        parts = tuple(part.name for part in table.parts)
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        metas = [part.meta for part in table.parts]
        if all("start" in m and "end" in m for m in metas):
            start, end = original(metas[0]["start"]), original(metas[-1]["end"]) + 1
            found.append(Reference(parts, start, end))
        else:
            found.append(Reference(parts, None, None))
    return sorted(found, key=lambda r: (r.start is None, r.start or 0)), ctes


#: What a query's shape reads in its text; every other character is kept as it is. A string
#: between quotes or a name between backticks, kept whole (sqlglot reads a string as a table's
#: name after FROM or JOIN, and the inside of an interval's); a plain integer or decimal between
#: characters that end a token (spaces, brackets, commas, operators), made its kind; a quote or
#: backtick left open, which makes the text shapeless. A digit after any other character (a
#: letter, `·`, a dot) is a name's, or a typed literal's (`1L`), and kept.
_LEXEME = re.compile(
    r"('[^'\\\n]*'|`(?:[^`]|``)*`)"
    rf"|(?<![^{_EDGE}])([0-9]+)(?![^{_EDGE}])|(?<![^{_EDGE}])([0-9]+\.[0-9]+)(?![^{_EDGE}])"
    r"|(['`])",
    re.DOTALL,
)
_KINDS = {2: "\x00i", 3: "\x00d"}
#: What the queries of this process read, by shape (`query_tables`).
_by_shape: dict[str, tuple[list[tuple[str, ...]], frozenset[str]]] = {}


class _Shapeless(Exception):
    pass


def _kind(match: re.Match[str]) -> str:
    if match.lastindex == 4:
        raise _Shapeless
    return _KINDS.get(match.lastindex or 0) or match.group()


def query_shape(sql: str) -> str | None:
    """`sql` with each plain number replaced by its kind: two queries of one shape differ only
    in the values of such numbers, which name no table and change no grammar (an integer and a
    decimal are kinds apart), so they read the same tables, parse alike, or fail alike. None
    where the text holds what `_LEXEME` might read otherwise than the parser (a double quote, a
    backslash, a comment, a quote or backtick left open)."""
    if _NOT_PLAIN.search(sql):
        return None
    try:
        return _LEXEME.sub(_kind, sql)
    except _Shapeless:
        return None


def query_tables(sql: str) -> tuple[list[tuple[str, ...]], frozenset[str]]:
    """The parts of each table a query reads, in order, and its CTEs in lower case
    (`read_tables`): parsed once per shape (`query_shape`), so jobs made from one template cost
    one parse, and once a command has parsed many, once per skeleton (read/sql_skeleton.py:
    queries that differ in their plain names too). SqlProblem if the SQL is not one query (each
    such text parsed, its own positions in its message)."""
    shape = query_shape(sql)
    known = _by_shape.get(shape) if shape is not None else None
    if known is None:
        known = _by_skeleton(sql) if shape is not None else None
    if known is None:
        references, ctes = read_tables(sql)
        known = [r.parts for r in references], ctes
        if shape is not None:
            _by_shape[shape] = known
            _learn(sql, references, ctes)
    return list(known[0]), known[1]


#: What the skeletons of this process's queries read (`_by_skeleton`), whether they keep no
#: state (`keeps_no_state`), and how many shapes were parsed before skeletons were used.
_templates: dict[str, sql_skeleton.Template] = {}
_stateless_by_skeleton: dict[str, bool] = {}
_skeleton_words: list[frozenset[str]] = []
_shapes_parsed = [0]


def _skeleton_of(sql: str) -> sql_skeleton.Skeleton | None:
    """`sql`'s skeleton (read/sql_skeleton.py) once skeletons are in use, else None."""
    return sql_skeleton.skeleton(sql, _skeleton_words[0]) if _skeleton_words else None


def _parsed_one() -> None:
    """Count a shape parsed; skeletons are used from the `USE_AFTER`th (a small project never
    pays for the words sqlglot holds)."""
    _shapes_parsed[0] += 1
    if not _skeleton_words and _shapes_parsed[0] == sql_skeleton.USE_AFTER:
        words = sql_skeleton.sqlglot_words()
        if words is not None:  # else sqlglot is compiled: every shape parsed
            _skeleton_words.append(words)


def _by_skeleton(sql: str) -> tuple[list[tuple[str, ...]], frozenset[str]] | None:
    """What `sql` reads by its skeleton, where a query of that skeleton was parsed."""
    found = _skeleton_of(sql)
    known = _templates.get(found.key) if found is not None else None
    return sql_skeleton.tables_of(found, known) if found is not None and known else None


def _learn(sql: str, references: list[Reference], ctes: frozenset[str]) -> None:
    """Keep what a parse of `sql` read as its skeleton's template."""
    _parsed_one()
    found = _skeleton_of(sql)
    if found is not None:
        known = sql_skeleton.template(sql, _skeleton_words[0], found, references, ctes)
        if known is not None:
            _templates[found.key] = known


def tables_read(sql: str) -> list[str]:
    """Names of the tables a query reads (CTE names excluded), sorted; SqlProblem if invalid."""
    return sorted({".".join(r.parts) for r in table_references(sql)})


def point_at_views(sql: str, views: dict[tuple[str, ...], str]) -> str:
    """`sql` with each table reference whose key (its parts in lower case) is in `views`
    replaced by that view's name, between backticks. The view names are the deployer's own
    (letters, digits and '_'); nothing else in the text changes."""
    pieces, last = [], 0
    for reference in table_references(sql):
        view = views.get(tuple(p.lower() for p in reference.parts))
        if view is None:
            continue
        if reference.start is None or reference.end is None:
            raise SqlProblem(f"cannot tell where {'.'.join(reference.parts)} is in the SQL")
        pieces += [sql[last : reference.start], f"`{view}`"]
        last = reference.end
    return "".join(pieces) + sql[last:]


class Fingerprints:
    """SQL fingerprints by the SHA-256 of the text, each text tokenised once: a plan compares
    every changed job's SQL, stored and desired, and a command seeds this with what the
    commands before it computed (`known`; act/deployment.py keeps them in the state folder).
    `asked`: the ones this command asked, to keep; `computed`: how many it tokenised."""

    def __init__(self, known: dict[str, str] | None = None):
        self.known = dict(known or {})
        self.asked: dict[str, str] = {}
        self.computed = 0

    def of(self, sql: str) -> str:
        key = hashlib.sha256(sql.encode("utf-8", "surrogatepass")).hexdigest()
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = _fingerprint(sql)
            self.computed += 1
        self.asked[key] = found
        return found

    def kept(self) -> dict[str, str]:
        """What may be written down: the fingerprints asked, but for a text that could not be
        tokenised, whose fingerprint is the text itself."""
        return {k: v for k, v in self.asked.items() if v.startswith("sql:")}


#: The fingerprints of this process's command (`use_fingerprints` gives a command its own).
_fingerprints = Fingerprints()


def use_fingerprints(known: dict[str, str]) -> Fingerprints:
    """Fingerprints for the command about to compare SQL, seeded with `known`."""
    global _fingerprints
    _fingerprints = Fingerprints(known)
    return _fingerprints


def sql_fingerprint(sql: str) -> str:
    """Equal for texts that differ only in whitespace, comments or keyword case; a literal's
    case (`r'Bob'` against `r'bob'`) is a change."""
    return _fingerprints.of(sql)


def _fingerprint(sql: str) -> str:
    import sqlglot
    from sqlglot.errors import TokenError

    try:
        tokens = sqlglot.tokenize(sql, read=DIALECT)
    except TokenError:
        return "text:" + sql.strip()
    while tokens and tokens[-1].token_type.name == "SEMICOLON":
        tokens = tokens[:-1]
    parts = []
    for token in tokens:
        kind, text = token.token_type.name, token.text
        if _is_keyword(kind, text):
            text = text.upper()
        parts.append(f"{kind}:{text}")
    return "sql:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _is_keyword(kind: str, text: str) -> bool:
    """A keyword, whose case Spark ignores. Literals of every kind (strings, raw strings
    `r'...'`, hex, bit and byte strings), names and numbers keep their case."""
    if kind in ("VAR", "IDENTIFIER", "NUMBER", "PARAMETER") or "STRING" in kind:
        return False
    return text.replace("_", "").isalpha()


def code_fingerprint(code: str) -> str:
    """Equal for Python texts that differ only in formatting or comments."""
    try:
        dumped = ast.dump(ast.parse(code))
    except SyntaxError:
        dumped = code.strip()
    return "py:" + hashlib.sha256(dumped.encode()).hexdigest()


def code_problem(code: str) -> str | None:
    """A one-line reason the code cannot run, or None."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"is not valid Python (line {exc.lineno}: {exc.msg})"
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "execution_output" for t in targets):
            return None
    return "must assign a streaming DataFrame to `execution_output`"


#: What in a query can keep state in a streaming run (an aggregation, a deduplication, a join of
#: two streams, a limit, a function the parser does not know, which may aggregate), by sqlglot's
#: expression classes' names. `Any`: sqlglot reads Spark's aggregate `any(x)` as the predicate.
_MAY_KEEP_STATE = ("AggFunc", "Group", "Distinct", "Join", "Limit", "Window", "Intersect",
                   "Except", "Anonymous", "Lateral", "Having", "Qualify", "Subquery", "Exists",
                   "Pivot", "Any", "All", "TableSample")  # fmt: skip


#: `keeps_no_state`'s answers, by shape: what keeps state is in the query's grammar, never in
#: a literal's value.
_stateless_by_shape: dict[str, bool] = {}


def keeps_no_state(sql: str) -> bool:
    """Whether a query certainly keeps no state when streaming: read without Spark, nothing in it
    could (`_MAY_KEEP_STATE`; `UNION` without `ALL` deduplicates). False where it may, or where
    the text does not parse: Spark's analysis decides those (runner/stateful_plan.py). Parsed
    once per shape (`query_shape`), and once skeletons are in use (`query_tables`), once per
    skeleton: what it asks of the parse is the kinds of its nodes, which names do not change."""
    shape = query_shape(sql)
    known = _stateless_by_shape.get(shape) if shape is not None else None
    if known is not None:
        return known
    if shape is None:
        return _keeps_no_state(sql)
    found = _skeleton_of(sql)
    known = _stateless_by_skeleton.get(found.key) if found is not None else None
    if known is None:
        try:
            query, _ = _parse_query(sql)
        except SqlProblem:
            _stateless_by_shape[shape] = False  # a failure is kept by shape alone
            return False
        known = _stateless(query)
        _parsed_one()
        if found is not None:
            _stateless_by_skeleton[found.key] = known
    _stateless_by_shape[shape] = known
    return known


def _keeps_no_state(sql: str) -> bool:
    try:
        query, _ = _parse_query(sql)
    except SqlProblem:
        return False
    return _stateless(query)


def _stateless(query: exp.Expression) -> bool:
    from sqlglot import exp

    for node in query.walk():
        names = {cls.__name__ for cls in type(node).__mro__}
        if names & set(_MAY_KEEP_STATE):
            return False
        if isinstance(node, exp.Union) and node.args.get("distinct"):
            return False
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            return False
    return True
