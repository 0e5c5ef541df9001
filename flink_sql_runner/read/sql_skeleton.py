"""A query's tables read once per skeleton: queries that differ only in their plain names (and
in plain numbers, as `sqlinfo.query_shape`) read their tables alike, the names swapped.

A fleet's jobs are mostly one query each, with its own tables and columns: one parse each cost
a plan of 10,000 such jobs several seconds (sqlglot, 0.4 to 0.8 ms a query here). A skeleton is
the query's text with each plain name (`orders`, `o`, `amount_eur`: a letter or `_`, then
letters, digits and `_`, between the characters that end a token) replaced by its place in the
query's own pattern of equal names, and each plain number by its kind. Two texts of one
skeleton give sqlglot's parser the same tokens but for the names' text, and the same pattern of
equal names (as written, and ignoring case: a CTE is found by its name). A name is kept as
written, not replaced, where the parser could read its text:
- a word sqlglot holds anywhere (a keyword, a function's or a type's name, a word its parser
  matches: `LATERAL`, `VIEW`, `MINUTE`): every word among the text constants, names and values
  of sqlglot's loaded modules, its classes and functions (`sqlglot_words`, made once per process);
- a name that equals, ignoring case, any other word the text holds (in a string, between
  backticks, or one not replaced).
Texts `query_shape` gives up on are read alone. What one parse found is kept as a template:
each part of each table read and each CTE's name either a name's place in the pattern or a text
that is the same in every query of the skeleton; a parse whose tables cannot be so placed is
not kept.
"""

from __future__ import annotations

import bisect
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

#: The characters that end a token wherever they stand (spaces, brackets, commas, operators).
EDGE = r"\s(),;=<>+\-*/%\[\]|&^~!"
#: Texts whose lexing by this module's `_LEXEME`, or by `sqlinfo.query_shape`'s, could differ
#: from the parser's: double quotes (Spark's strings), backslashes (escapes), comments (`--`,
#: `/* */`, and `#`, which no Spark SQL needs), and NUL, which the keys' kinds are written with.
NOT_PLAIN = re.compile(r'["\\#\x00]|--|/\*')

#: Strings and names between backticks (kept whole), plain integers and decimals (their kind),
#: a quote or backtick left open (no skeleton), plain names.
_LEXEME = re.compile(
    r"('[^'\\\n]*'|`(?:[^`]|``)*`)"
    rf"|(?<![^{EDGE}])([0-9]+)(?![^{EDGE}])|(?<![^{EDGE}])([0-9]+\.[0-9]+)(?![^{EDGE}])"
    r"|(['`])"
    rf"|(?<![^{EDGE}.])([A-Za-z_][A-Za-z0-9_]*)(?![^{EDGE}.])",
    re.DOTALL,
)
_KINDS = {2: "\x00i", 3: "\x00d"}
_RUN = re.compile(r"\w+")
#: A number, a dot and a letter: Spark's names may start with a digit, and sqlglot reads
#: `1.x5` as one name but `1.e5` as a number, by the letters after the dot.
_NUMBER_DOT_NAME = re.compile(r"(?<!\w)[0-9]+\.+[A-Za-z_]")
#: Names past this many distinct ones have no character for their place.
MAX_NAMES = 0xFFFF
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Shapes parsed in a process before skeletons are used: making `sqlglot_words` costs about
#: 0.1 to 0.2 s, what this many parses cost (a plan of a few hundred queries never pays it).
USE_AFTER = 256


#: Where the characters that write a name's places in a key begin (private use, not `\w`).
_PLACES = 0xF0000


class _Shapeless(Exception):
    pass


@dataclass(frozen=True)
class Skeleton:
    key: str
    #: The replaced names, as written, in order.
    names: tuple[str, ...]
    #: Plain names kept as written though sqlglot does not hold them (lower case): each equals
    #: a word the text holds elsewhere.
    kept: frozenset[str] = frozenset()


