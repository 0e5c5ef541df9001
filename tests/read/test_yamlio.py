"""Reading YAML through libyaml's parser gives what PyYAML's own parser gives: the same value,
or the same problem in the same words; and a file's bytes are read whole, up to the limit.
Writing it through libyaml's emitter gives what PyYAML's own emitter gives, byte for byte."""

from __future__ import annotations

import datetime
import random
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.read import yamlio
from flink_sql_runner.read.yamlio import YamlProblem, parse_yaml

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(
    p
    for folder in ("examples", "templates", "tests/data")
    for p in (REPO / folder).rglob("*")
    if p.suffix in (".yaml", ".yml")
)
SNIPPETS = {
    "block": "name: a\nsql: |\n  SELECT a FROM b WHERE c != 1 AND d[0] > 2\nx: []\ny: {}\n",
    "block-plain": "name: a\nsql: |\n  SELECT a FROM b WHERE c <> 1 AND d[0] > 2\nx: []\ny: {}\n",
    "quoted-placeholder": 'path: "{state_dir}/out/{job_name}"\n',
    "anchor-and-alias": "a: &x\n  k: 1\nb: *x\n",
    "merge-key": "base: &b\n  x: 1\nc:\n  <<: *b\n  y: 2\n",
    "duplicate-key": "a: 1\nb: 2\na: 3\n",
    "too-many-aliases": "a: &x 1\nb:\n" + "".join("  - *x\n" for _ in range(101)),
    "two-documents": "a: 1\n---\nb: 2\n",
    "unclosed-quote": "a: 'x\n",
    "bad-indent": "a:\n  b: 1\n c: 2\n",
    "tab-after-colon": "a:\tb\n",
    "flow-mapping": "options: {path: x, n: 1}\n",
    "tag": "a: !!str 1\n",
    "comment-after-block-header": "a: |#\n  x\n",
    "bom": "\ufeffa: 1\n",
    "line-separator": "a: b\u2028c: d\n",
    "implicit-types": "a: 0x1F\nb: 1_000\nc: .inf\nd: 2024-01-01\ne: yes\nf: ~\n",
    "deep": "a: " + "[" * 60 + "]" * 60 + "\n",
    "deep-31": "a: " + "[" * 31 + "]" * 31 + "\n",
    "deep-32": "a: " + "[" * 32 + "]" * 32 + "\n",
    "deep-33": "a: " + "[" * 33 + "]" * 33 + "\n",
    "deep-block": "".join("  " * i + f"k{i}:\n" for i in range(33)) + "  " * 33 + "v: 1\n",
    **{
        f"deep-block-{n}": "".join("  " * i + f"k{i}:\n" for i in range(n)) + "  " * n + "v: 1\n"
        for n in (14, 15, 16, 30, 31)
    },
    "nested-duplicate": "a:\n  b: 1\n  c:\n    d: 1\n    d: 2\n",
    "merge-flow": "base:\n  x: 1\nother:\n  <<: {x: 2}\n  y: 3\n",
    "number-key": "a:\n  1: x\n",
    # A tag under a merge key, whose mapping is only copied, never constructed (review 57, 3).
    "merge-tag": "name: orders\n<<: !=python/object\n  query: SELECT 1\n",
    "merge-list-tag": "name: orders\n<<:\n  - !=Ref\n    owner: team-a\n",
    "tag-directive": "%TAG != tag:yaml.org,2002:\n---\na: !=int 5\n",
    "sql-not-equal": "sql: SELECT a FROM b WHERE c!=1 AND d != 2\n",
    "empty": "",
    "list": "- 1\n- 2\n",
}


def outcome(text: str) -> tuple[str, Any]:
    try:
        return "value", repr(parse_yaml(text, "file.yaml"))
    except YamlProblem as exc:
        return "problem", str(exc.problem)


def both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """What the text reads as the way it is read, and by the pure loader; the way through
    libyaml's events alone must read it as the pure loader does too."""
    fast = outcome(text)
    with monkeypatch.context() as patched:
        patched.setattr(yamlio, "_LOADERS", (yamlio._StrictLoader,))
        pure = outcome(text)
        patched.setattr(yamlio, "_LOADERS", (yamlio._FastStrictLoader, yamlio._StrictLoader))
        assert outcome(text) == pure
    return fast, pure


