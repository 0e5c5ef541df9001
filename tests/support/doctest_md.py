"""Docs that cannot drift: the fenced blocks of the README and docs/*.md, read with the marker
before each, their command lines checked against the real command line, their output samples
compared with real output (tests/docs/).

A marker is an HTML comment on the line(s) just before a block's fence (invisible on GitHub):

    <!-- doc: output ID -->        the block is compared with real output by the doc test ID
    <!-- doc: shape ID -->         compared by its shape only (header and columns): ID's test
    <!-- doc: remote REASON -->    needs a remote cluster: its command lines are still checked
    <!-- doc: illustrative REASON -->  hand-written or measured; REASON says why it is not run

Blocks in `bash` (and `$ ` lines in any block) are command lines; `yaml`, `sql` and `python`
blocks are inputs; every other block is an output sample and needs a marker.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import click

from tests.support.cli import REPO

#: What the doc tests read: the README, the contributors' and the changelog's pages, and every
#: page of the docs site (docs/, its folders included).
TOP = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
DOCS = [*TOP, *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]


def page_with(needle: str) -> tuple[str, str]:
    """The one page of DOCS whose text holds `needle`, and its text: for the tests that check
    a part of a page (a generated table, a list), wherever the docs keep it."""
    found = [(doc, text) for doc in DOCS if needle in (text := (REPO / doc).read_text())]
    assert len(found) == 1, (
        f"{len(found)} pages of the docs hold {needle!r}: {[d for d, _ in found]}"
    )
    return found[0]


#: Blocks in these languages are inputs (manifests, catalogs, code), not samples of output.
INPUTS = ("yaml", "sql", "python")
COMMANDS = ("bash", "sh", "shell", "console")
KINDS = ("output", "shape", "remote", "illustrative")
MARKER = re.compile(r"^\s*<!--\s*doc:\s*(\S+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Marker:
    kind: str
    detail: str


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text (indentation removed), the marker
    before it."""

    path: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: Marker | None = None
    problems: tuple[str, ...] = field(default=())

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def is_output(self) -> bool:
        return self.lang not in INPUTS + COMMANDS


def read_blocks(path: str, text: str | None = None) -> list[Block]:
    """Every fenced block of `path` (relative to the repository), with its marker."""
    lines = (text if text is not None else (REPO / path).read_text()).splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, fence, lang = opened.groups()
        close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = index + 1
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip()
                for line in lines[index + 1 : end]]  # fmt: skip
        marker, problems = _marker_before(lines, index)
        blocks.append(Block(path, index + 1, lang.lower(), "\n".join(body), marker, problems))
        index = end + 1
    return blocks


def _marker_before(lines: list[str], index: int) -> tuple[Marker | None, tuple[str, ...]]:
    before = index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0:
        return None, ()
    found = MARKER.match(lines[before])
    if not found:
        if "<!-- doc" in lines[before]:
            return None, (f"line {before + 1}: a doc marker not read: {lines[before].strip()}",)
        return None, ()
    kind, detail = found.groups()
    if kind not in KINDS:
        return None, (f"line {before + 1}: unknown doc marker kind {kind!r} (one of {KINDS})",)
    if not detail:
        return None, (f"line {before + 1}: doc marker {kind!r} says no id or reason",)
    return Marker(kind, detail), ()


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in read_blocks(path)]


# -- command lines --------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandLine:
    where: str
    text: str
    argv: list[str]


def command_lines(block: Block) -> list[CommandLine]:
    """The command lines of a block: every line of a `bash` block, the `$ ` lines of any
    other; a trailing backslash continues a line, `#` starts a comment."""
    raw = block.text.splitlines()
    found: list[CommandLine] = []
    index = 0
    while index < len(raw):
        line, first = raw[index], index
        index += 1
        if block.lang not in COMMANDS:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        while line.rstrip().endswith("\\") and index < len(raw):
            line = line.rstrip()[:-1] + " " + raw[index].strip()
            index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{block.path}:{block.line + 1 + first}"
        while True:
            try:
                argv = split(line)
            except ValueError as exc:
                if "quotation" in str(exc) and index < len(raw):  # a quote spans lines
                    line += "\n" + raw[index]
                    index += 1
                    continue
                argv = ["<unreadable>", str(exc)]
            break
        found.append(CommandLine(where, line, argv))
    return found


