"""The jsonschema files shipped with the package, and their errors as user-facing problems.

jsonschema is imported when a document is first checked, not with this module: a command that
checks none (`status`, `stop`, `logs`, `--help`) does not pay for it and its dependencies (a
tenth of a second of start-up)."""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.secrets import is_secret_key

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

#: Characters a key may have to be shown as it is in a field path; others are quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


@cache
def ecma_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` as ECMA-262 (JSON Schema's dialect) reads it: a final `$` is the end of the
    text. Python's `$` also matches before a final newline, which let "name\\n" through."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator_class() -> Any:
    """Draft 2020-12's validator, with `pattern` as ECMA-262 reads it."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {"pattern": _pattern})


@cache
def schema_of(name: str) -> dict[str, Any]:
    """Schema `name` as written (not to be changed: it is shared)."""
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def validator(name: str, definition: str | None = None) -> Any:
    """The validator of schema `name`, or of one of its `$defs`."""
    whole = schema_of(name)
    if definition is not None:
        whole = {"$defs": whole["$defs"], "$ref": f"#/$defs/{definition}"}
    return _validator_class()(whole)


@cache
def _accepts(
    name: str, definition: str | None = None, partial: bool = False
) -> Callable[[Any], bool] | None:
    """jsonschema-rs's check of schema `name` (or one of its `$defs`): whether a document has
    no violation, a hundred times faster than `validator`, which words them; `partial`: none
    but missing fields its top level requires (a job's own fields, which the template may
    complete). Its regular expressions are ECMA-262's, as `ecma_regex` reads a pattern;
    tests/read/test_schema_fast.py holds it to `validator`'s answer. None without
    jsonschema-rs."""
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a dependency; every document is then worded
        return None
    whole = schema_of(name)
    if definition is not None:
        whole = {"$defs": whole["$defs"], "$ref": f"#/$defs/{definition}"}
    if partial:
        whole = {k: v for k, v in whole.items() if k != "required"}
    return jsonschema_rs.Draft202012Validator(whole).is_valid


def required_fields(name: str) -> tuple[str, ...]:
    """The top-level fields schema `name` requires."""
    return tuple(schema_of(name).get("required", ()))


def key_text(key: Any) -> str:
    """A mapping key for a message. A malformed key that looks like a secret's is cut at its
    first odd character: `spark.password=hunter2` shows as 'spark.password...'."""
    text = str(key)
    if _PLAIN_KEY.fullmatch(text):
        return text
    if is_secret_key(text):
        plain = _PLAIN_KEY.match(text)
        return shown((plain.group() if plain else "") + "...")
    return shown(text)


def field_path(parts: Any) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{key_text(part)}" if out else key_text(part)
    return out


def shown(value: Any, limit: int = 60) -> str:
    """A value for an error message: escaped (look-alike characters show), bounded."""
    text = ascii(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


def _message(error: ValidationError) -> list[tuple[str, str]]:
    """(field, message) pairs for one jsonschema error."""
    path = field_path(error.absolute_path)
    kind, schema = error.validator, error.schema
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(schema.get("properties", {}))
        pairs = []
        for key in error.instance:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            pairs.append((field_path([*error.absolute_path, key]), f"unknown field{hint}"))
        return pairs
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else "?"
        return [(field_path([*error.absolute_path, missing]), "is required")]
    if kind == "type":
        wanted = error.validator_value
        wanted = wanted if isinstance(wanted, list) else [wanted]
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
        return [(path, f"must be {words}, got {type_name(error.instance)}")]
    if kind == "pattern":
        hint = schema.get("description") or f"must match {error.validator_value}"
        if "propertyNames" in error.schema_path:
            return [(path, f"key {key_text(error.instance)} is not allowed: {hint}")]
        return [(path, f"{shown(error.instance)} is not allowed: {hint}")]
    if kind == "propertyNames":
        return [(path, f"key {key_text(error.instance)} is not allowed")]
    if kind == "uniqueItems" and isinstance(error.instance, list):
        seen: list[Any] = []
        for item in error.instance:
            if item in seen:
                return [(path, f"lists {shown(item)} more than once")]
            seen.append(item)
    if kind == "enum":
        options = ", ".join(str(v) for v in error.validator_value)
        return [(path, f"must be one of {options}, got {shown(error.instance)}")]
    if kind in ("minProperties", "maxProperties") and "properties" in schema:
        options = ", ".join(schema["properties"])
        return [(path, f"must set exactly one of {options}")]
    if kind == "const":
        return [(path, f"must be {json.dumps(error.validator_value)}")]
    if kind in ("minLength", "maxLength"):
        return [
            (
                path,
                f"length must be between {schema.get('minLength', 0)} and "
                f"{schema.get('maxLength', 'any')} characters",
            )
        ]
    return [(path, error.message if len(error.message) < 200 else error.message[:197] + "...")]


def type_name(value: Any) -> str:
    """What a YAML value is, in the words of the messages: "a string", "a list", ..."""
    for name, pytype in (
        ("a date (quote it to keep it text)", datetime.date),
        ("true/false", bool),
        ("an integer", int),
        ("a number", float),
        ("a string", str),
        ("a list", list),
        ("a mapping", dict),
    ):
        if isinstance(value, pytype):
            return name
    return "null" if value is None else type(value).__name__


def document_problem(doc: Any, source: str) -> Problem:
    """The problem of a YAML document that is not a mapping."""
    what = "empty" if doc is None else type_name(doc)
    return Problem(source, "(document)", f"must be a mapping, got {what}")


def schema_problems(
    doc: Any,
    schema: str,
    source: str,
    definition: str | None = None,
    at: tuple[Any, ...] = (),
    partial: bool = False,
) -> list[Problem]:
    """Every schema violation of `doc` (checked against schema `name` or one of its `$defs`,
    found at field `at` of `source`), as problems naming `source` and the field; `partial`:
    but fields missing (`is required`), which the template may give. A document jsonschema-rs
    finds valid has none; one it does not (or cannot read: a date, bytes) is worded by
    jsonschema."""
    accepts = _accepts(schema, definition, partial)
    try:
        if accepts is not None and accepts(doc):
            return []
    except (ValueError, TypeError, OverflowError):
        pass
    problems = []
    for error in validator(schema, definition).iter_errors(doc):
        for field, message in _message(error):
            if partial and message == "is required":
                continue
            if at:
                field = field_path(at) + ("" if not field or field[0] == "[" else ".") + field
            problems.append(Problem(source, field or "(document)", message))
    return problems


def shape_validator(schema: dict[str, Any]) -> Any:
    """A validator of `schema`, a JSON schema given as a value (the shape of a document the
    tool wrote: a plan's, a lineage's), read as this module reads its files."""
    return _validator_class()(schema)


def shape_problem(doc: Any, checker: Any) -> tuple[str, str] | None:
    """The first violation of `doc` found by `checker` (`shape_validator`), as a field and a
    message (never the value itself at length); None when `doc` has the shape."""
    for error in checker.iter_errors(doc):
        said = _SHAPE_WORDS.get(error.validator)
        if said is not None:  # said without the value, which may be long
            return field_path(error.absolute_path) or "(the document)", said(error.validator_value)
        for field, message in _message(error):
            return field or "(the document)", message
    return None


_SHAPE_WORDS = {
    "oneOf": lambda _: "is none of the forms it may take",
    "anyOf": lambda _: "is none of the forms it may take",
    "minimum": lambda n: f"must be at least {n}",
    "maximum": lambda n: f"must be at most {n}",
    "minItems": lambda n: f"must hold at least {n} items",
    "maxItems": lambda n: f"must hold at most {n} items",
}
