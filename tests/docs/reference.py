"""The reference pages made from the code itself (docs/reference/), so that they cannot drift:

- the command line, from click's objects (`cli/index.md` and one page per command);
- every command's exit codes, from the "Exit codes:" paragraph of its help (`exit-codes.md`);
- the environment variables the options read, and the few the code reads itself
  (`environment.md`; those are kept by hand in `READ_BY_THE_CODE`);
- the fields of a job manifest and of a table catalog, from the JSON schemas in
  `flink_sql_runner/read/schemas/` (`manifest-fields.md`, `catalog-fields.md`);
- what is safe to change, from `flink_sql_runner/decide/changes.py` (`change-rules.md`).

`python -m tests.docs.reference --write` writes them; without `--write` it lists the pages that
differ from what the code makes now. tests/docs/test_reference.py fails on any such page.
Nothing here depends on the terminal, the clock, the environment or where the repository is."""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import yaml

from flink_sql_runner.act.saved_plan import KEY_MIN
from flink_sql_runner.cli.options import SpelledBefore

REPO = Path(__file__).resolve().parents[2]
#: Where the pages go, relative to the repository.
REFERENCE = Path("docs/reference")
#: The command that writes them, as every page says.
COMMAND = "python -m tests.docs.reference --write"
#: The installed program's name: the one the usage lines and shell completion use.
PROG = "flink-sql-runner"
#: The variable click reads for shell completion: `_{PROG}_COMPLETE`, dashes as underscores,
#: upper case (click's `Command._main_shell_completion`).
COMPLETE_VAR = "_" + PROG.replace("-", "_").upper() + "_COMPLETE"
#: The shells whose completion the index page shows, with where each keeps the line.
SHELLS = (
    ("Bash (4.4 or later)", "~/.bashrc", f'eval "$({COMPLETE_VAR}=bash_source {PROG})"'),
    ("Zsh", "~/.zshrc", f'eval "$({COMPLETE_VAR}=zsh_source {PROG})"'),
    (
        "Fish",
        f"~/.config/fish/completions/{PROG}.fish",
        f"{COMPLETE_VAR}=fish_source {PROG} | source",
    ),
)
#: The marker the docs' harness (tests/support/doctest_md.py) reads before a block that is not
#: real output to compare: a usage line.
USAGE_MARKER = "<!-- doc: illustrative the usage line, made from click's objects -->"

#: The FLINK_SQL_RUNNER_ variables the code reads itself, not through an option: name, where,
#: meaning. tests/docs/test_reference.py fails when the code names one this table does not.
READ_BY_THE_CODE: dict[str, tuple[str, str]] = {
    "FLINK_SQL_RUNNER_PLAN_KEY": (
        "`plan --out`, `deploy --plan`, `deploy-job --plan`",
        "The key that signs a saved plan and checks its signature (HMAC-SHA256; at least "
        f"{KEY_MIN} characters). Read from the environment only, never from the command line. "
        "No child process gets it. See "
        "[the pull request as the gate](../tutorials/pull-request-gate.md).",
    ),
    "FLINK_SQL_RUNNER_STATE_DIR": (
        "every command (as `--state-dir`), and settings the code makes itself",
        "The state folder when `--state-dir` is not given. Not set: `.flink-sql-runner` in the "
        "folder the command runs in.",
    ),
    "FLINK_SQL_RUNNER_USER_CACHE": (
        "`jvm-archive --for-plan`, and the local Spark a plan, `preview` or `inspect --state` "
        "starts",
        "This user's own cache folder: where `jvm-archive --for-plan` keeps the archive those "
        "local Sparks start from (its `jvm/`). An absolute path, in no checkout. Not set: "
        "`$XDG_CACHE_HOME/flink-sql-runner`, else `~/.cache/flink-sql-runner` (the home folder "
        "the system knows for this user, not `$HOME`). See "
        "[start faster](../how-to/faster-starts.md).",
    ),
    "FLINK_SQL_RUNNER_TIMING_LOG": (
        "every command",
        "A file to which each step of a command appends one JSON line with its time. Meant for "
        "benchmarks; off when not set.",
    ),
}


# -- Markdown --------------------------------------------------------------------------------