def inline_command_lines(path: str, text: str | None = None) -> list[CommandLine]:
    """The command lines of the prose: code spans that start with `flink-sql-runner `,
    `python -m ` or `pytest ` (outside fenced blocks)."""
    lines = (text if text is not None else (REPO / path).read_text()).splitlines()
    fenced: set[int] = set()
    for block in read_blocks(path, text):
        fenced.update(range(block.line - 1, block.line + len(block.text.splitlines()) + 1))
    found = []
    for number, line in enumerate(lines):
        if number in fenced:
            continue
        for span in re.finditer(r"(?<!`)`((?:flink-sql-runner|python3? -m|pytest) [^`]+)`", line):
            try:
                argv = split(span.group(1))
            except ValueError as exc:
                argv = ["<unreadable>", str(exc)]
            found.append(CommandLine(f"{path}:{number + 1}", span.group(1), argv))
    return found


def split(line: str) -> list[str]:
    """A command line's words as a shell splits them, with `&&`, `|`, `>` apart."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def simple_commands(argv: list[str]) -> list[list[str]]:
    """`a && b | c > f` as [a, b, c]: what follows a redirection is a file, not a command."""
    commands: list[list[str]] = [[]]
    skip = False
    for token in argv:
        if token in ("&&", "||", ";", "|", "&"):
            commands.append([])
        elif token in (">", ">>", "<", "2>", "2>&1"):
            skip = True
        elif skip:
            skip = False
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def check_command(argv: list[str]) -> list[str]:
    """What is wrong with one command line as the docs show it (empty: nothing)."""
    if argv[:1] == ["<unreadable>"]:
        return [f"cannot be split as a shell would: {argv[1]}"]
    problems: list[str] = []
    for command in simple_commands(argv):
        while command and re.match(r"^[A-Z_]+=", command[0]):
            command = command[1:]  # VAR=value command
        if not command:
            continue
        program = Path(command[0]).name
        if program == "flink-sql-runner":
            problems += check_cli(command[1:])
        elif program in ("python", "python3") and command[1:2] == ["-m"]:
            problems += check_module(command[2], command[3:])
        elif program in ("python", "python3") and command[1:2] == ["-c"]:
            try:
                compile(command[2], "<python -c>", "exec")
            except SyntaxError as exc:
                problems.append(f"python -c: {exc}")
        elif program == "pytest":
            problems += check_pytest(command[1:])
    return problems


def _cli_main() -> click.Group:
    from flink_sql_runner.cli.main import main

    return main


def check_cli(args: list[str]) -> list[str]:
    """`flink-sql-runner ARGS`: the command exists, takes every option given and every value
    of an option with choices; nothing is run. Words in capitals (NAME, DIR) stand for values."""
    main = _cli_main()
    if not args or args[0] in ("--help", "-h", "--version"):
        return []
    command = main.get_command(click.Context(main), args[0])
    if command is None:
        known = ", ".join(main.list_commands(click.Context(main)))
        return [f"flink-sql-runner has no command {args[0]!r} (it has: {known})"]
    from flink_sql_runner.cli.original_flags import expand_greedy

    # As the program makes it (its context settings: -h and --help): a context without them
    # would leave each command's help option cached as `--help` alone, for every later reader of
    # the command in this process (click caches it; tests/docs/reference.py reads it).
    parent = click.Context(main, info_name="flink-sql-runner", **main.context_settings)
    rest = args[1:]
    if not any(isinstance(p, click.Argument) for p in command.params):
        rest = expand_greedy(rest)
    try:
        ctx = command.make_context(args[0], list(rest), parent=parent, resilient_parsing=True)
    except click.UsageError as exc:
        return [f"flink-sql-runner {args[0]}: {exc.format_message()}"]
    problems = []
    if ctx.args:
        problems.append(f"flink-sql-runner {args[0]}: takes no arguments {ctx.args}")
    problems += _choices(command, ctx, rest)
    return problems


def _choices(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """Every value given to an option with choices, a number or a range: one the option takes
    (`--output text|json` names several; a word in capitals stands for any)."""
    by_name = {
        name: param
        for param in command.get_params(ctx)
        if isinstance(param, click.Option)
        for name in param.opts
    }
    problems = []
    for index, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        param = by_name.get(name)
        if param is None or param.is_flag or param.count:
            continue
        if not equals:
            value = args[index + 1] if index + 1 < len(args) else ""
        if not isinstance(
            param.type, (click.Choice, click.types.IntParamType, click.types.FloatParamType)
        ):
            continue
        for one in value.split("|"):
            if one.isupper() or one in ("...", "N"):
                continue
            try:
                param.type.convert(one, param, ctx)
            except click.BadParameter as exc:
                problems.append(f"flink-sql-runner {ctx.info_name} {name} {one}: {exc.message}")
    return problems


@cache
def _module_help(module: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    return run.stdout + run.stderr


def check_module(module: str, args: list[str]) -> list[str]:
    """`python -m MODULE ARGS`: the module exists and its --help names every option given."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return [f"python -m {module}: no such module"]
    problems: list[str] = []
    if not module.startswith(("tests.", "flink_sql_runner.")):
        return problems
    shown = _module_help(module)
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        option, equals, value = arg.partition("=")
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown):
            problems.append(f"python -m {module}: its --help has no option {option}")
            continue
        # An option whose help is a list of names (`--only ONLY  plan,runner`) takes those.
        names = re.search(rf"^\s*{re.escape(option)} [A-Z_]+\s+([a-z-]+(?:,[a-z-]+)+)\s*$",
                          shown, re.M)  # fmt: skip
        if names:
            value = value if equals else (args[index + 1] if index + 1 < len(args) else "")
            problems += [
                f"python -m {module} {option}: {one!r} is not one of {names.group(1)}"
                for one in value.split(",")
                if one not in names.group(1).split(",")
            ]
    return problems