#: A part or a CTE's name in a template: the replaced name at an index, or a text every query
#: of the skeleton has.
Part = tuple[str, int | str]


@dataclass(frozen=True)
class Template:
    tables: tuple[tuple[Part, ...], ...]
    ctes: tuple[Part, ...]


def skeleton(sql: str, words: frozenset[str]) -> Skeleton | None:
    """`sql`'s skeleton, `words` kept as written (upper case); None where `query_shape` gives
    up (a text `_LEXEME` might read otherwise than the parser)."""
    if NOT_PLAIN.search(sql) or _NUMBER_DOT_NAME.search(sql) or _joined_keyword(sql):
        return None
    found = _replaced(sql, words, frozenset())
    if found is None or not found.names:
        return found
    lower = {name.lower() for name in found.names}
    clash = lower & _forms(found.key)
    if not clash:
        return found
    # A name equal to a word kept elsewhere is kept too; then no replaced name equals one.
    return _replaced(sql, words, frozenset(clash))


def _replaced(sql: str, words: frozenset[str], kept: frozenset[str]) -> Skeleton | None:
    names: list[str] = []
    lower: dict[str, int] = {}
    exact: dict[str, int] = {}

    def one(match: re.Match[str]) -> str:
        kind, text = match.lastindex, match.group()
        if kind == 5:
            if text.upper() in words or text.lower() in kept:
                return text
            names.append(text)
            place = lower.setdefault(text.lower(), len(lower))
            if len(exact) >= MAX_NAMES:
                raise _Shapeless
            return f"\x00{chr(_PLACES + place)}{chr(_PLACES + exact.setdefault(text, len(exact)))}"
        if kind == 4:
            raise _Shapeless
        return _KINDS.get(kind or 0) or text

    try:
        key = _LEXEME.sub(one, sql)
    except _Shapeless:
        return None
    return Skeleton(key, tuple(names), kept)


def _joined_keyword(sql: str) -> bool:
    """Whether `sql` holds the start of a keyword of letters and a sign (`USER-DEFINED`):
    sqlglot takes such a keyword from the start of a longer word (`user-definedfrom` reads as
    `USER-DEFINED` and `from`), so the names after the sign could change the tokens."""
    if not _JOINED:
        from sqlglot.dialects.spark import Spark

        starts = {
            re.match(r"[A-Za-z0-9_ ]*[^A-Za-z0-9_ ]", keyword)
            for keyword in Spark.tokenizer_class.KEYWORDS
            if re.search(r"[A-Za-z]", keyword) and re.search(r"[^A-Za-z0-9_ ]", keyword)
        }
        words = sorted(
            re.escape(m.group()) for m in starts if m and re.match(r"[A-Za-z]", m.group())
        )
        _JOINED.append(re.compile("|".join(words) or "(?!)", re.IGNORECASE))
    return bool(_JOINED[0].search(sql))


#: `_joined_keyword`'s expression, made once.
_JOINED: list[re.Pattern[str]] = []


def _forms(text: str) -> set[str]:
    """Each word of `text` in lower case, and its upper case's lower case (`ı` is `I` upper)."""
    return {form for run in _RUN.findall(text) for form in (run.lower(), run.upper().lower())}


def _spans(sql: str, words: frozenset[str], found: Skeleton) -> list[tuple[int, int]]:
    """Where each of `found`'s replaced names is in `sql`, in order."""
    return [
        m.span()
        for m in _LEXEME.finditer(sql)
        if m.lastindex == 5
        and m.group().upper() not in words
        and m.group().lower() not in found.kept
    ]