def inline(text: str) -> str:
    """`text` as one line of Markdown that GitHub and MkDocs both show as written: outside code
    spans, `<` (read as an HTML tag), `*` (emphasis) and `|` (a table's cell) are escaped."""
    parts = re.split(r"(`+[^`]*`+)", " ".join(text.split()))
    out = []
    for index, part in enumerate(parts):
        if index % 2:  # a code span
            out.append(part.replace("|", "\\|"))
        else:
            out.append(part.replace("<", "&lt;").replace("*", "\\*").replace("|", "\\|"))
    return "".join(out)


def code(value: Any) -> str:
    text = str(value)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return lines


def page(title: str, source: str, body: list[str]) -> str:
    """A page: its title, the line that says it is generated and from what, its body."""
    intro = f"Generated from {source} by `{COMMAND}`: edit the code, not this page."
    lines = [f"# {title}", "", intro, "", *body]
    while lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


# -- the command line ------------------------------------------------------------------------


def _main() -> click.Group:
    from flink_sql_runner.cli.main import main

    return main


def commands() -> dict[str, click.Command]:
    """Every command the group lists and does not hide, by name (sorted, as --help lists them)."""
    main = _main()
    ctx = root_context()
    found = {}
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None and not command.hidden:
            found[name] = command
    return found


def root_context() -> click.Context:
    """The group's context, its width set: nothing depends on the terminal."""
    main = _main()
    settings = {**main.context_settings, "terminal_width": 100, "max_content_width": 100}
    return click.Context(main, info_name=PROG, **settings)


def context(name: str, command: click.Command) -> click.Context:
    return click.Context(
        command, info_name=name, parent=root_context(), terminal_width=100, max_content_width=100
    )


def help_paragraphs(command: click.Command) -> list[str]:
    """The command's help as Markdown paragraphs, its exit codes left out (`exit_codes`)."""
    text = inspect.cleandoc(command.help or "").split("\f")[0]
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.replace("\b", "").strip()
        if paragraph and not paragraph.startswith("Exit codes"):
            paragraphs.append(inline(paragraph))
    return paragraphs


def exit_codes(command: click.Command) -> list[tuple[str, str]]:
    """(code, meaning) of the command's "Exit codes: 0 ..., 1 ..." paragraph, as its help says
    them. ValueError when the help says none, or says them otherwise."""
    found = re.search(r"Exit codes:(.*?)(?:\n\s*\n|\Z)", inspect.cleandoc(command.help or ""), re.S)
    if not found:
        raise ValueError(f"{command.name}: its help says no exit codes")
    text = " ".join(found.group(1).replace("\b", "").split()).rstrip(".")
    text = re.sub(r"^[^\d]*?:\s*", "", text)  # "as deploy's: 0 ok, ..."
    out = []
    for item in re.split(r"[,;]\s+(?=\d+ )", text):
        one = re.fullmatch(r"(\d+) (.+)", item.strip())
        if not one:
            raise ValueError(f"{command.name}: cannot read exit code {item!r}")
        out.append((one.group(1), one.group(2)))
    return out


def _unset(value: Any) -> bool:
    return value is None or value is getattr(click.core, "UNSET", object())


def _range(kind: click.ParamType) -> str:
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    low_word = "more than" if getattr(kind, "min_open", False) else "at least"
    high_word = "less than" if getattr(kind, "max_open", False) else "at most"
    if low is not None and high is not None:
        return f"{low_word} {low}, {high_word} {high}"
    if low is not None:
        return f"{low_word} {low}"
    return f"{high_word} {high}" if high is not None else ""


def type_text(param: click.Parameter) -> str:
    kind = param.type
    if isinstance(param, click.Option) and param.count:
        text = "count"
    elif isinstance(param, click.Option) and param.is_flag:
        text = "flag"
    elif isinstance(kind, click.Choice):
        text = "one of " + ", ".join(code(getattr(c, "value", c)) for c in kind.choices)
    elif isinstance(kind, (click.IntRange, click.FloatRange)):
        number = "integer" if isinstance(kind, click.IntRange) else "number"
        bounds = _range(kind) if (kind.min, kind.max) != (None, None) else ""
        text = f"{number}, {bounds}" if bounds else number
    elif isinstance(kind, click.types.FloatParamType):
        text = "number"
    elif isinstance(kind, click.types.IntParamType):
        text = "integer"
    else:
        text = kind.name
    if param.multiple:
        text += "; repeatable"
    elif param.nargs == -1:
        text += "; any number"
    return text


