"""Reuse of what reading an unchanged file gave last time (dbt's partial parsing, by content).

Reading a job file (YAML, merge with the template, JSON Schema, its SQL parsed) and a table
file costs far more than checking that nothing it depends on changed. This cache keeps, per
file, what reading it gave, and gives it back only when every input it was made from is the
same:

- the file's text (its SHA-256) and the name it was given as (`Job.file`);
- the code that reads it: this folder's modules and schemas, `errors.py`, the versions of
  PyYAML, jsonschema and sqlglot and of the product (`code_digest`); another code, and the
  whole cache is ignored;
- for a job, its context: the template as loaded (with the command's property defaults),
  whether properties are strict, the state folder (`{state_dir}`), the folder relative paths
  resolve against (`Job.base`);
- for a job, each answer the table catalog gave while it was read (which declared name a table
  name resolves to, and that table's definition, file and place): the catalog may change
  elsewhere (a new job's sink) without costing this job its entry.

Only files read without a problem are kept (a file that fails is read again, and fails the same
way), and nothing holding a secret (`secrets.py`): such a file is read every time. Environment
variables are not read while loading (`${VAR}` stays as written until a run starts), and
whether a source path exists is looked at again on every load (`Cached.sources`), never kept.

The cache is a value: the command reads its file (`from_bytes`, which takes anything broken or
foreign for empty), asks and adds entries while loading, and writes it back (`to_bytes`) when
it changed; entries of files that are gone are dropped (`prune`). The file is one JSON
document with one entry a line, so that writing it back copies the text of every entry read
and not replaced instead of encoding it again (10,000 jobs: 17 MB, a quarter of a second).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from json.decoder import scanstring
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.secrets import SECRET_IN_VALUE, is_secret_key

#: The schema version of the cache file; another one is ignored.
FORMAT = 1
#: Libraries whose behaviour shapes what a file reads as.
LIBRARIES = ("pyyaml", "jsonschema", "sqlglot", "flink-sql-runner")


@cache
def code_digest() -> str:
    """A digest of the code that reads files: this folder (modules, schemas), `errors.py` and
    the versions of the libraries it uses. Computed once per process."""
    here = Path(__file__).resolve().parent
    sha = hashlib.sha256()
    files = sorted(p for p in here.rglob("*") if p.suffix in (".py", ".json") and p.is_file())
    for path in [*files, here.parent / "errors.py"]:
        sha.update(str(path.relative_to(here.parent)).encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    for library in LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "-"
        sha.update(f"{library}={version}\0".encode())
    return sha.hexdigest()


def digest(value: Any) -> str:
    """A digest of a value as JSON would write it (`1`, `1.0` and `true` differ)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _head() -> str:
    return f'{{"format":{FORMAT},"code":{json.dumps(code_digest())},"tables":{{'


_MIDDLE = '},"jobs":{'
_END = "}}"


def _entry_texts(
    text: str, tables: dict[str, Any], jobs: dict[str, Any]
) -> dict[tuple[str, str], tuple[object, str]]:
    """The text of each entry of a cache file laid out as `to_bytes` writes it, by section and
    key, with the entry it was read as; none when it is laid out otherwise (written by hand,
    or by an older version: it is then written back whole)."""
    lines = text.split("\n")
    if not lines or lines[0] != _head() or lines[-1] != _END:
        return {}
    found: dict[tuple[str, str], tuple[object, str]] = {}
    section, entries, keys = "tables", tables, iter(tables)
    for line in lines[1:-1]:
        if line == _MIDDLE and section == "tables":
            if next(keys, None) is not None:
                return {}
            section, entries, keys = "jobs", jobs, iter(jobs)
            continue
        if not line.startswith('"'):
            return {}
        try:
            key, end = scanstring(line, 1)
        except ValueError:
            return {}
        if key != next(keys, None) or line[end : end + 1] != ":":
            return {}
        value = line[end + 1 : -1] if line.endswith(",") else line[end + 1 :]
        found[(section, key)] = (entries[key], value)
    if section != "jobs" or next(keys, None) is not None:
        return {}
    return found


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def storable(value: Any, key: str = "") -> bool:
    """Whether `value` may be kept: made only of what JSON gives back as it was (dicts with
    text keys, lists, text, numbers, true/false, null; not a tuple or a date), and holding
    nothing `secrets.mask` would hide (under key `key`)."""
    if key and is_secret_key(key):
        return False
    if isinstance(value, str):
        return not SECRET_IN_VALUE.search(value)
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, list):
        return all(storable(v, key) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and storable(v, k) for k, v in value.items())
    return False


class Answers(Protocol):
    """What a job's read asks of the table catalog (`catalog.Catalog`)."""

    @property
    def tables(self) -> dict[str, Any]: ...
    @property
    def broken(self) -> frozenset[str]: ...
    def canonical_key(self, key: tuple[str, ...]) -> str | None: ...


@dataclass
class Lookups:
    """What the table catalog was asked while one job was read: which declared name each table
    name (by its key) resolved to, and which declared tables were looked at."""

    canonical: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)
    #: The declared names taken from a final manifest's own tables (not the catalog's).
    embedded: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Cached:
    """A job as reading its file gave it, and what the read said beside it."""

    job: dict[str, Any]  # spec, tables, source_tables, file, base, relative
    #: Warnings (as `Problem` fields) the read gave.
    warnings: tuple[tuple[str, str, str], ...]
    #: The declared names of its tables taken from the file itself (a final manifest's).
    embedded: frozenset[str]


