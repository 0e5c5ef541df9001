"""The plain-YAML shortcut reads a text exactly as PyYAML's strict loaders do, or gives up.

Fuzzed against them: documents made of the forms it reads and of those it must not (numbers,
dates, anchors, flow collections, comments, quotes, blocks at every indentation), then cut and
changed a character at a time. Wherever the shortcut answers, the pure loader, and the chain
that read every file before it, must give the same value with the same types."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.read import yamlio
from flink_sql_runner.read.plain_yaml import read_plain_yaml
from flink_sql_runner.read.yamlio import YamlProblem, parse_yaml
from tests.read.test_yamlio import FILES, REPO, SNIPPETS

pytestmark = pytest.mark.fast

KEYS = ["name", "sql", "a", "b.c", "spark.sql.x", "target-table", "_x", "$k", "yes", "On", "1",
        "0x1", "1.5", "null", "~", "<<", "x y", "a:b", "-a", "'q'", "y", "n", "a#b",
        "2020-01-01"]  # fmt: skip
#: Values the shortcut reads, and values it must not misread.
SCALARS = ["x", "a b", "SELECT a, b FROM t WHERE c != 1 AND d[0] > 2", "1", "-1", "0x1F", "017",
           "1_000", "1:30", "yes", "No", "On", "off", "~", "null", "true", "a#b", "x:y",
           "s3a://b/p?x=1", "'q'", "'it''s'", "'a'''", "''", "\"d\"", "\"a'b\"", "\"\"", "[]",
           "{}", "a\\b", "a ,b", "{state_dir}/out", "é", "日本", "1" * 20]  # fmt: skip
ODD = ["+1", "0o17", "1e3", "1.5", ".inf", "Null", "NULL", "2020-01-01", "2020-01-01 10:00:00",
       "a #b", "x: y", "a:", ":a", "-a", "- a", "?a", "'a'b'", "\"e\\n\"", "[ ]", "[a]",
       "{a: 1}", "&a x", "*a", "!x", "!!str 1", "|", "|-", "|+", ">", "%x", "@x", "`x", "=",
       "<<", "a  ", "{x}", "9" * 5000]  # fmt: skip
BLOCK_LINES = ["SELECT 1", "  FROM t", "", "   ", "# not a comment", "WHERE a = 'x'", "x: y",
               "- z", "      deep", "\\", "'"]  # fmt: skip


def _document(rng: random.Random, indent: int, depth: int) -> list[str]:
    """Lines of a mapping or a list at `indent`."""
    pad, lines = " " * indent, []
    if depth > 0 and rng.random() < 0.3:
        for _ in range(rng.randint(1, 3)):
            lines += _item(rng, indent, depth)
        return lines
    names = rng.sample(KEYS[:7], rng.randint(1, 4))
    for key in names:
        if rng.random() < 0.1:
            lines.append(pad + rng.choice(["# a comment", "#", ""]) + rng.choice(["", " "]))
        key = rng.choice(KEYS) if rng.random() < 0.05 else key
        lines += _entry(rng, pad + key, indent, depth)
    return lines


def _entry(rng: random.Random, head: str, indent: int, depth: int) -> list[str]:
    """`head:` and its value, on its line or below it."""
    roll = rng.random()
    if roll < 0.45 or depth > 3:
        return [f"{head}: {_scalar(rng)}" + rng.choice(["", "", "", " ", "  # c"])]
    if roll < 0.6:
        return [f"{head}: {rng.choice(['|', '|', '|-', '|-', '|+', '>', '|2'])}"] + [
            " " * (indent + rng.choice([1, 2, 2, 4])) + rng.choice(BLOCK_LINES)
            for _ in range(rng.randint(0, 4))
        ]
    if roll < 0.68:
        words = [rng.choice(["'x", "'a b", "'"]) + rng.choice(["", " ", "''"])]
        for _ in range(rng.randint(1, 4)):
            words.append(" " * rng.choice([0, indent, indent + 2, indent + 2]) +
                         rng.choice(["y", "", "  ", "z''", "w'", "it's", "c'", "---"]))  # fmt: skip
        return [f"{head}: {words[0]}", *words[1:]]
    if roll < 0.72:
        return [f"{head}: {rng.choice(['x', 'a b'])}", " " * (indent + 2) + "more"]
    step = rng.choice([0, 1, 2, 2, 4])
    return [f"{head}:"] + _document(rng, indent + step, depth + 1)


def _scalar(rng: random.Random) -> str:
    return rng.choice(ODD) if rng.random() < 0.1 else rng.choice(SCALARS)


def _item(rng: random.Random, indent: int, depth: int) -> list[str]:
    pad = " " * indent
    roll = rng.random()
    if roll < 0.4:
        return [f"{pad}- {_scalar(rng)}"]
    if roll < 0.8:
        spaces = rng.choice([1, 1, 1, 3])
        first = _entry(rng, pad + "-" + " " * spaces + rng.choice(KEYS[:7]), indent, depth + 1)
        column = indent + 1 + spaces
        rest = _document(rng, column + rng.choice([0, 0, 0, 1, -1]), depth + 1)
        return first + (rest if rng.random() < 0.6 else [])
    return [f"{pad}-"] + _document(rng, indent + 2, depth + 1)


def _mutated(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        what = rng.choice([" ", "  ", ":", "#", "-", "'", '"', "\n", "", "|", "\t", "&", "*"])
        cut = rng.choice([0, 0, 1])
        text = text[:at] + what + text[at + cut :]
    return text


def pure(text: str) -> tuple[str, Any]:
    """What PyYAML's own loader, with the strict checks, reads `text` as."""
    try:
        return "value", yamlio._read(yamlio._StrictLoader, text)
    except (yaml.YAMLError, RecursionError) as exc:
        return "problem", type(exc).__name__


