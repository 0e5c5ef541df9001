"""Finding the YAML files users point the CLI at."""

from __future__ import annotations

import os
from pathlib import Path

from flink_sql_runner.errors import Problem

YAML_SUFFIXES = (".yaml", ".yml")


def yaml_files(paths: list[Path], problems: list[Problem]) -> list[Path]:
    """Every *.yaml / *.yml file named or below a named folder, sorted; symlinked folders
    are not followed (no loops). Missing paths become problems."""
    found: list[Path] = []
    for root in paths:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            for folder, dirs, names in os.walk(root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(
                    Path(folder, n)
                    for n in names
                    if n.endswith(YAML_SUFFIXES) and not n.startswith(".")
                )
        else:
            problems.append(Problem(str(root), "", "no such file or folder"))
    return sorted(dict.fromkeys(found))
