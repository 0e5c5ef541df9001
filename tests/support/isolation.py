"""Keeping the suite away from the user's own jobs: `./.flink-sql-runner/` (the CLI's default
state folder, where the README's example jobs run) is never read or written by a test.

Two parts, both used by `tests/conftest.py` for every test:
- the CLI's default state folder is a fresh temp folder (FLINK_SQL_RUNNER_STATE_DIR), so a
  command a test runs without `--state-dir` reads and writes there;
- a guard: what a deployer writes into a state folder (its manifests, its run records, a job's
  logs, checkpoint and output folders) is fingerprinted before and after each test, for the
  repository's `.flink-sql-runner/` and the working folder's; a test that changed one fails,
  named. Jobs running there meanwhile (the README's examples) write only deeper than that:
  into their own checkpoint, output and log files, so they do not trip it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Folders of a state folder a deployer writes file by file.
DEPLOYER_FILES = ("manifests", "runs")
#: Folders of a state folder whose entries (a job's or table's folder) a deployer creates and
#: whose content a running job writes.
JOB_FOLDERS = ("checkpoints", "output", "logs")

Fingerprint = dict[str, tuple[int, int]]


def fingerprint(state: Path) -> Fingerprint | None:
    """What a deployer would change in the state folder `state`: None when it does not exist;
    else its entries, every file under manifests/ and runs/ (size, mtime), the entries of
    checkpoints/, output/ and logs/ (a new job or table shows there), and the run logs in
    logs/<job>/ (a new run).

    It walks with `os.scandir` only, never `Path`'s methods: the guard runs in a test's teardown,
    while what the test patched (`Path.lstat`, say, to make a listing fail) still holds."""
    root = os.fspath(state)
    if not os.path.isdir(root):
        return None
    found: Fingerprint = {}

    def walk(folder: str, relative: str, depth: int, deep: bool) -> None:
        """Note the entries of `folder` and, `depth` levels further down, theirs; with `deep`
        a file's size and mtime, else only that it is there."""
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return  # not there, or gone meanwhile
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            try:
                is_file = entry.is_file(follow_symlinks=False)
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            found[name] = (stat.st_size, stat.st_mtime_ns) if deep and is_file else (0, 0)
            if depth > 0 and entry.is_dir(follow_symlinks=False):
                walk(entry.path, name, depth - 1, deep)

    walk(root, "", 0, deep=False)
    for name in DEPLOYER_FILES:
        walk(os.path.join(root, name), name, 64, deep=True)
    for name in JOB_FOLDERS:
        walk(os.path.join(root, name), name, 0, deep=False)
    walk(os.path.join(root, "logs"), "logs", 1, deep=False)  # a run's own log: a run was started
    return found


def changes(before: Fingerprint | None, after: Fingerprint | None) -> list[str]:
    """What differs between two fingerprints, one line each."""
    if before is None and after is None:
        return []
    if before is None:
        return ["it was created"]
    if after is None:
        return ["it was deleted"]
    lines = [f"{path}: created" for path in sorted(after.keys() - before.keys())]
    lines += [f"{path}: deleted" for path in sorted(before.keys() - after.keys())]
    lines += [
        f"{path}: written" for path in sorted(before.keys() & after.keys())
        if before[path] != after[path]
    ]  # fmt: skip
    return lines
