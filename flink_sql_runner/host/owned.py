"""Whether a folder or a file on this machine is this user's alone: what a file Java runs
without checking (a class-data-sharing archive) must be, where a command maps one.

A folder is this user's alone when every folder of its real path, from the root down, is owned
by root or this user and writable by no one else (a folder others may write in counts only with
its sticky bit: there no one but its owner and root may rename or remove what another made), and
it is in no git work tree: a checkout's files are owned by whoever checked them out, so owners
and modes cannot tell a file a pull request committed from one this user made.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

#: The write bits of a group and of others.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def home() -> Path | None:
    """This user's home folder as the system knows it, not `$HOME` (which a CI job may point
    at its checkout); None where the system has no entry for this user."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return None


def folder_problem(folder: Path) -> str | None:
    """Why `folder` (absolute) is not this user's alone, or None when it is."""
    try:
        real = Path(os.path.realpath(folder, strict=True))
    except (OSError, RuntimeError, ValueError) as exc:
        return f"cannot be read ({exc})"
    me = os.getuid()
    for part in (*reversed(real.parents), real):
        try:
            info = os.lstat(part)
        except OSError as exc:
            return f"{part} cannot be read ({exc.strerror})"
        if not stat.S_ISDIR(info.st_mode):
            return f"{part} is not a folder"
        if info.st_uid not in (0, me):
            return f"{part} is another user's"
        if info.st_mode & _OTHERS_WRITE and not (part != real and info.st_mode & stat.S_ISVTX):
            return f"{part} may be written by others"
    for part in (real, *real.parents):
        if os.path.lexists(part / ".git"):
            return f"it is in the git work tree {part}"
    return None


def file_problem(path: Path) -> str | None:
    """Why the file `path` is not this user's alone (its folder checked apart), or None."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a file (a link, or something else)"
    if info.st_uid != os.getuid():
        return "is another user's"
    if info.st_mode & _OTHERS_WRITE:
        return "may be written by others"
    return None
