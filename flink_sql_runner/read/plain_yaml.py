"""The plain block YAML most files are, read in one pass of Python over their lines.

Job files and table files are nearly always the same few forms: `key: value` lines, nested by
indentation, lists of `- key: value` items, quoted text, `|` blocks of SQL, comments. PyYAML
reads each of them through a scanner, a parser, a composer and a constructor (libyaml does the
first three, Python the last): about 85 µs for a six-line job file. This reads them in about a
quarter of that (10,000 job files: 0.85 s before, 0.24 s).

It is only a shortcut. It answers only where its answer is exactly PyYAML's (`yamlio.py`'s
strict loaders, which it is fuzzed against in tests/read/test_plain_yaml.py) and gives up
(`(False, None)`) on anything else: an anchor, a tag, a flow collection that is not `[]` or
`{}`, a plain text that goes on to the next line, an escape in double quotes, a `>` block, a
key that is not a plain name, is longer than 1,000 characters, or is read as something other
than text, a key written twice, a value that is a date or anything but text, a whole number,
true/false or null, and every text PyYAML would refuse. Single-quoted text over several lines
is read, folded as YAML folds it. What gives up is read by `yamlio.py` as before, which words
the problem if there is one.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

#: Text this tool never reads here: tabs, carriage returns, BOMs, Unicode line breaks and
#: no-break spaces (PyYAML and libyaml disagree on some), and every character PyYAML's reader
#: refuses (it words the refusal).
_UNUSUAL = re.compile(
    r"[\t\r\ufeff\x85\u2028\u2029\xa0]|" + yaml.reader.Reader.NON_PRINTABLE.pattern
)
#: A key: a plain name (`spark.sql.shuffle.partitions`, `target-table`, `_x`), then `:` and
#: the end of the line or a space. At most 1,000 characters: PyYAML takes no key longer than
#: 1,024.
_KEY = re.compile(r"([A-Za-z0-9_$][A-Za-z0-9_.$/\-]{0,999}):(?= |$) *")
#: Where a plain text may not begin: YAML's indicators (`-`, `?` and `:` too, though PyYAML
#: takes them before a character that is not a space).
_NOT_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@` ")
#: Collections nested deeper than this are left to yamlio.py (its limit is 32 levels).
MAX_DEPTH = 12


class _GiveUp(Exception):
    """What this reader does not read exactly as PyYAML does."""


_constructor = SafeConstructor()
_resolver = Resolver()
_INT = "tag:yaml.org,2002:int"
_STR = "tag:yaml.org,2002:str"
_BUILT: dict[str, Any] = {
    "tag:yaml.org,2002:bool": _constructor.construct_yaml_bool,
    "tag:yaml.org,2002:null": _constructor.construct_yaml_null,
}


def _plain(text: str) -> Any:
    """What a plain scalar reads as, by PyYAML's own resolver and constructor (a comment
    after it, ` #`, dropped)."""
    comment = text.find(" #")
    if comment >= 0:
        text = text[:comment].rstrip(" ")
    if not text or text[0] in _NOT_FIRST or ": " in text or text[-1] == ":":
        raise _GiveUp
    tag = _resolver.resolve(yaml.ScalarNode, text, (True, False))
    if tag == _STR:
        return text
    node = yaml.ScalarNode(tag, text)
    if tag == _INT:
        return _constructor.construct_yaml_int(node)
    build = _BUILT.get(tag)
    if build is None:  # a float, a date, a merge key, `=`: left to PyYAML
        raise _GiveUp
    return build(node)


#: Keys already known to read as text, or not (a file's keys are mostly the same few).
_TEXT_KEYS: dict[str, bool] = {}


def _text_key(name: str) -> bool:
    """Whether a key reads as text (`yes`, `1`, `~`, `<<` do not)."""
    known = _TEXT_KEYS.get(name)
    if known is None:
        known = _resolver.resolve(yaml.ScalarNode, name, (True, False)) == _STR
        if len(_TEXT_KEYS) < 10_000:
            _TEXT_KEYS[name] = known
    return known


def _scalar(text: str) -> Any:
    """A value written on its key's line (`text` has no space at either end)."""
    first = text[0]
    if first == "'":
        close = _closing_quote(text, 1)
        if close < 0 or not _ends(text[close + 1 :]):
            raise _GiveUp  # not closed on this line, or something after it
        return text[1:close].replace("''", "'")
    if first == '"':
        close = text.find('"', 1)
        if close < 0 or "\\" in text[:close] or not _ends(text[close + 1 :]):
            raise _GiveUp
        return text[1:close]
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return _plain(text)


