"""A table's declared schema (`schema:`, Spark DDL such as `id BIGINT, tags ARRAY<STRING>`) as
fields with Spark's type names (`simpleString`: bigint, array<string>), read without Spark, for
the checks `validate` makes offline. Where it matters at a deploy, Spark itself parses it
(runner/schema_probe.py)."""

from __future__ import annotations

from typing import Any

from flink_sql_runner.read.ddl_tokens import SqlSyntax, Token, tokenize

#: Spark's names for its types' other spellings; char and varchar read as string.
_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "dec": "decimal",
    "numeric": "decimal",
    "varchar": "string",
    "char": "string",
    "character": "string",
}


def parse_columns(ddl: str) -> list[dict[str, Any]]:
    """The declared columns, in order; ValueError naming what cannot be read."""
    try:
        tokens = [t for t in tokenize(ddl) if t.kind != "end"]
    except SqlSyntax as exc:
        raise ValueError(str(exc)) from None
    fields, index = [], 0
    while index < len(tokens):
        name = tokens[index]
        if name.kind not in ("word", "quoted"):
            raise ValueError(f"a column name expected, found {name.shown}")
        kind, index = _type(tokens, index + 1)
        while index < len(tokens) and not tokens[index].is_punct(","):
            index += 1  # NOT NULL, COMMENT '...': not part of the type
        fields.append({"name": name.value, "type": kind, "nullable": True})
        index += 1
    return fields


def _type(tokens: list[Token], index: int) -> tuple[str, int]:
    """The type starting at `index` as Spark writes it, and the index after it."""
    if index >= len(tokens) or tokens[index].kind != "word":
        raise ValueError("a column type expected")
    word = tokens[index].value.lower()
    word = _ALIASES.get(word, word)
    index += 1
    if index < len(tokens) and tokens[index].is_punct("("):  # decimal(10,2), varchar(5)
        close = next(i for i in range(index, len(tokens)) if tokens[i].is_punct(")"))
        numbers = "".join(t.text for t in tokens[index + 1 : close])
        index = close + 1
        if word == "decimal":
            word = f"decimal({numbers})" if "," in numbers else f"decimal({numbers},0)"
    elif word == "decimal":
        word = "decimal(10,0)"
    if word == "timestamp" and _words(tokens, index, "WITHOUT", "TIME", "ZONE"):
        word, index = "timestamp_ntz", index + 3
    if word in ("array", "map", "struct") and index < len(tokens) and tokens[index].is_punct("<"):
        inner, index = _nested(word, tokens, index + 1)
        word = f"{word}<{inner}>"
    return word, index


def _nested(kind: str, tokens: list[Token], index: int) -> tuple[str, int]:
    parts = []
    while True:
        if kind == "struct":
            name = tokens[index].value
            index += 1
            if tokens[index].is_punct(":"):
                index += 1
            inner, index = _type(tokens, index)
            parts.append(f"{name}:{inner}")
            while not (tokens[index].is_punct(",") or tokens[index].is_punct(">")):
                index += 1  # NOT NULL, COMMENT '...' of a struct field
        else:
            inner, index = _type(tokens, index)
            parts.append(inner)
        if tokens[index].is_punct(">"):
            return ",".join(parts), index + 1
        index += 1


def _words(tokens: list[Token], index: int, *words: str) -> bool:
    return all(
        index + i < len(tokens) and tokens[index + i].is_word(word) for i, word in enumerate(words)
    )