def chain(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """What `parse_yaml` read `text` as before the shortcut."""
    with monkeypatch.context() as patched:
        patched.setattr(yamlio, "read_plain_yaml", lambda _text: (False, None))
        try:
            return "value", parse_yaml(text, "f.yaml")
        except YamlProblem as exc:
            return "problem", str(exc.problem)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not True, and not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check(text: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the shortcut answered; where it did, that its answer is the loaders'."""
    answered, value = read_plain_yaml(text)
    if answered:
        reference = pure(text)
        assert reference[0] == "value", (text, reference)
        assert same(value, reference[1]), (text, value, reference[1])
        before = chain(text, monkeypatch)
        assert before[0] == "value" and same(value, before[1]), (text, value, before)
    return answered


@pytest.mark.parametrize("seed", range(6))
def test_the_shortcut_reads_as_pyyaml_reads_or_gives_up(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    answered = total = 0
    for _ in range(600):
        text = "\n".join(_document(rng, 0, 0)) + rng.choice(["", "\n", "\n\n"])
        answered += check(text, monkeypatch)
        total += 1
        check(_mutated(rng, text), monkeypatch)
    # Else a shortcut that always gave up would pass.
    assert answered > total * 0.15, (answered, total)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_the_project_files_read_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(path.read_text("utf-8", "replace"), monkeypatch)


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_the_snippets_read_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(SNIPPETS[name], monkeypatch)


def test_what_users_write_takes_the_shortcut() -> None:
    """The forms of job and table files, the template and the manifests the deployer writes:
    read here, not given up on."""
    job = (
        "# orders, daily\nname: orders_daily\ndescription: 'Orders per day, it''s UTC'\n"
        "sql: |\n  SELECT day, count(*) AS n\n\n  FROM orders  -- not a comment here\n"
        "  GROUP BY day\ntarget-table: daily\nsparkProperties:\n"
        "  spark.sql.shuffle.partitions: '4'\n  spark.sql.session.timeZone: UTC\n"
        "trigger:\n  processingTime: 10 seconds\nenabled: true\nretries: 3\nnote: ~\n"
    )
    answered, value = read_plain_yaml(job)
    assert answered
    assert value["sql"] == "SELECT day, count(*) AS n\n\nFROM orders  -- not a comment here\n" \
        "GROUP BY day\n"  # fmt: skip
    assert value["description"] == "Orders per day, it's UTC"
    assert (value["enabled"], value["retries"], value["note"]) == (True, 3, None)
    tables = (
        "tables:\n- name: orders\n  format: json\n  options:\n    path: s3a://b/orders\n"
        "    maxFilesPerTrigger: 10\n  schema: id BIGINT, ts TIMESTAMP\n- name: daily\n"
        "  format: parquet\n  options: {}\n"
    )
    assert read_plain_yaml(tables) == (True, yaml.safe_load(tables))
    written = yamlio.dump_yaml({"name": "a", "sql": "SELECT a\nFROM b\n\nWHERE c = 'x'", "n": 1})
    assert read_plain_yaml(written) == (True, yaml.safe_load(written))


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1025 + ":",
        "a" * 1025 + ": 1",
        "x: 1\n" + "a" * 1025 + ": 1",
        "- " + "a" * 1025 + ": 1",
        "x:\n  " + "a" * 1025 + ": 1",
    ],  # fmt: skip
)
def test_a_key_longer_than_pyyaml_takes_is_given_up_on(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML takes a key of at most 1,024 characters (review 57, plain YAML, 1)."""
    assert pure(text)[0] == "problem"
    assert read_plain_yaml(text) == (False, None)
    assert check("a" * 1000 + ": 1", monkeypatch)  # a long key it takes is read


def test_it_gives_up_where_pyyaml_words_a_problem() -> None:
    for text in ("a: 1\na: 2\n", "a: b: c\n", "a:\n  b: 1\n c: 2\n", "a: 'x\n", "a: [x\n",
                 "yes: 1\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: 1\n---\nb: 2\n",
                 "a:\tb\n", "a: \x07\n"):  # fmt: skip
        assert read_plain_yaml(text) == (False, None), text