def _ends(after: str) -> bool:
    """Whether what follows a closing quote on its line ends the value: nothing, or a comment."""
    return not after or (after[0] == " " and after.lstrip(" ")[0] == "#")


def _closing_quote(text: str, start: int) -> int:
    """Where the `'` that ends a single-quoted text is, from `start` on (`''` is a quote within
    it); -1 if not on this line."""
    at = text.find("'", start)
    while 0 <= at < len(text) - 1 and text[at + 1] == "'":
        at = text.find("'", at + 2)
    return at


class _Lines:
    """The text's lines, each as its indentation and what follows it."""

    def __init__(self, text: str):
        self.raw = text.split("\n")
        self.indents: list[int] = []
        self.bodies: list[str] = []
        for line in self.raw:
            body = line.lstrip(" ")
            self.indents.append(len(line) - len(body))
            self.bodies.append(body.rstrip(" "))

    def next(self, i: int) -> int:
        """The first line from `i` on that is neither blank nor a comment (len(raw) if none)."""
        bodies = self.bodies
        while i < len(bodies) and (not bodies[i] or bodies[i][0] == "#"):
            i += 1
        return i

    def block(self, i: int, parent: int, keep_last_break: bool) -> tuple[str, int]:
        """A `|` block whose lines begin at line `i`, under a key indented `parent` spaces:
        the text, and the line after it."""
        raw, count = self.raw, len(self.raw)
        if i >= count or not self.bodies[i] or self.indents[i] <= parent:
            raise _GiveUp  # empty, or opened by a blank line: PyYAML's rules are subtle there
        indent, lines, first = self.indents[i], [], i
        while i < count:
            line = raw[i]
            if line.strip(" "):
                if self.indents[i] < indent:
                    break
                lines.append(line[indent:])
            elif len(line) > indent:
                raise _GiveUp  # a line of spaces longer than the block's indentation
            else:
                lines.append("")
            i += 1
        while lines and not lines[-1]:
            lines.pop()
        # Clipped, a block ends in one line break, if its last line has one (not the text's end).
        ends = keep_last_break and first + len(lines) < count
        return "\n".join(lines) + ("\n" if ends else ""), i

    def single_quoted(self, i: int, parent: int, first: str) -> tuple[str, int]:
        """A single-quoted text opened on line `i` (`first`: from its quote to the line's end)
        and closed on a later line, each indented more than its key (`parent` spaces): folded
        as YAML folds it (a line break is a space, n empty lines are n line breaks, the spaces
        around a break dropped). The text, and the line after it."""
        parts, breaks = [first[1:].replace("''", "'")], 0
        for j in range(i + 1, len(self.raw)):
            body = self.raw[j].strip(" ")
            if not body:
                breaks += 1
                continue
            if self.indents[j] <= parent:
                raise _GiveUp
            parts.append("\n" * breaks if breaks else " ")
            breaks = 0
            close = _closing_quote(body, 0)
            if close < 0:
                parts.append(body.replace("''", "'"))
                continue
            if not _ends(body[close + 1 :]):
                raise _GiveUp  # something after the closing quote
            parts.append(body[:close].replace("''", "'"))
            return "".join(parts), j + 1
        raise _GiveUp  # not closed


