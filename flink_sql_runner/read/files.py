"""Finding the YAML files users point the CLI at."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
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
