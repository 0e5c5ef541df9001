"""Reading YAML that users wrote: strict, bounded, and with errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from flink_sql_runner.errors import Problem

MAX_FILE_BYTES = 1024 * 1024
MAX_ALIASES = 100


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and bounds alias expansion."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"more than {MAX_ALIASES} YAML aliases", mark
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a plain value", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class YamlProblem(Exception):
    def __init__(self, problem: Problem):
        self.problem = problem
        super().__init__(str(problem))


def parse_yaml(text: str, source: str) -> Any:
    """Parse one YAML document; raise YamlProblem naming `source` on any defect."""
    try:
        loader = _StrictLoader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}" if mark else ""
        reason = exc.problem or exc.context or "invalid YAML"
        raise YamlProblem(Problem(source, where, f"invalid YAML: {reason}")) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(Problem(source, "", f"invalid YAML: {exc}")) from None
    except RecursionError:
        raise YamlProblem(Problem(source, "", "invalid YAML: nested too deeply")) from None


def read_yaml_file(path: Path) -> Any:
    """Read and parse a YAML file that a user wrote, bounded in size."""
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise YamlProblem(
                Problem(source, "", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise YamlProblem(Problem(source, "", f"cannot read: {exc.strerror}")) from None
    if b"\x00" in raw:
        raise YamlProblem(Problem(source, "", "binary file, expected YAML text"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise YamlProblem(Problem(source, "", "not UTF-8 text")) from None
    return parse_yaml(text, source)


def dump_yaml(data: Any) -> str:
    """Stable, readable YAML for files the deployer writes."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
