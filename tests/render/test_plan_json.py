"""`plan --output json`: written by the plan's own indenting encoder (render/plan.py), which
must write what `json.dumps(doc, indent=2, default=str)` writes, byte for byte."""

from __future__ import annotations

import enum
import json
import random
from pathlib import Path

import pytest

from flink_sql_runner.render.plan import indented_json


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


def values(rng: random.Random, depth: int = 0) -> object:
    """A value of any kind json.dumps takes (with default=str), nested up to 4 deep."""
    scalars = [
        None, True, False, 0, -7, 2**70, 1.5, -0.0, 1e300, float("nan"), float("inf"),
        float("-inf"), "", "plain", 'quote " and \\ back', "tab\tnew\nline", "é ü 中 \U0001f600",
        "\x00\x1f", Name("sub"), Level.HIGH, Colour.RED, Path("/a/b"), (1, "t"),
    ]  # fmt: skip
    if depth >= 4 or rng.random() < 0.4:
        return rng.choice(scalars)
    if rng.random() < 0.5:
        return [values(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["k", "", "é", 1, 2.5, True, False, None, Name("n"), Level.HIGH, "x\ny"]
    return {rng.choice(keys): values(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.parametrize("seed", range(200))
def test_it_writes_what_json_dumps_writes(seed: int) -> None:
    value = values(random.Random(seed))
    assert indented_json(value) == json.dumps(value, indent=2, default=str)


def test_empty_containers_and_keys_json_refuses() -> None:
    doc = {"jobs": [], "none": {}, "nested": [[], {}, [{}]]}
    assert indented_json(doc) == json.dumps(doc, indent=2, default=str)
    with pytest.raises(TypeError):
        indented_json({(1, 2): "a tuple key"})
