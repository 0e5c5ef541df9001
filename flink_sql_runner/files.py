"""Finding the YAML files users point the CLI at."""

from __future__ import annotations

import os
import tempfile
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


def replace_file(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` to a temporary file beside `path` and rename it over `path`: readers see
    the old or the new content, never a part. `mode` holds from the first byte. OSError on
    failure, with nothing left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