def default_text(param: click.Parameter) -> str:
    if param.required:
        return "required"
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        return inline(shown)
    value = param.default
    if _unset(value) or callable(value) or value in ((), []):
        return ""
    if isinstance(param, click.Option) and param.is_flag:
        if value is True and param.secondary_opts:
            return code(param.opts[0])
        return "on" if value is True else ""
    if isinstance(value, (list, tuple)):
        return ", ".join(code(v) for v in value)
    return code(getattr(value, "value", value))


def envvars(param: click.Parameter) -> list[str]:
    found = param.envvar
    if not found:
        return []
    return [found] if isinstance(found, str) else list(found)


def option_help(param: click.Parameter) -> str:
    """An option's help, without the note of its variable the group adds (cli/main.py): the
    variable has a column of its own."""
    text = getattr(param, "help", None) or ""
    return re.sub(r"\s*\[env var: [^\]]*\]", "", text).strip()


def shown_params(command: click.Command, ctx: click.Context) -> Iterator[click.Parameter]:
    """The parameters --help shows: every argument, every option with a help line (a hidden one
    has none)."""
    cached = command.get_help_option(ctx)
    for param in command.get_params(ctx):
        if param is cached and cached is not None:
            # click caches a command's help option as the first context that asked made it: a
            # test's bare context makes it `--help` alone. The program's is made from its
            # context settings, as `ctx` has them.
            names = command.get_help_option_names(ctx)
            param = click.Option(names, is_flag=True, help=cached.help)
        if isinstance(param, click.Argument) or param.get_help_record(ctx) is not None:
            yield param


