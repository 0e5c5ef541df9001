"""Whether a folder or a file on this machine is this user's alone: what a file Java runs
without checking (a class-data-sharing archive) must be, where a command maps one.

A folder is this user's alone when every folder of its real path, from the root down, is owned
by root or this user and writable by no one else (a folder others may write in counts only with
its sticky bit: there no one but its owner and root may rename or remove what another made; a
group's write counts as no one else's where the group is this user's own, with no other member),
and it is in no checkout: a checkout's files are owned by whoever checked them out, so owners and
modes cannot tell a file a pull request committed from one this user made. A checkout is told by
a `.git` in or above the folder, by the folder a CI system names as its checkout (`CHECKOUTS`),
and by the folder the command runs in, unless that is the home folder or above it.
"""

from __future__ import annotations

import functools
import grp
import os
import pwd
import stat
from pathlib import Path

#: What CI systems name the checkout a job runs in: GitHub Actions, GitLab CI, Azure Pipelines,
#: Jenkins, Bitbucket Pipelines, Buildkite, CircleCI, Travis CI.
CHECKOUTS = ("GITHUB_WORKSPACE", "CI_PROJECT_DIR", "BUILD_SOURCESDIRECTORY", "WORKSPACE",
             "BITBUCKET_CLONE_DIR", "BUILDKITE_BUILD_CHECKOUT_PATH", "CIRCLE_WORKING_DIRECTORY",
             "TRAVIS_BUILD_DIR")  # fmt: skip


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
        if _others_write(info) and not (part != real and info.st_mode & stat.S_ISVTX):
            return f"{part} may be written by others"
    for part in (real, *real.parents):
        if os.path.lexists(part / ".git"):
            return f"it is in the git work tree {part}"
    return _checkout_problem(real)


def _checkout_problem(real: Path) -> str | None:
    """Why `real` is in a checkout that has no `.git`: a CI system's, or the folder the
    command runs in (not where that is the home folder or above it: a laptop's `cd ~`)."""
    named = [(name, os.environ.get(name)) for name in CHECKOUTS]
    found = [(f"${name}", value) for name, value in named if value and os.path.isabs(value)]
    try:
        here = Path(os.path.realpath(os.getcwd()))
    except (OSError, RuntimeError, ValueError):
        here = None
    mine = home()
    mine = Path(os.path.realpath(mine)) if mine is not None else None
    if here is not None and not (mine is not None and (here == mine or here in mine.parents)):
        found.append(("the folder this command runs in", str(here)))
    for what, folder in found:
        checkout = Path(os.path.realpath(folder))
        if real == checkout or checkout in real.parents:
            return f"it is in {what} ({checkout}), which may be a checkout"
    return None


def _others_write(info: os.stat_result) -> bool:
    """Whether others than its owner may write in it: others, or a group other than this
    user's own (a user-private group, which umask 002 systems give each user)."""
    if info.st_mode & stat.S_IWOTH:
        return True
    return bool(info.st_mode & stat.S_IWGRP) and not _own_group(info.st_gid)


@functools.cache
def _own_group(gid: int) -> bool:
    """Whether `gid` is this user's own group: their primary group, with no member listed and
    no other user's primary group."""
    if gid != os.getgid():
        return False
    try:
        if grp.getgrgid(gid).gr_mem:
            return False
        me = os.getuid()
        return not any(p.pw_gid == gid and p.pw_uid != me for p in pwd.getpwall())
    except KeyError:
        return False


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
    if _others_write(info):
        return "may be written by others"
    return None