class _Reader:
    def __init__(self, text: str):
        self.lines = _Lines(text)

    def document(self) -> Any:
        lines = self.lines
        i = lines.next(0)
        if i == len(lines.raw):
            return None
        if lines.indents[i] != 0 or lines.bodies[i].startswith(("---", "...", "%")):
            raise _GiveUp
        if lines.bodies[i] == "-" or lines.bodies[i].startswith("- "):
            value, i = self.sequence(i, 0, 0)
        else:
            value, i = self.mapping(i, 0, 0)
        if lines.next(i) != len(lines.raw):
            raise _GiveUp  # something less indented than the root: not one of these forms
        return value

    def mapping(self, i: int, indent: int, depth: int) -> tuple[dict[str, Any], int]:
        """The mapping whose keys are at column `indent`, from line `i`."""
        if depth > MAX_DEPTH:
            raise _GiveUp
        lines, found = self.lines, {}
        indents, bodies, count = lines.indents, lines.bodies, len(lines.raw)
        while True:
            i = lines.next(i)
            if i == count or indents[i] < indent:
                return found, i
            body = bodies[i]
            key = _KEY.match(body)
            if indents[i] > indent or key is None:
                raise _GiveUp
            name = key.group(1)
            if name in found or not _text_key(name):
                raise _GiveUp  # twice, or read as a number, true/false, null or a merge
            rest = body[key.end() :]
            if rest.startswith("#"):
                rest = ""  # `key:  # a comment`, its value below it
            if not rest:
                found[name], i = self.nested(i + 1, indent, depth)
                continue
            if rest in ("|", "|-"):
                found[name], i = lines.block(i + 1, indent, rest == "|")
                continue
            if rest[0] == "'" and _closing_quote(rest, 1) < 0:
                found[name], i = lines.single_quoted(i, indent, rest)
            else:
                found[name] = _scalar(rest)
                i += 1
            i = lines.next(i)
            if i < count and indents[i] > indent:
                raise _GiveUp  # a plain text that goes on to the next line, or worse

    def nested(self, i: int, indent: int, depth: int) -> tuple[Any, int]:
        """The value under a key at column `indent` with nothing after its `:`."""
        lines = self.lines
        i = lines.next(i)
        if i == len(lines.raw):
            return None, i
        body, at = lines.bodies[i], lines.indents[i]
        if body == "-" or body.startswith("- "):
            if at < indent:
                return None, i
            return self.sequence(i, at, depth + 1)
        if at <= indent:
            return None, i
        return self.mapping(i, at, depth + 1)

    def sequence(self, i: int, indent: int, depth: int) -> tuple[list[Any], int]:
        """The list whose `- ` are at column `indent`, from line `i`."""
        if depth > MAX_DEPTH:
            raise _GiveUp
        lines, items = self.lines, []
        indents, bodies, count = lines.indents, lines.bodies, len(lines.raw)
        while True:
            i = lines.next(i)
            if i == count or indents[i] < indent:
                return items, i
            body = bodies[i]
            if indents[i] > indent:
                raise _GiveUp
            if body == "-":
                raise _GiveUp  # an item below its dash
            if not body.startswith("- "):
                return items, i  # a key beside the list's own: the list was a key's value
            rest = body[2:].lstrip(" ")
            if _KEY.match(rest):
                # `- key: value`: a mapping whose keys are at the column of this first one.
                raw = lines.raw[i]
                indents[i], bodies[i] = len(raw.rstrip(" ")) - len(rest), rest
                value, i = self.mapping(i, indents[i], depth + 1)
                items.append(value)
                continue
            if rest[0] in "-|":
                raise _GiveUp  # a nested list, a block
            items.append(_scalar(rest))
            i = lines.next(i + 1)
            if i < count and indents[i] > indent:
                raise _GiveUp


def read_plain_yaml(text: str) -> tuple[bool, Any]:
    """`(True, value)` where `text` is plain block YAML read exactly as PyYAML reads it;
    `(False, None)` where this reader gives up (yamlio.py reads it)."""
    if _UNUSUAL.search(text):
        return False, None
    try:
        return True, _Reader(text).document()
    except (_GiveUp, ValueError, TypeError, OverflowError, RecursionError):
        return False, None