def pytest_markers() -> set[str]:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    return {marker.split(":")[0].strip() for marker in markers}


def check_pytest(args: list[str]) -> list[str]:
    """`pytest ARGS`: the markers of `-m` are registered, the paths exist."""
    problems = []
    known = pytest_markers()
    for index, arg in enumerate(args):
        if arg == "-m" and index + 1 < len(args):
            words = re.findall(r"[\w-]+", args[index + 1])
            problems += [
                f"pytest -m: no marker {word!r} (pyproject.toml has {sorted(known)})"
                for word in words
                if word not in ("and", "or", "not") and word not in known
            ]
        elif not arg.startswith("-") and (index == 0 or args[index - 1] not in ("-m", "-n", "-k")):
            path = arg.split("::")[0]
            if not (REPO / path).exists():
                problems.append(f"pytest: no such test file or folder {path}")
    return problems


# -- output samples -------------------------------------------------------------------------

#: What differs from run to run, each replaced by one word on both sides before comparing.
VOLATILE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?Z?"), "<time>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}(\.\d+)?Z"), "<stamp>"),  # an archived copy's name
    (re.compile(r"\b\d{8}T\d{6}(\.\d+)?Z"), "<stamp>"),  # a log file's name
    (re.compile(r"\b\d+(\.\d+)? (B|KiB|MiB|GiB)\b"), "<size>"),
    (re.compile(r"\b\d+ (file|item)s?\b"), r"<count> \1s"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}\b"), "<time>"),
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"\b\d+(\.\d+)? ?s\b"), "<seconds>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hash>"),
]


def normalise(text: str, replacements: dict[str, str] | None = None) -> str:
    """Times, durations, pids, ids and hashes as words; `replacements` first (a temp folder
    as `.flink-sql-runner`, say); trailing spaces dropped and runs of spaces made two, so that
    a column that widened for a longer pid compares equal."""
    for old, new in (replacements or {}).items():
        text = text.replace(old, new)
    for pattern, word in VOLATILE:
        text = pattern.sub(word, text)
    lines = [re.sub(r" {2,}", "  ", line.rstrip()) for line in text.strip("\n").splitlines()]
    return "\n".join(lines)


def _pattern(expected: str) -> re.Pattern[str]:
    """The sample as a pattern: a line `...` stands for any lines (none included), `...` in a
    line for any text."""
    parts = []
    for line in expected.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = [re.escape(piece) for piece in line.split("...")]
        parts.append(".*?".join(pieces) + r"\n")
    return re.compile("".join(parts), re.S)


def mismatch(block: Block, actual: str, replacements: dict[str, str] | None = None) -> str | None:
    """None when `actual` reads as the sample says; else where the sample is and the diff."""
    expected = normalise(block.text, replacements)
    real = normalise(actual, replacements)
    if _pattern(expected).fullmatch(real + "\n"):
        return None
    diff = difflib.unified_diff(
        expected.splitlines(),
        real.splitlines(),
        f"{block.where} (the sample, normalised)",
        "the real output, normalised",
        lineterm="",
    )
    return f"{block.where}: the sample is not what the command prints\n" + "\n".join(diff)


def shape_mismatch(block: Block, actual: str) -> str | None:
    """For samples of running jobs: the first line (a header) as the real one, and every other
    line with as many columns (runs of two spaces) as the real output's."""
    expected = normalise(block.text).splitlines()
    real = normalise(actual).splitlines()
    problems = []
    if expected[:1] != real[:1]:
        problems.append(f"header: the sample's {expected[:1]} is not the real {real[:1]}")
    columns = {len(line.split("  ")) for line in real[1:] if not line.startswith(" ")}
    for number, line in enumerate(expected[1:], start=2):
        if line.startswith(" ") or not line or "..." in line:
            continue
        if len(line.split("  ")) not in columns:
            problems.append(f"line {number}: {len(line.split('  '))} columns, real rows have "
                            f"{sorted(columns)}: {line}")  # fmt: skip
    if not problems:
        return None
    return f"{block.where}: the sample's shape is not the real output's\n" + "\n".join(problems)
