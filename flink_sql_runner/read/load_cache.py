"""Reuse of what reading an unchanged file gave last time (dbt's partial parsing, by content).

Reading a job file (YAML, merge with the template, JSON Schema, its SQL parsed) and a table
file costs far more than checking that nothing it depends on changed. This cache keeps, per
file, what reading it gave, and gives it back only when every input it was made from is the
same:

- the file's text (its SHA-256) and the name it was given as (`Job.file`);
- the code that reads it: this folder's modules and schemas, `errors.py`, the versions of
  Python, PyYAML, jsonschema and sqlglot and of the product (`code_digest`); another code,
  and the whole cache is ignored;
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
foreign for empty), asks and adds entries while loading, and writes back what changed when it
did; entries of files that are gone are dropped (`prune`). The file is JSON lines: a header,
then one `[section, key, entry]` a line, a later line for a key replacing an earlier one (an
entry of `null` drops it). What a command changed is appended to the file as it was read
(`appendix`: 100 edited jobs of 10,000 write 100 lines, not 17 MB), only while the file still
begins with this code's header (`head`: another code's command may have written it again
since, and would take the lines for its own). Otherwise, and once the lines on file outnumber
the entries by a quarter, the file is written again whole (`to_bytes`), copying the text of
every entry read and not replaced instead of encoding it again. A line cut short (a write
interrupted) is skipped: its entry is read again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.cache_signing import signed, unsigned
from flink_sql_runner.read.secrets import holds_secret, is_secret_key

#: The schema version of the cache file; another one is ignored.
FORMAT = 2
#: Libraries whose behaviour shapes what a file reads as.
LIBRARIES = ("pyyaml", "jsonschema", "jsonschema-rs", "sqlglot", "flink-sql-runner")
SECTIONS = ("tables", "jobs")
#: The file is written again whole once its lines outnumber the live entries by this share
#: (plus a few, for small projects): each command that changed something appends otherwise.
REWRITE_SHARE = 0.25
REWRITE_SLACK = 64


@cache
def code_digest() -> str:
    """A digest of the code that reads files: this folder (modules, schemas), `errors.py`, the
    Python that runs it and the versions of the libraries it uses. Computed once per process."""
    here = Path(__file__).resolve().parent
    sha = hashlib.sha256()
    files = sorted(p for p in here.rglob("*") if p.suffix in (".py", ".json") and p.is_file())
    for path in [*files, here.parent / "errors.py"]:
        sha.update(str(path.relative_to(here.parent)).encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    # What the interpreter accepts shapes a code job's checks (`ast.parse`).
    python = "{}-{}.{}.{}".format(sys.implementation.name, *sys.version_info[:3])
    sha.update(f"python={python}\0".encode())
    for library in LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "-"
        sha.update(f"{library}={version}\0".encode())
    return sha.hexdigest()


def digest(value: Any) -> str:
    """A digest of a value as JSON would write it, in its order (`1`, `1.0` and `true` differ,
    and so do two orders of a table's options: of two spellings of one option, Spark takes
    the last)."""
    text = json.dumps(value, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _head(key: bytes | None = None) -> str:
    """The file's first line: its format and code, and with a key, which key signs its lines
    (a digest that tells keys apart and gives nothing of one)."""
    if key is None:
        return f'{{"format":{FORMAT},"code":{json.dumps(code_digest())}}}'
    signer = hmac.new(key, b"load cache key", hashlib.sha256).hexdigest()[:32]
    return f'{{"format":{FORMAT},"code":{json.dumps(code_digest())},"key":"{signer}"}}'


def _rows(lines: list[str], texts: list[str]) -> list[tuple[str, Any]]:
    """Each line whose JSON text (`texts`, one a line) reads as JSON, with what it reads as:
    all texts decoded as one document, or one by one when that fails (a line cut short is
    then skipped)."""
    try:
        rows = json.loads("[" + ",".join(texts) + "]")
    except (ValueError, RecursionError):
        rows = None
    if isinstance(rows, list) and len(rows) == len(texts):
        return list(zip(lines, rows, strict=True))
    found = []
    for line, text in zip(lines, texts, strict=True):
        try:
            found.append((line, json.loads(text)))
        except (ValueError, RecursionError):
            continue
    return found


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


#: Every secret `storable` looks for, by key or by value, holds one of these (in lower case) in
#: its JSON text: the words of `secrets.SPARK_REDACTION`, `CREDENTIAL_KEYS` and
#: `SECRET_IN_VALUE`, and the `@` of a URL's user and password.
_SUSPECT = (
    "secret", "passw", "token", "access", "credential", "jaas", "account", "private", "sas",
    "keystore", "@",
)  # fmt: skip


def storable(value: Any, key: str = "") -> bool:
    """Whether `value` may be kept: made only of what JSON gives back as it was (dicts with
    text keys, lists, text, numbers, true/false, null; not a tuple or a date), and holding
    nothing `secrets.mask` or `redact_text` would hide (under key `key`).

    Answered from its JSON text when that gives the value back and is ASCII without one of the
    words every secret holds (`_SUSPECT`): C's speed, where walking a job's 50 values in Python
    cost a cold plan of 10,000 jobs 1.5 s. Anything else is walked (`_storable_walked`)."""
    if key and is_secret_key(key):
        return False
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        same = json.loads(text) == value
    except (TypeError, ValueError, RecursionError):
        same = False
    if same and text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _SUSPECT):
            return True
    return _storable_walked(value, key)


def _storable_walked(value: Any, key: str = "") -> bool:
    if key and is_secret_key(key):
        return False
    if isinstance(value, str):
        return not holds_secret(value)
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, list):
        return all(_storable_walked(v, key) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _storable_walked(v, k) for k, v in value.items())
    return False


def _is_table_entry(entry: Any, at: str, lines: Any) -> bool:
    """Whether a kept table has the shape a read gives (a cache file is anyone's to write)."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and (lines is None or (isinstance(lines, dict) and all(
            isinstance(k, str) and type(v) is int for k, v in lines.items())))
    )  # fmt: skip


