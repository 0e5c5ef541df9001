"""Reading YAML that users wrote: strict, bounded, and with errors that name the file.

Plain YAML only: one document, text keys, no duplicate keys, no tags but `!!str`, `!!map` and
`!!seq`, bounded in size, depth and alias expansion. Error messages never quote a value.
"""

from __future__ import annotations

import codecs
import datetime
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.plain_yaml import read_plain_yaml
from flink_sql_runner.read.schemas import shown

MAX_FILE_BYTES = 1024 * 1024
MAX_ALIASES = 100
#: Values the aliases of one document may expand to (a "billion laughs" stops here).
MAX_ALIAS_VALUES = 10_000
MAX_DEPTH = 32
#: Explicit tags a user may write; every other (`!!python/object`, `!!int`, `!Ref` ...) is refused.
ALLOWED_TAGS = frozenset(
    {"!", "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNICODE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _refuse(message: str, mark: Any) -> yaml.MarkedYAMLError:
    return yaml.constructor.ConstructorError(None, None, message, mark)


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org") else tag


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "a date"
    return "null" if value is None else f"a {type(value).__name__}"


class _StrictConstruction:
    """The checks made as values are constructed: keys are text and not repeated, and a value
    that cannot be read is a YAML error with a line."""

    def construct_object(self, node, deep=False):  # type: ignore[no-untyped-def]
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, OverflowError):
            # e.g. 2024-13-45 (not a date) or a 5,000-digit number. Never quote the value.
            what = "date" if node.tag.endswith(":timestamp") else "value"
            message = f"cannot read this {what}; quote it to keep it text"
            raise _refuse(message, node.start_mark) from None

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue  # `<<: *base`; merged keys may be overridden, so not duplicates
            if not isinstance(key_node, yaml.ScalarNode):
                raise _refuse("a mapping key must be a plain value", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _refuse(
                    f"key {shown(key_node.value)} is read as {_kind(key)}, not text; quote it",
                    key_node.start_mark,
                )
            if key in seen:
                raise _refuse(f"duplicate key {shown(key)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(_StrictConstruction, yaml.SafeLoader):
    """SafeLoader with the limits above; every refusal is a YAML error with a line."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0
        self._alias_values = 0
        # The anchor (or None) of every node being composed, outermost first: the depth.
        self._open_anchors: list[str | None] = []
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _refuse(f"more than {MAX_ALIASES} YAML aliases", event.start_mark)
            if event.anchor in self._open_anchors:
                raise _refuse(
                    f"alias {shown(event.anchor)} refers to a value that contains it",
                    event.start_mark,
                )
            node = super().compose_node(parent, index)
            self._alias_values += self._size(node)
            if self._alias_values > MAX_ALIAS_VALUES:
                raise _refuse(
                    f"YAML aliases expand to more than {MAX_ALIAS_VALUES} values",
                    event.start_mark,
                )
            return node
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in ALLOWED_TAGS:
            raise _refuse(
                f"tag {shown(_short_tag(tag))} is not allowed; write plain YAML values",
                event.start_mark,
            )
        if len(self._open_anchors) >= MAX_DEPTH:
            raise _refuse(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
        self._open_anchors.append(getattr(event, "anchor", None))
        try:
            return super().compose_node(parent, index)
        finally:
            self._open_anchors.pop()

    def _size(self, node: yaml.Node) -> int:
        """How many values `node` stands for once aliases are expanded (memoized)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._size(k) + self._size(v) for k, v in node.value)
        self._sizes[id(node)] = size
        return size


try:
    from yaml.cyaml import CParser, CSafeDumper
except ImportError:  # PyYAML built without libyaml
    CParser = CSafeDumper = None


#: Where libyaml's parser and PyYAML's own read the same text differently (found by fuzzing
#: one against the other): tabs, CR, BOM, Unicode line breaks and no-break spaces, tags (`!`,
#: but not SQL's `!=`), a comment right after a block scalar's `|`/`>`, and flow collections
#: other than `[]` and `{}`. Text with any of these is read by the pure-Python parser only.
_LIBYAML_DIFFERS = re.compile(
    r"[\t\r\ufeff\x85\u2028\u2029\xa0]|!(?!=)|[|>][0-9+-]*#|(?:^|[\s:?,\-\[{])[\[{](?![\]}])",
    re.MULTILINE,
)


class _FastStrictLoader(_StrictLoader):
    """The same loader over libyaml's scanner and parser: the same events, every check above
    still runs on them, five times faster. What it refuses is read again by `_StrictLoader`,
    so a problem is reported in the same words either way."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._events = CParser(stream)

    def check_event(self, *choices):  # type: ignore[no-untyped-def]
        return self._events.check_event(*choices)

    def peek_event(self):  # type: ignore[no-untyped-def]
        return self._events.peek_event()

    def get_event(self):  # type: ignore[no-untyped-def]
        return self._events.get_event()

    def dispose(self) -> None:
        self._events.dispose()
        super().dispose()


class _Aliased(Exception):
    """A text whose nodes libyaml composed with aliases: read through its events, where the
    composer's checks count them."""


def _check_nodes(root: yaml.Node) -> None:
    """What `_StrictLoader.compose_node` checks, on nodes libyaml composed from a text with no
    tag (`_LIBYAML_DIFFERS`): no node nested `MAX_DEPTH` levels deep (counting its ancestors),
    and none reached twice (an alias; `_Aliased`)."""
    stack, seen = [(root, 0)], set()
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise _Aliased
        seen.add(id(node))
        if depth >= MAX_DEPTH:
            raise _refuse(f"nested more than {MAX_DEPTH} levels deep", node.start_mark)
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += [(key, depth + 1), (value, depth + 1)]


if CParser is not None:

    class _ComposedStrictLoader(_StrictConstruction, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml composes the nodes too, twice as fast again; the composer's checks are made
        on the nodes (`_check_nodes`). What it refuses is read again by `_StrictLoader`."""

        def __init__(self, stream: str):
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def get_single_data(self) -> Any:
            node = self.get_single_node()
            if node is None:
                return None
            _check_nodes(node)
            return self.construct_document(node)

    _LOADERS: tuple[type, ...] = (_ComposedStrictLoader, _FastStrictLoader, _StrictLoader)
else:  # pragma: no cover - PyPI's PyYAML bundles libyaml
    _LOADERS = (_StrictLoader,)


def _read(loader_class: type, text: str) -> Any:
    loader = loader_class(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


#: What only the composer's own checks see (`_StrictLoader.compose_node`), or what could nest
#: a text deeper than libyaml's composer may recurse (it recursed 100,000 levels of `- - - ...`
#: into a segmentation fault): a tag (`!`, SQL's `!=` included), a directive (`%TAG`), a line
#: that begins with `_COMPOSED_COLUMNS` spaces or indicators (`- `, `? `, `: `). Block nodes
#: nest at most two levels per column of a line's start (a mapping's value, then a sequence at
#: its key's column) and one per indicator; flow collections other than `[]` and `{}` are
#: `_LIBYAML_DIFFERS`'.
_COMPOSED_COLUMNS = 100
_NOT_COMPOSED = re.compile(rf"!|^%|^(?:[ ]|[-?:][ ]){{{_COMPOSED_COLUMNS},}}", re.M)


def _loaders(text: str) -> tuple[type, ...]:
    """The loaders that read `text`, fastest first; the last words a refusal."""
    *fast, pure = _LOADERS
    if _LIBYAML_DIFFERS.search(text):
        return (pure,)
    if len(fast) == 2 and _NOT_COMPOSED.search(text):
        return (fast[1], pure)
    return tuple(_LOADERS)


def _load(text: str) -> Any:
    plain, value = read_plain_yaml(text)  # most files, a tenth of the time: plain_yaml.py
    if plain:
        return value
    *fast, pure = _loaders(text)
    for loader_class in fast:
        try:
            return _read(loader_class, text)
        except _Aliased:
            continue  # aliases: libyaml's events, with the composer's checks
        except (yaml.YAMLError, RecursionError):
            break  # read again below: the pure loader words the problem
    return _read(pure, text)


class YamlProblem(Exception):
    def __init__(self, problem: Problem):
        self.problem = problem
        super().__init__(str(problem))


def _reason(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem and context as one sentence, without the quoted source line."""
    problem, context = exc.problem or "", exc.context or ""
    first = f"line {exc.context_mark.line + 1}" if exc.context_mark else "an earlier line"
    if problem == "but found another document":
        return "more than one YAML document (`---`); write one per file"
    if "'\\t'" in problem:
        return "a tab character; YAML indents with spaces"
    if problem == "second occurrence":  # context: "found duplicate anchor 'x'; first occurrence"
        return f"{context.partition(';')[0]} (first on {first})"
    if context == "while scanning a quoted scalar" and "end of stream" in problem:
        return f"the quote opened on {first} is not closed"
    return problem or context or "not valid YAML"


def parse_yaml(text: str, source: str) -> Any:
    """Parse one YAML document; raise YamlProblem naming `source` on any defect."""
    try:
        return _load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}" if mark else ""
        raise YamlProblem(Problem(source, where, f"invalid YAML: {_reason(exc)}")) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        message = f"invalid YAML: control character #x{exc.character:04x} is not allowed"
        raise YamlProblem(Problem(source, f"line {line}", message)) from None
    except yaml.YAMLError as exc:
        message = f"invalid YAML: {str(exc).splitlines()[0] if str(exc) else 'not valid'}"
        raise YamlProblem(Problem(source, "", message)) from None
    except RecursionError:
        raise YamlProblem(Problem(source, "", "invalid YAML: nested too deeply")) from None


def read_yaml_file(path: Path) -> Any:
    """Read and parse a YAML file that a user wrote, bounded in size."""
    return parse_yaml(read_text_file(path, "YAML"), str(path))


def read_text_file(path: Path, kind: str) -> str:
    """The text of a file a user wrote (YAML, SQL), bounded in size; UTF-8, a BOM is fine.
    YamlProblem naming the file (and the line of a byte that is not UTF-8) otherwise."""
    source = str(path)

    def problem(field: str, message: str) -> YamlProblem:
        return YamlProblem(Problem(source, field, message))

    try:
        info = os.stat(source)
        if not stat.S_ISREG(info.st_mode):  # not opened: a FIFO would block
            raise problem("", "not a regular file")
        raw = _read_bounded(source, info.st_size)
    except OSError as exc:
        raise problem("", f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        size = max(info.st_size, len(raw))
        raise problem("", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
    for bom, encoding in _UNICODE_BOMS:
        if raw.startswith(bom):
            raise problem("", f"{encoding} text; save the file as UTF-8")
    if b"\x00" in raw:
        raise problem("", f"binary file, expected {kind} text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        byte = raw[exc.start]
        raise problem(
            f"line {line}", f"not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8"
        ) from None


def _read_bounded(source: str, size: int) -> bytes:
    """The file's bytes, at most MAX_FILE_BYTES + 1 of them. Read as long as the file gives
    more (it may have grown since its size was taken), in reads sized by what is expected:
    a read of MAX_FILE_BYTES allocates that much first, and over 10,000 job files that was
    most of the time spent reading them."""
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks: list[bytes] = []
        total, want = 0, min(size, MAX_FILE_BYTES) + 1
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = min(_READ_MORE, MAX_FILE_BYTES + 1 - total)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


#: What a read asks for beyond the size a file had when it was looked at.
_READ_MORE = 64 * 1024


def dump_yaml(data: Any) -> str:
    """Stable, readable YAML for files the deployer writes. Written by libyaml's emitter when all
    its text is printable ASCII on one line, where libyaml writes what PyYAML's own emitter
    writes, byte for byte (found by fuzzing one against the other, kept so by
    tests/read/test_yamlio.py), five times faster; by PyYAML's own otherwise: libyaml quotes
    and escapes other characters by rules of its own, folds a double-quoted text (one with a
    line break, say) at other places, and ends a document that is a single value otherwise."""
    fast = CSafeDumper is not None and type(data) is dict and _plain_ascii(data)
    return yaml.dump(
        data,
        Dumper=CSafeDumper if fast else yaml.SafeDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )


#: A key this long or longer is written by PyYAML's emitter: it and libyaml decide differently
#: whether a key of about 128 characters (quotes, escapes and an anchor counted) is written as
#: `? key`.
_FAST_KEY_LENGTH = 64


def _plain_ascii(value: Any) -> bool:
    """Whether `value` holds only mappings, lists, numbers, true/false/null and text of printable
    ASCII (no line break), its keys text shorter than `_FAST_KEY_LENGTH`."""
    kind = type(value)
    if kind is str:
        return value.isascii() and value.isprintable()
    if kind is dict:
        return all(
            type(k) is str and len(k) < _FAST_KEY_LENGTH and _plain_ascii(k) and _plain_ascii(v)
            for k, v in value.items()
        )
    if kind is list:
        return all(_plain_ascii(item) for item in value)
    return value is None or kind in (bool, int, float)
