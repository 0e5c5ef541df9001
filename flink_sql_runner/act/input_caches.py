"""The files a command keeps beside the state folder so that the next one reads its inputs
faster: the load cache (what unchanged job and table files read as, read/load_cache.py) and the
SQL fingerprints (read/sqlinfo.py). Each is read as a command begins and written back once it
is done, never with --no-cache: in `--cache-dir` (created), or by default in the state folder's
`cache/`, only once the state folder exists (without one, nothing is gathered to be kept: a CI
runner's fresh checkout pays nothing for a cache it would throw away). A file that cannot be
read or written costs only the time it saves.

Where the plan key is set (`FLINK_SQL_RUNNER_PLAN_KEY`: CI's plan and deploy), each line of the
load cache and the fingerprints are signed with a key derived from it (as the plan's schema
answers are, gather/schemas.py), and what is not signed with it is read again: a cache folder
someone else could write (a CI cache another workflow saved) cannot make a deploy run what the
files do not say. Without the plan key, the files are trusted as their folder is."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flink_sql_runner.host.atomic import append_to, replace_file
from flink_sql_runner.read.cache_signing import env_cache_key, signed, unsigned
from flink_sql_runner.read.load_cache import LoadCache, code_digest
from flink_sql_runner.read.sqlinfo import use_fingerprints


def _kept(path: Path | None, home: Path | None) -> bool:
    """Whether a cache file at `path` is kept: a folder given for it (`home` None), or the
    default one inside `home`, the state folder, which exists."""
    return path is not None and (home is None or home.is_dir())


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data, mode=0o600)


@contextmanager
def load_cache_at(path: Path | None, home: Path | None) -> Iterator[LoadCache | None]:
    """The load cache kept at `path` (None: none, --no-cache; `home`: the state folder that
    must exist for the default place, None for a folder given) while files are read, written
    back if it changed and they were valid: a command whose inputs are invalid touches nothing,
    so it leaves the block with its error and nothing is written."""
    if path is None or not _kept(path, home):
        yield None
        return
    try:
        raw = path.read_bytes()
    except OSError:
        raw = None
    cache = LoadCache.from_bytes(raw, env_cache_key("load"))
    yield cache
    cache.prune(os.path.exists)
    if cache.changed and _kept(path, home):
        try:
            appendix = cache.appendix()
            # Appended only to a file of this code: another's may have replaced it since.
            if appendix is None or not append_to(path, appendix, cache.head()):
                _write(path, cache.to_bytes())
        except OSError as exc:
            print(f"warning: cannot write {path}: {exc.strerror}", file=sys.stderr)


@contextmanager
def fingerprints_at(path: Path | None, home: Path | None) -> Iterator[None]:
    """SQL fingerprints the commands before computed, kept at `path` (None: none; `home` as
    for `load_cache_at`), reused while the block runs; the ones it asked for kept there after,
    when it computed any."""
    known: dict[str, str] = {}
    key = env_cache_key("fingerprints")
    if path is not None:
        try:
            text = unsigned(path.read_bytes().decode(), key)
            doc = json.loads(text) if text is not None else {}
            if doc.get("code") == code_digest() and isinstance(doc.get("sql"), dict):
                known = {k: v for k, v in doc["sql"].items() if isinstance(v, str)}
        except (OSError, ValueError, AttributeError):
            known = {}
    fingerprints = use_fingerprints(known)
    yield
    if path is None or not fingerprints.computed or not _kept(path, home):
        return
    doc = {"code": code_digest(), "sql": fingerprints.kept()}
    try:
        _write(path, signed(json.dumps(doc, separators=(",", ":")), key).encode())
    except OSError as exc:
        print(f"warning: cannot write {path}: {exc.strerror}", file=sys.stderr)
