"""The tokens of Spark SQL DDL, as the table files' parser needs them: words, `quoted`
identifiers, string literals (Spark's escapes), numbers and punctuation, each with its line.
Comments and whitespace are dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flink_sql_runner.read.schemas import shown

_SPACE = re.compile(r"[ \t\r\n\f\v\ufeff]+")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z0-9_])")
_PUNCT = frozenset("(),.;=<>:-+*[]")
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


@dataclass(frozen=True)
class Token:
    kind: str  # word, quoted (a `backticked` identifier), string, number, punct, end
    text: str  # as written
    value: str  # a word or identifier without backticks, a string unescaped
    line: int
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.value.upper() in words

    def is_punct(self, char: str) -> bool:
        return self.kind == "punct" and self.text == char

    @property
    def shown(self) -> str:
        if self.kind == "end":
            return "the end of the file"
        return shown(self.text, 40)


class SqlSyntax(Exception):
    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(message)


def _unescape(body: str) -> str:
    """A Spark string literal's body: backslash escapes as Spark reads them."""
    out, index = [], 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 == len(body):
            out.append(char)
            index += 1
            continue
        following = body[index + 1]
        if following == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", body[index + 2 : index + 6]):
            out.append(chr(int(body[index + 2 : index + 6], 16)))
            index += 6
            continue
        if following in "%_":
            out.append("\\" + following)  # Spark keeps these for LIKE patterns
        else:
            out.append(_ESCAPES.get(following, following))
        index += 2
    return "".join(out)


def tokenize(text: str) -> list[Token]:
    """Every token of `text`, comments and whitespace dropped; SqlSyntax on a character or
    literal that cannot start or end a token."""
    tokens: list[Token] = []
    position, line = 0, 1

    def add(kind: str, end: int, value: str | None = None) -> None:
        raw = text[position:end]
        tokens.append(Token(kind, raw, raw if value is None else value, line, position, end))

    while position < len(text):
        char = text[position]
        space = _SPACE.match(text, position)
        if space:
            line += space.group().count("\n")
            position = space.end()
            continue
        if text.startswith("--", position):
            newline = text.find("\n", position)
            position = len(text) if newline < 0 else newline
            continue
        if text.startswith("/*", position):
            end, depth, index = None, 0, position
            while index < len(text):  # Spark's bracketed comments nest
                if text.startswith("/*", index):
                    depth, index = depth + 1, index + 2
                elif text.startswith("*/", index):
                    depth, index = depth - 1, index + 2
                    if depth == 0:
                        end = index
                        break
                else:
                    index += 1
            if end is None:
                raise SqlSyntax(line, "a comment /* is not closed")
            line += text.count("\n", position, end)
            position = end
            continue
        raw_prefix = char in "rR" and text[position + 1 : position + 2] in ("'", '"')
        if char in "'\"" or raw_prefix:
            quote_at = position + 1 if raw_prefix else position
            quote = text[quote_at]
            index = quote_at + 1
            while index < len(text) and text[index] != quote:
                index += 1 if raw_prefix or text[index] != "\\" else 2
            if index >= len(text):
                raise SqlSyntax(line, f"the string opened with {quote} is not closed")
            body = text[quote_at + 1 : index]
            add("string", index + 1, body if raw_prefix else _unescape(body))
            line += text.count("\n", position, index + 1)
            position = index + 1
            continue
        if char == "`":
            index = position + 1
            while True:
                index = text.find("`", index)
                if index < 0:
                    raise SqlSyntax(line, "the identifier opened with ` is not closed")
                if text.startswith("``", index):
                    index += 2
                    continue
                break
            add("quoted", index + 1, text[position + 1 : index].replace("``", "`"))
            line += text.count("\n", position, index + 1)
            position = index + 1
            continue
        word = WORD.match(text, position)
        if word:
            add("word", word.end())
            position = word.end()
            continue
        number = _NUMBER.match(text, position)
        if number:
            add("number", number.end())
            position = number.end()
            continue
        if char in _PUNCT:
            add("punct", position + 1)
            position += 1
            continue
        add("other", position + 1)  # the parser says where it is wrong
        position += 1
    tokens.append(Token("end", "", "", line, len(text), len(text)))
    return tokens


def text_of(tokens: list[Token]) -> str:
    """The tokens as written, comments dropped and every gap made one space."""
    out = []
    for index, token in enumerate(tokens):
        if index and token.start > tokens[index - 1].end:
            out.append(" ")
        out.append(token.text)
    return "".join(out)
