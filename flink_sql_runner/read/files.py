"""Finding the YAML files users point the CLI at."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from flink_sql_runner.errors import Problem

YAML_SUFFIXES = (".yaml", ".yml")


def yaml_files(
    paths: list[Path], problems: list[Problem], suffixes: tuple[str, ...] = YAML_SUFFIXES
) -> list[Path]:
    """Every *.yaml / *.yml file (or other `suffixes`) named or below a named folder, sorted;
    symlinked folders
    are not followed (no loops). Missing paths and unreadable folders become problems: a job
    that cannot be seen must not look deleted."""
    found: list[Path] = []

    def unreadable(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename), "", f"cannot read folder: {exc.strerror}"))

    for root in paths:
        try:
            is_dir = stat.S_ISDIR(root.stat().st_mode)
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            reason = "no such file or folder" if missing else f"cannot read: {exc.strerror}"
            problems.append(Problem(str(root), "", reason))
            continue
        if not is_dir:
            found.append(root)  # reading it says what is wrong if it is not a regular file
            continue
        for folder, dirs, names in os.walk(root, onerror=unreadable, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            wanted = (n for n in names if n.endswith(suffixes) and not n.startswith("."))
            found.extend(Path(folder, n) for n in wanted)
    return sorted(dict.fromkeys(found))
