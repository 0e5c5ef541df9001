"""jsonschema-rs answers for the schema checks of every job and table file (read/schemas): a
document it accepts is one jsonschema finds no violation in, or a broken file would load. Held
to jsonschema's answer over every job and table file the repository holds and thousands of
variants of them: each field given another type, a look-alike text, removed, or joined by an
unknown one."""

from __future__ import annotations

import copy
import datetime
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.read import schemas
from flink_sql_runner.read.schemas import _accepts, schema_problems, validator

ROOT = Path(__file__).resolve().parents[2]
JOB = {"name": "a", "sql": "SELECT 1", "target-table": "t", "checkpoint-root": "/tmp/ck"}

#: Values a field is given instead of its own: other types, texts a pattern must refuse (a
#: final newline, which Python's `$` lets through; a space; a dot; non-ASCII digits), edges.
ODD = [None, True, False, 0, -1, 1.5, 2**63, "", " ", "a\n", "a b", "a.b.c.d", "ａ", "٣",
       "x" * 300, "SELECT 1", [], ["a", "a"], {}, {"k": 1}, {"1": "v"}, "running", "stopped",
       "latest", "10 seconds", "append"]  # fmt: skip


def _corpus() -> list[tuple[str, Any]]:
    """(schema, document) for every job and table file under tests/, examples/ and
    templates/ that reads as a mapping."""
    found = []
    for path in sorted(ROOT.glob("*/**/*.y*ml")):
        if not path.is_file() or ".venv" in path.parts or "node_modules" in path.parts:
            continue
        if path.parts[len(ROOT.parts)] not in ("tests", "examples", "templates"):
            continue
        try:
            doc = yaml.safe_load(path.read_text("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        try:
            json.dumps(doc, default=str)
        except (ValueError, RecursionError):  # aliases that contain themselves
            continue
        if "tables" in doc and isinstance(doc["tables"], list):
            found.append(("tables", doc))
        elif {"sql", "target-table", "code", "name"} & set(doc):
            found.append(("job", doc))
    return found


def _variants(doc: Any, rng: random.Random, count: int) -> list[Any]:
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, at: tuple[Any, ...]) -> None:
        paths.append(at)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*at, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*at, index))

    walk(doc, ())
    out = []
    for _ in range(count):
        changed = copy.deepcopy(doc)
        at = rng.choice(paths)
        parent = changed
        for part in at[:-1]:
            parent = parent[part]
        how = rng.random()
        if not at:
            out.append(rng.choice(ODD))
            continue
        if how < 0.7:
            parent[at[-1]] = rng.choice(ODD)
        elif how < 0.85 and isinstance(parent, dict):
            del parent[at[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["nmae", "extra", "sql ", "Name"])] = rng.choice(ODD)
        out.append(changed)
    return out


def _checked(schema: str, definition: str | None, doc: Any) -> tuple[bool | None, bool]:
    try:
        fast = _accepts(schema, definition)(doc)
    except (ValueError, TypeError, OverflowError):
        fast = None  # worded by jsonschema, as schema_problems does
    return fast, not any(True for _ in validator(schema, definition).iter_errors(doc))


def test_the_corpus_holds_jobs_and_tables() -> None:
    kinds = [schema for schema, _ in _corpus()]
    assert kinds.count("job") >= 20 and kinds.count("tables") >= 10, kinds


def test_what_jsonschema_rs_accepts_jsonschema_finds_valid() -> None:
    rng = random.Random(57)
    disagree, compared = [], 0
    for schema, doc in _corpus():
        cases = [(None, doc), *((None, v) for v in _variants(doc, rng, 40))]
        if schema == "tables":  # each entry as the catalog checks it, alone
            cases += [("table", t) for t in doc["tables"]]
            cases += [("table", v) for t in doc["tables"][:3] for v in _variants(t, rng, 20)]
        for definition, case in cases:
            fast, slow = _checked(schema, definition, case)
            compared += 1
            # Refused by it and found valid by jsonschema: worded, and valid; only for values
            # JSON has no number for (an infinity, NaN, an integer beyond 64 bits).
            if fast is not None and fast != slow and (fast or not _beyond_json(case)):
                disagree.append((schema, definition, case, fast, slow))
    assert compared > 3000
    assert not disagree, disagree[:5]


def _beyond_json(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_beyond_json(v) for v in value.values())
    if isinstance(value, list):
        return any(_beyond_json(v) for v in value)
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({**JOB, "name": "a\n"}, "name"),
        ({**JOB, "description": datetime.date(2026, 1, 1)}, "description"),
        ({**JOB, "sparkProperties": {"spark.x": 2**70}}, None),
    ],
)  # fmt: skip
def test_a_document_it_refuses_or_cannot_read_is_worded_by_jsonschema(doc, field) -> None:
    problems = schema_problems(doc, "job", "job.yaml")
    assert [p.field for p in problems] == ([field] if field else []), problems


def test_without_jsonschema_rs_every_document_is_worded(monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "jsonschema_rs":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    schemas._accepts.cache_clear()
    monkeypatch.setattr(builtins, "__import__", refuse)
    try:
        assert schemas._accepts("job") is None
        doc = {**JOB, "name": "a\n"}
        assert [p.field for p in schema_problems(doc, "job", "job.yaml")] == ["name"]
    finally:
        monkeypatch.undo()
        schemas._accepts.cache_clear()