def test_pyyaml_comes_with_libyaml() -> None:
    """PyPI's PyYAML wheels bundle libyaml; without it the comparisons below would compare the
    pure loader with itself and prove nothing."""
    assert yamlio.CParser is not None
    assert yamlio._LOADERS == (
        yamlio._ComposedStrictLoader,
        yamlio._FastStrictLoader,
        yamlio._StrictLoader,
    )


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_files_read_the_same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, pure = both_ways(path.read_text("utf-8", "replace"), monkeypatch)
    assert fast == pure


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippets_read_the_same_both_ways(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, pure = both_ways(SNIPPETS[name], monkeypatch)
    assert fast == pure


def test_plain_block_yaml_goes_through_libyaml_and_keeps_the_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used: list[str] = []
    read = yamlio._read

    def spy(loader_class: type, text: str) -> Any:
        used.append(loader_class.__name__)
        return read(loader_class, text)

    monkeypatch.setattr(yamlio, "_read", spy)
    assert parse_yaml(SNIPPETS["block"], "f")["x"] == []
    assert used == []  # plain block YAML: read by the shortcut (plain_yaml.py)
    with_float = SNIPPETS["block"] + "ratio: 0.5\n"  # a float: the shortcut gives up
    assert parse_yaml(with_float, "f")["ratio"] == 0.5
    assert used == ["_FastStrictLoader"]  # `!=`: a tag's mark, seen by the composer's checks
    used.clear()
    assert parse_yaml(SNIPPETS["block-plain"] + "ratio: 0.5\n", "f")["x"] == []
    assert used == ["_ComposedStrictLoader"]  # no alias or tag: libyaml composes the nodes
    used.clear()
    # A line that begins past column 100 could nest deeper than libyaml's composer may recurse.
    assert parse_yaml("a:\n" + " " * 120 + "b: 0.5\n", "f") == {"a": {"b": 0.5}}
    assert used == ["_FastStrictLoader"]
    used.clear()
    with pytest.raises(YamlProblem, match="duplicate key 'a'"):
        parse_yaml(SNIPPETS["duplicate-key"], "f")
    assert used == ["_ComposedStrictLoader", "_StrictLoader"]  # refused, then worded
    used.clear()
    with pytest.raises(YamlProblem, match="nested more than 32 levels deep"):
        parse_yaml(SNIPPETS["deep-block"], "f")
    assert used == ["_ComposedStrictLoader", "_StrictLoader"]
    used.clear()
    with pytest.raises(YamlProblem, match="more than 100 YAML aliases"):
        parse_yaml(SNIPPETS["too-many-aliases"], "f")
    # Aliases: composed, then read through libyaml's events, with the composer's checks.
    assert used == ["_ComposedStrictLoader", "_FastStrictLoader", "_StrictLoader"]
    used.clear()
    with pytest.raises(YamlProblem, match="tab character"):
        parse_yaml(SNIPPETS["tab-after-colon"], "f")  # libyaml would accept it
    assert used == ["_StrictLoader"]


@pytest.mark.parametrize("told", [0, 10, 150_000, 5_000_000])
def test_a_file_is_read_whole_whatever_size_it_was_said_to_have(tmp_path: Path, told: int) -> None:
    """The size a file had when it was looked at only sizes the first read: one that grew
    since is read to its end, up to one byte over the limit (which says it is too large)."""
    from flink_sql_runner.read.yamlio import MAX_FILE_BYTES, _read_bounded

    small, large = tmp_path / "small", tmp_path / "large"
    small.write_bytes(bytes(range(256)) * 600)  # 153,600 bytes: more than one read of 64 KiB
    large.write_bytes(b"x" * (MAX_FILE_BYTES + 5000))
    assert _read_bounded(str(small), told) == small.read_bytes()
    assert _read_bounded(str(large), told) == b"x" * (MAX_FILE_BYTES + 1)


# -- writing: libyaml's emitter where it writes what PyYAML's own writes ------------------------

#: Text of every kind the fast emitter takes: YAML's indicators, quotes, words YAML reads as
#: other types, numbers, leading and trailing spaces, and lengths around the 80-column fold
#: and the 128-character limit of a simple key (keys shorter than the fast emitter's limit).
_WORDS = ["true", "no", "null", "~", "1e3", "0x1F", "012", "1_000", "2024-01-01", ".inf", "-",
          "", " a", "a ", "- a", "? a", "a: b", "#x", "@x", "'", '"', "yes", "Off", "+1", "NaN",
          "%x", "!x", "&x", "*x", "|", ">", "a  b", "a ' b", "'a'", '"a"', "a #b"]  # fmt: skip
_CHARS = "abcXYZ019 _-.:/#'\"!&*%@`,[]{}|>?=+~$^()\\;<"


def _text(rng: random.Random, longest: int = 300) -> str:
    if rng.random() < 0.2:
        return rng.choice(_WORDS)
    size = min(longest, rng.choice([0, 1, 5, 30, 62, 63, 79, 80, 81, 127, 128, 129, 300]))
    return "".join(rng.choice(_CHARS) for _ in range(size))


def _key(rng: random.Random) -> str:
    return _text(rng, yamlio._FAST_KEY_LENGTH - 1) or "k"


def _value(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    if shared and rng.random() < 0.05:
        return rng.choice(shared)  # written once, then as an alias
    if depth > 3 or rng.random() < 0.5:
        return rng.choice(
            [
                _text(rng),
                _text(rng),
                rng.randint(-(10**9), 10**9),
                True,
                False,
                None,
                0.5,
                -3.25,
                1e20,
                1e-300,
                float("inf"),
                float("nan"),
            ]
        )
    if rng.random() < 0.3:
        made: Any = [_value(rng, depth + 1, shared) for _ in range(rng.randint(0, 3))]
    else:
        made = {_key(rng): _value(rng, depth + 1, shared) for _ in range(rng.randint(0, 5))}
    shared.append(made)
    return made


def dumped_both_ways(doc: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    fast = yamlio.dump_yaml(doc)
    with monkeypatch.context() as patched:
        patched.setattr(yamlio, "CSafeDumper", None)
        pure = yamlio.dump_yaml(doc)
    return fast, pure


@pytest.mark.parametrize("seed", range(4))
def test_plain_ascii_documents_are_written_the_same_both_ways(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        shared: list[Any] = []
        doc = {_key(rng): _value(rng, 0, shared) for _ in range(rng.randint(1, 8))}
        assert yamlio._plain_ascii(doc)
        fast, pure = dumped_both_ways(doc, monkeypatch)
        assert fast == pure


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_files_are_written_the_same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        doc = parse_yaml(path.read_text("utf-8", "replace"), str(path))
    except YamlProblem:
        return  # a file of the tests' hostile inputs
    fast, pure = dumped_both_ways(doc, monkeypatch)
    assert fast == pure


OTHER_DOCUMENTS = [
    {"sql": "SELECT 'é'"},
    {"sql": "SELECT a\nFROM b"},
    {"a": "tab\there"},
    {"k\r": 1},
    {"k" * 64: 1},
    {1: "a"},
    {"d": datetime.date(2024, 1, 1)},
    {"t": (1, 2)},
    {1.5: ["\u2028"]},
    None,
    ["a"],
]


@pytest.mark.parametrize("doc", OTHER_DOCUMENTS)
def test_other_documents_are_written_by_pyyaml_itself(
    doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where libyaml may write otherwise (other characters, which it quotes or escapes by its
    own rules, a line break, a long key, values of other types, a document that is not a
    mapping), PyYAML's own emitter writes: as before."""
    used: list[Any] = []
    with monkeypatch.context() as patched:
        patched.setattr(yamlio.yaml, "dump", lambda data, Dumper, **kw: used.append(Dumper))
        yamlio.dump_yaml(doc)
    assert used == [yamlio.yaml.SafeDumper]


@pytest.mark.parametrize(
    "text",
    ["- " * 100_000 + "x\n", "a:\n  b:\n    " + "- " * 60_000 + "y\n"],
    ids=["one-line", "after-a-mapping"],
)  # fmt: skip
def test_a_file_nested_a_hundred_thousand_levels_deep_is_refused_not_a_crash(text: str) -> None:
    """libyaml's own composer recurses once per level: a 200 KB file of `- - - ...` overflowed
    its stack (a segmentation fault: no line, no exit code 2). Read in a child, which a crash
    would kill (review of issue 57, 1)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom flink_sql_runner.read.yamlio import YamlProblem, parse_yaml\n"
        "try:\n    parse_yaml(sys.stdin.read(), 'deep.yaml')\nexcept YamlProblem as exc:\n"
        "    print(exc.problem)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "nested more than 32 levels deep" in done.stdout, done.stdout