def options_table(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in shown_params(command, ctx):
        if not isinstance(param, click.Option):
            continue
        names = ", ".join(code(o) for o in (*param.opts, *param.secondary_opts))
        if param.metavar and not param.is_flag:
            names += " " + code(param.metavar)
        rows.append(
            [
                names,
                type_text(param),
                default_text(param),
                ", ".join(code(v) for v in envvars(param)),
                inline(option_help(param)),
            ]
        )
    return table(["option", "type", "default", "environment variable", "description"], rows)


def arguments_table(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in shown_params(command, ctx):
        if isinstance(param, click.Argument):
            rows.append(
                [
                    code(param.make_metavar(ctx)),
                    type_text(param),
                    "yes" if param.required else "no",
                ]
            )
    return table(["argument", "type", "required"], rows) if rows else []


def usage(command: click.Command, ctx: click.Context) -> list[str]:
    line = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    return [USAGE_MARKER, "```text", line, "```"]


def codes_table(command: click.Command) -> list[str]:
    return table(["code", "meaning"], [[c, inline(m)] for c, m in exit_codes(command)])


def command_page(name: str, command: click.Command) -> str:
    ctx = context(name, command)
    body = [*usage(command, ctx), "", *sum(([p, ""] for p in help_paragraphs(command)), [])]
    arguments = arguments_table(command, ctx)
    if arguments:
        body += ["## Arguments", "", *arguments, ""]
    body += ["## Options", "", *options_table(command, ctx), ""]
    body += ["## Exit codes", "", *codes_table(command), ""]
    body += ["All commands' exit codes: [exit codes](../exit-codes.md)."]
    source = f"the click command `{name}`"
    return page(f"{PROG} {name}", source, body)


def index_page() -> str:
    main, ctx = _main(), root_context()
    body = [*usage(main, ctx), "", *sum(([p, ""] for p in help_paragraphs(main)), [])]
    rows = [
        [f"[`{name}`]({name}.md)", inline(command.get_short_help_str(limit=10_000))]
        for name, command in commands().items()
    ]
    body += ["## Commands", "", *table(["command", "what it does"], rows), ""]
    body += ["## Options", "", *options_table(main, ctx), ""]
    body += ["## Exit codes", "", *codes_table(main), ""]
    body += ["Each command's own: [exit codes](../exit-codes.md).", ""]
    body += [
        "## Shell completion",
        "",
        f"Click completes commands, options and their choices. It works for the installed "
        f"`{PROG}` command, not for `python -m flink_sql_runner`. Put the line for your shell "
        "in the file named, then start a new shell.",
        "",
    ]
    for shell, where, line in SHELLS:
        body += [f"{shell}, in `{where}`:", "", "```bash", line, "```", ""]
    body += [
        f"The variable `{COMPLETE_VAR}` tells the program to print its completion script "
        "instead of running.",
    ]
    return page("Command line", "the click group `flink_sql_runner.cli.main:main`", body)


def cli_pages() -> dict[str, str]:
    pages = {str(REFERENCE / "cli" / "index.md"): index_page()}
    for name, command in commands().items():
        pages[str(REFERENCE / "cli" / f"{name}.md")] = command_page(name, command)
    return pages


def exit_codes_page() -> dict[str, str]:
    rows = [[f"`{PROG}`", c, inline(m)] for c, m in exit_codes(_main())]
    for name, command in commands().items():
        rows += [[f"[`{name}`](cli/{name}.md)", c, inline(m)] for c, m in exit_codes(command)]
    body = [
        "Every command's exit codes, as its `--help` says them. The first rows are the top "
        "level's summary.",
        "",
        *table(["command", "code", "meaning"], rows),
    ]
    source = "the `Exit codes:` paragraph of each command's help"
    return {str(REFERENCE / "exit-codes.md"): page("Exit codes", source, body)}


# -- environment variables -------------------------------------------------------------------


#: The options' kinds, as the environment page files their variables: the options --help
#: shows, the old spellings of this tool's own renamed options, the original tool's flags.
SHOWN, RENAMED, ORIGINAL = "shown", "renamed", "original"


def _kind(param: click.Option, ctx: click.Context) -> str:
    if isinstance(param, SpelledBefore):
        return RENAMED
    return SHOWN if param.get_help_record(ctx) is not None else ORIGINAL


def _renamed_meaning(param: SpelledBefore, command: click.Command) -> str:
    """What an old spelling is: the old spelling of which option (and variable), still read."""
    (new,) = [p for p in command.params if p.name == param.renamed and p is not param]
    variable = f" / `{new.envvar}`" if isinstance(new, click.Option) and new.envvar else ""
    return f"The old spelling of `{new.opts[0]}`{variable}, still read (with a note)."


def option_variables(kind: str) -> dict[tuple[str, str, str], list[str]]:
    """(variable, option, help) -> the commands whose option reads it: the options of `kind`
    (SHOWN, RENAMED or ORIGINAL)."""
    found: dict[tuple[str, str, str], list[str]] = {}
    everything = [(PROG, _main(), root_context())]
    everything += [(n, c, context(n, c)) for n, c in commands().items()]
    for name, command, ctx in everything:
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option) or _kind(param, ctx) != kind:
                continue
            if isinstance(param, SpelledBefore):
                text = _renamed_meaning(param, command)
            else:
                text = option_help(param)
            for variable in envvars(param):
                key = (variable, param.opts[-1], text)
                found.setdefault(key, []).append(name)
    return dict(sorted(found.items()))


def every_option_variable() -> set[str]:
    return {key[0] for kind in (SHOWN, RENAMED, ORIGINAL) for key in option_variables(kind)}


def _variable_rows(kind: str) -> list[list[str]]:
    rows = []
    for (variable, option, text), names in option_variables(kind).items():
        where = ", ".join(f"[`{n}`](cli/{n}.md)" for n in names)
        rows.append([code(variable), code(option), where, inline(text)])
    return rows


def environment_page() -> dict[str, str]:
    header = ["variable", "option", "commands", "meaning"]
    body = [
        "## Read by options",
        "",
        "Each of these variables gives an option's value when the command line does not. An "
        "empty variable counts as not set. A flag's variable turns it on with `1`, `true`, `yes` "
        "or `on`, and off with `0`, `false`, `no` or `off`. Where one option means different "
        "things in different commands, each meaning has its row.",
        "",
        *table(header, _variable_rows(SHOWN)),
        "",
        "## Read by renamed options' old spellings",
        "",
        "An option of this tool that was renamed keeps its old spelling, and its variable, "
        "hidden from `--help`: still read, with a note on stderr. The old and the new spelling "
        "given different values is a usage error (exit 2).",
        "",
        *table(header, _variable_rows(RENAMED)),
        "",
        "## Read by the original tool's options",
        "",
        "The original tool's flags are accepted and hidden from `--help`. See "
        "[migrating](../how-to/migrate.md).",
        "",
        *table(header, _variable_rows(ORIGINAL)),
        "",
        "## Read by the code",
        "",
        "These variables are read without an option.",
        "",
        *table(
            ["variable", "read by", "meaning"],
            [[code(v), w, m] for v, (w, m) in sorted(READ_BY_THE_CODE.items())],
        ),
    ]
    source = "the options' `envvar` and a table in `tests/docs/reference.py`"
    return {str(REFERENCE / "environment.md"): page("Environment variables", source, body)}


# -- the JSON schemas ------------------------------------------------------------------------

_TYPE_WORDS = {"object": "mapping", "array": "list", "string": "string", "integer": "integer",
               "number": "number", "boolean": "boolean", "null": "null"}  # fmt: skip


def _resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$ref` (to a `$defs` entry) merged under its own keys."""
    ref = schema.get("$ref")
    if not ref:
        return schema
    target = root
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    merged = {**_resolved(target, root), **schema}
    merged.pop("$ref")
    return merged


def _json_type(value: Any) -> str:
    for name, kind in (("boolean", bool), ("integer", int), ("number", float), ("string", str)):
        if isinstance(value, kind):
            return name
    return "mapping" if isinstance(value, dict) else "list"


def schema_type(schema: dict[str, Any], root: dict[str, Any]) -> str:
    kinds = schema.get("type")
    if kinds is None:
        values = schema.get("enum", [schema["const"]] if "const" in schema else [])
        words = sorted({_json_type(v) for v in values})
        return " or ".join(words) if words else "any"
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = []
    for kind in kinds:
        word = _TYPE_WORDS[kind]
        if kind == "array" and "items" in schema:
            word = f"list of {schema_type(_resolved(schema['items'], root), root)}"
        words.append(word)
    return " or ".join(words)


def allowed(schema: dict[str, Any]) -> str:
    said = []
    if "enum" in schema:
        said.append(", ".join(code(json.dumps(v) if not isinstance(v, str) else v)
                              for v in schema["enum"]))  # fmt: skip
    if "const" in schema:
        said.append(f"only {code(json.dumps(schema['const']))}")
    if "pattern" in schema:
        said.append(f"matches {code(schema['pattern'])}")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low is not None or high is not None:
        if low and high:
            said.append(f"{low} to {high} characters")
        elif high:
            said.append(f"at most {high} characters")
        else:
            said.append(f"at least {low} characters")
    if "minimum" in schema:
        said.append(f"at least {schema['minimum']}")
    if "maximum" in schema:
        said.append(f"at most {schema['maximum']}")
    if schema.get("uniqueItems"):
        said.append("each item once")
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if low == high == 1 and "properties" in schema:
        said.append("exactly one of its fields")
    elif low:
        said.append(f"at least {low} {'key' if low == 1 else 'keys'}")
    return "; ".join(said)


def _conditional(schema: dict[str, Any]) -> dict[str, str]:
    """Fields required only when another is there (`if: {required: [A]}, then: {required: [B]}`):
    B -> A."""
    given = schema.get("if", {}).get("required", [])
    then = schema.get("then", {}).get("required", [])
    return {name: " and ".join(code(g) for g in given) for name in then} if given else {}


def fields(
    schema: dict[str, Any], root: dict[str, Any], at: str = ""
) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(dotted path, its schema, whether it is required) of every field under `schema`."""
    schema = _resolved(schema, root)
    required = set(schema.get("required", []))
    when = _conditional(schema)
    for name, child in schema.get("properties", {}).items():
        child = _resolved(child, root)
        path = f"{at}.{name}" if at else name
        need = "yes" if name in required else (f"when {when[name]} is set" if name in when else "")
        yield path, child, need
        yield from _children(child, root, path)


def _children(
    schema: dict[str, Any], root: dict[str, Any], path: str
) -> Iterator[tuple[str, dict[str, Any], str]]:
    if "properties" in schema:
        yield from fields(schema, root, path)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        extra = dict(_resolved(extra, root))
        keys = _resolved(schema.get("propertyNames", {}), root)
        if "description" not in extra and keys:
            rule = allowed(keys)
            said = keys.get("description") or (f"keys {rule}" if rule else "")
            if said:
                extra["description"] = f"Keys: {said[0].lower()}{said[1:]}"
        yield f"{path}.<key>", extra, ""
        yield from _children(extra, root, f"{path}.<key>")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _children(_resolved(items, root), root, f"{path}[]")


def _flat(doc: Any, at: str = "") -> dict[str, Any]:
    """A YAML document's leaves and mappings by dotted path."""
    out: dict[str, Any] = {}
    if isinstance(doc, dict):
        for key, value in doc.items():
            path = f"{at}.{key}" if at else str(key)
            out[path] = value
            out.update(_flat(value, path))
    return out


def _default(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{code(k)}: {code(json.dumps(v))}" for k, v in value.items())
    return code(json.dumps(value))


def schema_page(
    name: str, filename: str, title: str, intro: str, defaults: dict[str, Any] | None
) -> dict[str, str]:
    from flink_sql_runner.read.schemas import schema_of

    root = schema_of(name)
    header = ["field", "type", "allowed values", "required", "description"]
    if defaults is not None:
        header.insert(3, "default")
    rows = []
    for path, schema, need in fields(root, root):
        row = [code(path), schema_type(schema, root), allowed(schema), need,
               inline(schema.get("description", ""))]  # fmt: skip
        if defaults is not None:
            row.insert(3, _default(defaults.get(path)))
        rows.append(row)
    body = [intro, "", *table(header, rows)]
    source = f"`flink_sql_runner/read/schemas/{name}.schema.json`"
    return {str(REFERENCE / filename): page(title, source, body)}


def manifest_page() -> dict[str, str]:
    from flink_sql_runner.read.template import packaged_template

    template = yaml.safe_load(packaged_template().read_text(encoding="utf-8"))
    intro = (
        "Every field of a job manifest, as a dotted path. A job's YAML is merged over the "
        "template first; the default is the packaged template's (`templates/job-template.yaml`). "
        "`<key>` stands for any key of a mapping. A required field is required within its "
        "parent. Fields described as *final manifests only* are written by the deployer, not by "
        "you."
    )
    return schema_page("job", "manifest-fields.md", "Job manifest fields", intro, _flat(template))


def catalog_page() -> dict[str, str]:
    intro = (
        "Every field of a table catalog file (YAML), as a dotted path. `[]` stands for each item "
        "of a list, `<key>` for any key of a mapping. A required field is required within its "
        "parent. A catalog file may also be SQL (`CREATE TABLE` statements); this page covers "
        "the YAML form."
    )
    return schema_page("tables", "catalog-fields.md", "Table catalog fields", intro, None)


# -- what is safe to change ------------------------------------------------------------------


def change_rules_page() -> dict[str, str]:
    from flink_sql_runner.decide.changes import safe_to_change_markdown

    body = [
        "What a deploy does when a field of a job, a Spark setting or a table option changes. "
        "*restart from checkpoint*: the job restarts and resumes where it stopped. "
        "*new version*: the job starts clean as a new query version, with a new checkpoint. "
        "*nothing*: no run is touched; the new value is recorded with the next change. "
        "When several fields change, the row with the most severe verdict wins.",
        "",
        *safe_to_change_markdown().splitlines(),
    ]
    source = "the rules of `flink_sql_runner/decide/changes.py` (`safe_to_change_markdown`)"
    return {str(REFERENCE / "change-rules.md"): page("What is safe to change", source, body)}


# -- the pages -------------------------------------------------------------------------------

#: Each kind of page and what makes it: tests/docs/test_reference.py checks each kind.
KINDS: dict[str, Callable[[], dict[str, str]]] = {
    "cli": cli_pages,
    "exit-codes": exit_codes_page,
    "environment": environment_page,
    "manifest-fields": manifest_page,
    "catalog-fields": catalog_page,
    "change-rules": change_rules_page,
}


def pages() -> dict[str, str]:
    """Every page, by its path relative to the repository."""
    return {path: text for make in KINDS.values() for path, text in make().items()}


def differences(made: dict[str, str]) -> list[str]:
    """The pages of `made` whose file is missing or differs."""
    out = []
    for path, text in made.items():
        file = REPO / path
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            out.append(path)
    return out


def write(made: dict[str, str]) -> list[str]:
    """Writes every page that differs; returns their paths."""
    changed = differences(made)
    for path in changed:
        (REPO / path).parent.mkdir(parents=True, exist_ok=True)
        (REPO / path).write_text(made[path], encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.docs.reference", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--write", action="store_true", help="write the pages that differ")
    args = parser.parse_args(argv)
    made = pages()
    if args.write:
        for path in write(made):
            print(f"wrote {path}")
        return 0
    stale = differences(made)
    for path in stale:
        print(f"differs: {path} (run `{COMMAND}`)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
