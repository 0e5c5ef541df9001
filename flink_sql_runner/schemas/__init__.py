"""The jsonschema files shipped with the package, and their errors as user-facing problems."""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from flink_sql_runner.errors import Problem


@cache
def validator(name: str) -> Draft202012Validator:
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    return Draft202012Validator(json.loads(text))


def field_path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
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
        return [(path, f"must be {words}, got {_type_name(error.instance)}")]
    if kind == "pattern":
        hint = schema.get("description") or f"must match {error.validator_value}"
        return [(path, f"{shown(error.instance)} is not allowed: {hint}")]
    if kind == "propertyNames":
        return [(path, f"key {shown(error.instance)} is not allowed")]
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


def _type_name(value: Any) -> str:
    for name, pytype in (
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


def schema_problems(doc: Any, schema: str, source: str) -> list[Problem]:
    """Every schema violation of `doc`, as problems naming `source` and the field."""
    return [
        Problem(source, field or "(document)", message)
        for error in validator(schema).iter_errors(doc)
        for field, message in _message(error)
    ]