def _is_job_fields(job: Any) -> bool:
    """Whether a kept job has the shape `manifest.JobLoader` keeps (`Job`'s fields)."""
    return (
        isinstance(job, dict)
        and isinstance(job.get("spec"), dict)
        and isinstance(job.get("tables"), dict)
        and isinstance(job.get("file"), str)
        and isinstance(job.get("base"), str)
        and isinstance(job.get("source_tables"), list)
        and all(isinstance(t, str) for t in job["source_tables"])
        and isinstance(job.get("relative"), list)
        and all(isinstance(r, list) and len(r) == 2 and all(isinstance(p, str) for p in r)
                for r in job["relative"])
    )  # fmt: skip


class Answers(Protocol):
    """What a job's read asks of the table catalog (`catalog.Catalog`)."""

    @property
    def tables(self) -> dict[str, Any]: ...
    @property
    def broken(self) -> frozenset[str]: ...
    def canonical_key(self, key: tuple[str, ...]) -> str | None: ...


#: What parsing a query gives the loader: the parts of each table reference, in order, and the
#: names of its CTEs in lower case (`sqlinfo.read_tables`).
QueryRead = tuple[list[tuple[str, ...]], frozenset[str]]


@dataclass
class Lookups:
    """What the table catalog was asked while one job was read: which declared name each table
    name (by its key) resolved to, and which declared tables were looked at; and what its
    query read as."""

    canonical: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)
    #: The declared names taken from a final manifest's own tables (not the catalog's).
    embedded: set[str] = field(default_factory=set)
    #: The query's text, the parts of each table it reads and its CTE names (`QueryRead`).
    query: tuple[str, QueryRead] | None = None


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

    def __init__(self, key: bytes | None = None) -> None:
        #: The key each line of its file is signed with (`cache_key`); None: the file is
        #: trusted as its folder is.
        self.key = key
        self._tables: dict[str, Any] = {}
        self._jobs: dict[str, Any] = {}
        self._seen: set[str] = set()
        self._keys: dict[str, str] = {}  # `_key`'s, by the name given
        #: Whether an entry was added, replaced or dropped (the file needs writing).
        self.changed = False
        #: Files given back from the cache, and files read (for tests and the timing log).
        self.hits = 0
        self.misses = 0
        #: Digests of the catalog's tables, by the table object (kept alive beside it).
        self._table_digests: dict[int, tuple[object, str]] = {}
        #: The line of each entry as the file held it, by section and key, with the entry it
        #: was read as: written again as it was while that entry stands.
        self._texts: dict[tuple[str, str], tuple[object, str]] = {}
        #: The entries added, replaced (the entry) or dropped (None) since the file was read.
        self._changes: dict[tuple[str, str], Any] = {}
        #: The lines of entries in the file as read; None when there was no file of this code
        #: to append to.
        self._lines_on_file: int | None = None

    # -- the file ----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, raw: bytes | None, key: bytes | None = None) -> LoadCache:
        """The cache a file holds; empty when there is none, or it is broken, or was written by
        another code (another version, another library) or signed with another key than `key`
        (or with one where `key` is None, or none where it is not). With `key`, a line whose
        signature is not its own is skipped: its file is read again."""
        cache = cls(key)
        if not raw:
            return cache
        try:
            text = raw.decode()
        except ValueError:
            return cache
        header, *rest = text.split("\n")
        if header != _head(key):
            return cache
        body = [line for line in rest if line]
        lines, texts = [], []  # the lines as they were (written again so), and their JSON
        for line in body:
            held = unsigned(line, key)
            if held is not None:
                lines.append(line)
                texts.append(held)
        for line, row in _rows(lines, texts):
            if not (isinstance(row, list) and len(row) == 3 and row[0] in SECTIONS):
                continue
            section, name, entry = row
            if not isinstance(name, str):
                continue
            entries = cache._tables if section == "tables" else cache._jobs
            if entry is None:
                entries.pop(name, None)
                cache._texts.pop((section, name), None)
            else:
                entries[name] = entry
                cache._texts[(section, name)] = (entry, line)
        cache._lines_on_file = len(body)
        return cache

    def appendix(self) -> bytes | None:
        """The lines to append to the file as it was read, for what changed since; None when
        the file is to be written again whole (`to_bytes`): there was none of this code, or
        its lines would outnumber the entries by more than REWRITE_SHARE. The lines start on a
        line of their own, after whatever an interrupted write left."""
        if self._lines_on_file is None:
            return None
        lines = self._lines_on_file + len(self._changes)
        live = len(self._tables) + len(self._jobs)
        if lines > live * (1 + REWRITE_SHARE) + REWRITE_SLACK:
            return None
        added = [signed(_compact([s, k, e]), self.key) for (s, k), e in self._changes.items()]
        return ("\n" + "\n".join(added) + "\n").encode()

    def head(self) -> bytes:
        """The file's first line, with its end, as this code writes it: an appendix is only
        appended to a file that begins with it (another code's may have replaced the file read
        since, and would read the lines as its own)."""
        return (_head(self.key) + "\n").encode()

    def to_bytes(self) -> bytes:
        """The whole file: the header (format and code) on its first line, then one entry a
        line, tables first."""
        lines = [_head(self.key)]
        for section, entries in (("tables", self._tables), ("jobs", self._jobs)):
            for key, entry in entries.items():
                kept = self._texts.get((section, key))
                fresh = kept is None or kept[0] is not entry
                line = signed(_compact([section, key, entry]), self.key) if fresh else kept[1]
                lines.append(line)
        return ("\n".join(lines) + "\n").encode()

    def prune(self, present: Any = os.path.exists) -> None:
        """Drop the entries of files not read by this command that are no longer there."""
        for section, entries in (("tables", self._tables), ("jobs", self._jobs)):
            for key in [k for k in entries if k not in self._seen and not present(k)]:
                self._set(section, key, None)

    def _set(self, section: str, key: str, entry: Any) -> None:
        entries = self._tables if section == "tables" else self._jobs
        if entry is None:
            del entries[key]
        else:
            entries[key] = entry
        self._changes[(section, key)] = entry
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
                if all(_is_table_entry(*table) for table in found):
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
        entry = {"file": source, "digest": text_digest(text), "tables": found}
        self._set("tables", self._key(source), entry)

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
                and _is_job_fields(entry["job"])
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
        entry = {
            "file": source,
            "context": context,
            "digest": text_digest(text),
            "job": job,
            "warnings": [[w.file, w.field, w.message] for w in warnings],
            "canonical": [[list(k), v] for k, v in lookups.canonical.items()],
            "tables": {name: self._table_digest(catalog, name) for name in lookups.tables},
            "embedded": sorted(lookups.embedded),
        }
        if lookups.query is not None:
            sql, (parts, ctes) = lookups.query
            entry["query"] = {
                "digest": text_digest(sql),
                "tables": [list(p) for p in parts],
                "ctes": sorted(ctes),
            }
        self._set("jobs", self._key(source), entry)

    def query(self, source: str, sql: str) -> QueryRead | None:
        """What the query read as when file `source` was last read, if its text is the same:
        a job edited elsewhere than in its query is not parsed again. Only a file read without
        a problem is kept, so the text parsed as one query, by this very code."""
        entry = self._jobs.get(self._key(source))
        try:
            query = entry["query"]
            if query["digest"] == text_digest(sql):
                parts = [tuple(str(p) for p in table) for table in query["tables"]]
                return parts, frozenset(str(c) for c in query["ctes"])
        except (KeyError, TypeError):
            pass
        return None

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
        key = self._keys.get(source)
        if key is None:  # a job's file is asked for three times: abspath once
            key = self._keys[source] = os.path.abspath(source)
        self._seen.add(key)
        return key
