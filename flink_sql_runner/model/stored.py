"""The manifest a deploy records: merged job, resolved tables, `meta`, and a schema version."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from flink_sql_runner.errors import StoreError
from flink_sql_runner.read.yamlio import YamlProblem, dump_yaml, parse_yaml

STORED_SCHEMA_VERSION = 1

#: Which version of a stored object a reader saw, as its store names it: S3's ETag, a digest of
#: a file's bytes, a fake's counter. Opaque: only compared, and passed back to a conditional
#: write. None: the object did not exist.
Token = str | None

#: The token of an object that does not exist.
ABSENT: Token = None


class Unconditional(Enum):
    """A side document's write or delete that does not care what is stored (the default)."""

    ANY = "any"


#: `expected=ANY`: write or delete whatever is stored.
ANY = Unconditional.ANY


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Meta:
    query_version: int
    query_id: str
    query_create_timestamp: str
    #: The Spark version the last healthy run of this version reported (its status file).
    spark_version: str | None = None

    @classmethod
    def new(cls, version: int) -> Meta:
        return cls(version, str(uuid.uuid4()), utc_now_iso())

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "query-version": self.query_version,
            "query-id": self.query_id,
            "query-create-timestamp": self.query_create_timestamp,
        }
        if self.spark_version:
            doc["spark-version"] = self.spark_version
        return doc


@dataclass(frozen=True)
class StoredManifest:
    """What `<store>/<name>.yaml` holds."""

    job: dict[str, Any]
    tables: dict[str, dict[str, Any]]
    meta: Meta
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.job["name"])

    @property
    def checkpoint_root(self) -> str | None:
        """The root of the job's checkpoints (`<root>/<name>/<version>/`), without a trailing
        '/'; None for a manifest `migrate` converted that no deploy has recorded since: no
        checkpoint of this tool is anywhere."""
        root = str(self.job.get("checkpoint-root") or "").rstrip("/")
        return root or None

    @property
    def checkpoint(self) -> str:
        """This version's checkpoint folder, `<root>/<name>/<version>`."""
        root = str(self.job["checkpoint-root"]).rstrip("/")
        return f"{root}/{self.name}/{self.meta.query_version}"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema-version": STORED_SCHEMA_VERSION}
        doc.update(self.job)
        doc["tables"] = self.tables
        doc["meta"] = self.meta.to_dict()
        return doc

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict())

    @classmethod
    def from_yaml(cls, text: str, source: str) -> StoredManifest:
        try:
            doc = parse_yaml(text, source)
        except YamlProblem as exc:
            raise StoreError(f"stored manifest {exc.problem}") from None
        return cls.from_dict(doc, source)

    @classmethod
    def from_dict(cls, doc: Any, source: str) -> StoredManifest:
        if not isinstance(doc, dict):
            raise StoreError(f"stored manifest {source}: not a mapping")
        version = doc.get("schema-version")
        if version is None and isinstance(doc.get("meta"), dict):
            raise StoreError(
                f"stored manifest {source}: in the original flink-sql-runner's format (no "
                "schema-version); convert the store first: flink-sql-runner migrate --from "
                "<store> (docs/how-to/migrate.md)"
            )
        if version != STORED_SCHEMA_VERSION:
            raise StoreError(
                f"stored manifest {source}: schema-version {version!r} is not supported "
                f"(this flink-sql-runner reads {STORED_SCHEMA_VERSION})"
            )
        meta = doc.get("meta")
        try:
            parsed_meta = Meta(
                query_version=int(meta["query-version"]),
                query_id=str(meta["query-id"]),
                query_create_timestamp=str(meta["query-create-timestamp"]),
                spark_version=str(meta["spark-version"]) if meta.get("spark-version") else None,
            )
        except (TypeError, KeyError, ValueError):
            raise StoreError(
                f"stored manifest {source}: meta needs query-version, query-id and "
                "query-create-timestamp"
            ) from None
        tables = doc.get("tables") or {}
        job = {k: v for k, v in doc.items() if k not in ("schema-version", "tables", "meta")}
        if not isinstance(job.get("name"), str) or not isinstance(tables, dict):
            raise StoreError(f"stored manifest {source}: needs a name and a tables mapping")
        return cls(job=job, tables=tables, meta=parsed_meta)


#: The side folder of the records `watch` keeps per job, `_watch/<name>.json` (watch/records.py;
#: `forget` deletes a job's, act/forget.py).
WATCH_FOLDER = "_watch"


@dataclass(frozen=True)
class SideDoc:
    """A side document as read (an intent record, a watch record): its text, its version token,
    and its age: seconds since it was last written, on the store's own clock (S3's `Date` against
    its `LastModified`; a folder's modification time against this machine's clock). Its `stamp`
    is what the folder's listing shows of it that changes whenever it is written (S3's ETag; a
    file's inode, modification time and size; "" when not known): a caller that hands back the
    documents of an earlier read is given them again, unread, while their stamp is the same."""

    text: str
    token: Token
    age: float = 0.0
    stamp: str = ""


@dataclass(frozen=True)
class Stored:
    """A stored manifest as read, with its version token: the write that replaces it passes
    the token back, and succeeds only while the store still holds that version. `manifest`
    None (token ABSENT): nothing is stored under that name."""

    manifest: StoredManifest | None
    token: Token = ABSENT