def template(
    sql: str,
    words: frozenset[str],
    found: Skeleton,
    references: list[Any],
    ctes: frozenset[str],
) -> Template | None:
    """What a parse of `sql` (whose skeleton is `found`) read, as a template of its skeleton;
    None where a part cannot be placed (the parser gave no position, or names and parts do not
    line up)."""
    spans = _spans(sql, words, found)
    if len(spans) != len(found.names):
        return None
    lower = {name.lower(): index for index, name in enumerate(found.names)}
    starts = [start for start, _ in spans]
    tables: list[tuple[Part, ...]] = []
    for reference in references:
        if reference.start is None or reference.end is None:
            return None
        inside = []
        at = bisect.bisect_left(starts, reference.start)
        while at < len(spans) and spans[at][1] <= reference.end:
            inside.append(at)
            at += 1
        parts: list[Part] = []
        for part in reference.parts:
            if inside and found.names[inside[0]] == part:
                parts.append(("name", inside.pop(0)))
            elif _forms(part) & lower.keys():
                return None  # a replaced name's text, not at its place
            else:
                parts.append(("text", part))
        if inside:
            return None
        tables.append(tuple(parts))
    named: list[Part] = []
    for cte in sorted(ctes):
        if cte in lower:
            named.append(("name", lower[cte]))
        elif _forms(cte) & lower.keys():
            return None  # a name made of a replaced one and more (`1.x5`)
        else:
            named.append(("text", cte))
    return Template(tuple(tables), tuple(named))


def tables_of(found: Skeleton, known: Template) -> tuple[list[tuple[str, ...]], frozenset[str]]:
    """The tables and CTEs `known` gives for the text of `found`: each part at a name's place
    is the name there, as written; a CTE's name in lower case."""

    def value(part: Part) -> str:
        kind, held = part
        return found.names[int(held)] if kind == "name" else str(held)

    tables = [tuple(value(p) for p in parts) for parts in known.tables]
    return tables, frozenset(value(c).lower() for c in known.ctes)


def sqlglot_words() -> frozenset[str] | None:
    """Every word sqlglot's loaded modules hold as text (upper case): their constants, the
    names and values their classes, enums and functions hold, functions' docstrings aside.
    None where a module is compiled (`sqlglot[c]`): its functions' texts cannot be read."""
    modules = [m for name, m in list(sys.modules.items()) if name.split(".")[0] == "sqlglot"]
    if any(not str(getattr(m, "__file__", "") or "").endswith(".py") for m in modules
           if getattr(m, "__file__", None) is not None):  # fmt: skip
        return None
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[Any] = list(modules)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(w.upper() for w in _WORD.findall(item))
            continue
        if id(item) in seen or item is None or isinstance(item, (int, float, bool, bytes)):
            continue
        seen.add(id(item))
        if isinstance(item, types.ModuleType):
            if item.__name__.split(".")[0] == "sqlglot":
                stack += [v for k, v in list(vars(item).items()) if k != "__doc__"]
                stack += list(vars(item))
        elif isinstance(item, types.CodeType):  # a comprehension's or a lambda's: every text
            stack += list(item.co_consts)
        elif isinstance(item, types.FunctionType):
            code, consts = item.__code__, item.__code__.co_consts
            seen.add(id(code))
            doc = item.__doc__ is not None and bool(consts) and consts[0] == item.__doc__
            stack += list(consts[1:] if doc else consts)
            stack += [item.__defaults__, item.__kwdefaults__, item.__name__]
            for cell in item.__closure__ or ():
                try:
                    stack.append(cell.cell_contents)
                except ValueError:
                    pass
        elif isinstance(item, (classmethod, staticmethod)):
            stack.append(item.__func__)
        elif isinstance(item, property):
            stack += [item.fget, item.fset]
        elif isinstance(item, dict):
            stack += [x for pair in list(item.items()) for x in pair]
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack += list(item)
        elif isinstance(item, type):
            stack.append(item.__name__)
            if item.__module__.split(".")[0] == "sqlglot":
                stack += [v for k, v in list(vars(item).items()) if k != "__doc__"]
                stack += list(vars(item))
        else:  # an enum's member, a trie's node: its name and value
            stack += [getattr(item, "name", None), getattr(item, "value", None)]
    return frozenset(found)