class LoadCache:
    """Entries by file (its absolute path): `tables` for table files, `jobs` for job files."""

    def __init__(self, doc: dict[str, Any] | None = None):
        doc = doc or {}
        self._tables: dict[str, Any] = dict(doc.get("tables") or {})
        self._jobs: dict[str, Any] = dict(doc.get("jobs") or {})
        self._seen: set[str] = set()
        #: Whether an entry was added, replaced or dropped (the file needs writing).
        self.changed = False
        #: Files given back from the cache, and files read (for tests and the timing log).
        self.hits = 0
        self.misses = 0
        #: Digests of the catalog's tables, by the table object (kept alive beside it).
        self._table_digests: dict[int, tuple[object, str]] = {}
        #: The text of each entry as the file held it, by section and key, with the entry it
        #: was read as: written back as it was while that entry stands.
        self._texts: dict[tuple[str, str], tuple[object, str]] = {}

    # -- the file ----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, raw: bytes | None) -> LoadCache:
        """The cache a file holds; empty when there is none, or it is broken, or was written by
        another code (another version, another library)."""
        if not raw:
            return cls()
        try:
            text = raw.decode()
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return cls()
        if doc.get("code") != code_digest():
            return cls()
        if not isinstance(doc.get("tables"), dict) or not isinstance(doc.get("jobs"), dict):
            return cls()
        cache = cls(doc)
        cache._texts = _entry_texts(text, cache._tables, cache._jobs)
        return cache

    def to_bytes(self) -> bytes:
        """The file: `{"format":..,"code":..,"tables":{` on its first line, then one entry a
        line, `},"jobs":{` and one entry a line, and `}}`."""
        lines = [_head()]
        for section, entries in (("tables", self._tables), ("jobs", self._jobs)):
            if section == "jobs":
                lines.append(_MIDDLE)
            found = []
            for key, entry in entries.items():
                kept = self._texts.get((section, key))
                value = kept[1] if kept is not None and kept[0] is entry else _compact(entry)
                found.append(f"{json.dumps(key)}:{value}")
            lines.append(",\n".join(found))
        lines.append(_END)
        return "\n".join(line for line in lines if line).encode()

    def prune(self, present: Any = os.path.exists) -> None:
        """Drop the entries of files not read by this command that are no longer there."""
        for entries in (self._tables, self._jobs):
            for key in [k for k in entries if k not in self._seen and not present(k)]:
                del entries[key]
                self.changed = True

    # -- table files -------------------------------------------------------------------------
    def table_file(self, source: str, text: str) -> list[tuple[dict[str, Any], str, Any]] | None:
        """The tables a table file declared (entry, place, lines), if its text is unchanged."""
        key = self._key(source)
        entry = self._tables.get(key)
        try:
            if (
                isinstance(entry, dict)
                and entry["file"] == source
                and entry["digest"] == text_digest(text)
            ):
                found = [(dict(t["entry"]), str(t["at"]), t["lines"]) for t in entry["tables"]]
                self.hits += 1
                return found
        except (KeyError, TypeError, ValueError):
            pass
        self.misses += 1
        return None

    def keep_table_file(
        self, source: str, text: str, tables: list[tuple[dict[str, Any], str, Any]]
    ) -> None:
        """Keep what a table file read without a problem declared."""
        found = [{"entry": entry, "at": at, "lines": lines} for entry, at, lines in tables]
        if not storable(found):
            return
        self._tables[self._key(source)] = {
            "file": source,
            "digest": text_digest(text),
            "tables": found,
        }
        self.changed = True

    # -- job files ---------------------------------------------------------------------------
    def job(self, source: str, text: str, context: str, catalog: Answers) -> Cached | None:
        """The job a file read as, if its text, its context and every answer the catalog
        gave while it was read are unchanged."""
        key = self._key(source)
        entry = self._jobs.get(key)
        try:
            if (
                isinstance(entry, dict)
                and entry["file"] == source
                and entry["context"] == context
                and entry["digest"] == text_digest(text)
                and self._same_answers(entry, catalog)
            ):
                found = Cached(
                    entry["job"],
                    tuple((str(f), str(d), str(m)) for f, d, m in entry["warnings"]),
                    frozenset(entry["embedded"]),
                )
                self.hits += 1
                return found
        except (KeyError, TypeError, ValueError, AttributeError):
            pass
        self.misses += 1
        return None

    def keep_job(
        self,
        source: str,
        text: str,
        context: str,
        job: dict[str, Any],
        warnings: list[Problem],
        lookups: Lookups,
        catalog: Answers,
    ) -> None:
        """Keep a job read without a problem, with what the catalog answered for it."""
        if not storable(job):
            return
        self._jobs[self._key(source)] = {
            "file": source,
            "context": context,
            "digest": text_digest(text),
            "job": job,
            "warnings": [[w.file, w.field, w.message] for w in warnings],
            "canonical": [[list(k), v] for k, v in lookups.canonical.items()],
            "tables": {name: self._table_digest(catalog, name) for name in lookups.tables},
            "embedded": sorted(lookups.embedded),
        }
        self.changed = True

    def _same_answers(self, entry: dict[str, Any], catalog: Answers) -> bool:
        for key, canonical in entry["canonical"]:
            if catalog.canonical_key(tuple(key)) != canonical:
                return False
        tables: dict[str, str] = entry["tables"]
        return all(self._table_digest(catalog, name) == d for name, d in tables.items())

    def _table_digest(self, catalog: Answers, name: str) -> str:
        """What a job depends on of one declared table: its definition, file and place; or
        that it is broken, or not there."""
        table = catalog.tables.get(name)
        if table is None:
            return "broken" if name in catalog.broken else "-"
        known = self._table_digests.get(id(table))
        if known is None:
            value = [table.definition, table.file, table.at, table.lines]
            known = self._table_digests[id(table)] = (table, digest(value))
        return known[1]

    def _key(self, source: str) -> str:
        key = os.path.abspath(source)
        self._seen.add(key)
        return key
