"""Manifest store in S3 (or any S3-compatible endpoint): `s3://bucket/prefix/<name>.yaml`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from botocore.exceptions import (
    ClientError,
)

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.intents import SideDoc
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.base import Reads, StoreConflict, read_each
from flink_sql_runner.stores.s3_client import (
    CONDITION_FAILED_CODES,
    MISSING_KEY_CODES,
    age_of,
    error_code,
    get_answer,
    get_object,
    make_s3_client,
    translated_errors,
)
from flink_sql_runner.stores.s3_lock import S3LockBackend

ARCHIVE_DIR = "_archive"
LOCK_KEY = "_lock.json"
INDEX_KEY = "_index.json"
INDEX_SCHEMA_VERSION = 1
SUFFIX = ".yaml"
DEFAULT_READ_WORKERS = 16


class S3Store:
    """`<prefix><name>.yaml` in one bucket; archived copies under `<prefix>_archive/`."""

    def __init__(self, bucket: str, prefix: str, client: Any = None):
        prefix = prefix.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.bucket = bucket
        self.prefix = prefix
        self.location = f"s3://{bucket}/{prefix}"
        self.client = client if client is not None else make_s3_client()
        self._listed: dict[str, str] | None = None  # name -> ETag, from the last listing
        self._known: dict[str, tuple[str, StoredManifest]] = {}  # read or written, by name
        self._index_written: dict[str, Any] | None = None

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}{SUFFIX}"

    def _errors(self, key: str, action: str) -> Any:
        return translated_errors(self.bucket, key, action, StoreError)

    def list_names(self) -> list[str]:
        """One listing (paginated); it also notes each manifest's ETag for `read_many`."""
        etags = {}
        paginator = self.client.get_paginator("list_objects_v2")
        with self._errors(self.prefix, "list"):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix, Delimiter="/"):
                for item in page.get("Contents", []):
                    rest = item["Key"][len(self.prefix) :]
                    if rest.endswith(SUFFIX) and len(rest) > len(SUFFIX) and "/" not in rest:
                        etags[rest[: -len(SUFFIX)]] = str(item.get("ETag", ""))
        self._listed = etags
        return sorted(etags)

    def read(self, name: str) -> StoredManifest | None:
        key = self._key(name)
        with self._errors(key, "read"):
            found = get_object(self.client, self.bucket, key)
        if found is None:
            self._known.pop(name, None)
            if self._listed is not None:
                self._listed.pop(name, None)
            return None
        body, etag = found
        source = f"s3://{self.bucket}/{key}"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"stored manifest {source}: not UTF-8 text") from None
        manifest = StoredManifest.from_yaml(text, source)
        self._known[name] = (etag, manifest)
        return manifest

    def read_many(self, names: Iterable[str], max_workers: int = DEFAULT_READ_WORKERS) -> Reads:
        """Every named manifest. Those whose ETag in a fresh listing matches the store's index
        (`_index.json`, kept by deploys) come from the index; only the others are fetched, one
        GET each, `max_workers` at a time."""
        names = list(dict.fromkeys(names))
        if self._listed is None:
            self.list_names()
        listed = self._listed or {}
        index = self._read_index() if names else {}
        for name, (etag, cached) in index.items():
            if listed.get(name) == etag:
                self._known.setdefault(name, (etag, cached))
        found: dict[str, StoredManifest | None] = {}
        fetch = []
        for name in names:
            if name not in listed:
                found[name] = None
            elif name in index and index[name][0] == listed[name]:
                found[name] = index[name][1]
            else:
                fetch.append(name)
        fetched = read_each(self, fetch, max_workers)
        found.update(fetched.manifests)
        return Reads({n: found[n] for n in names if n in found}, fetched.problems)

    def _expected(self, name: str) -> str | None:
        """The ETag this object last saw for `name` (read, listed or written); None: absent."""
        if name in self._known:
            return self._known[name][0]
        return (self._listed or {}).get(name)

    def write(self, manifest: StoredManifest) -> None:
        """One conditional PutObject: S3 replaces an object atomically (readers never see a
        part), and only if it still has the ETag this deployer saw (`If-Match`), or does not
        exist if it saw none (`If-None-Match: *`)."""
        key = self._key(manifest.name)
        body = manifest.to_yaml().encode("utf-8")
        expected = self._expected(manifest.name)
        condition = {"IfMatch": expected} if expected else {"IfNoneMatch": "*"}
        with self._errors(key, "write"):
            try:
                answer = self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=body, ContentType="text/yaml", **condition
                )
            except ClientError as exc:
                if error_code(exc) not in (*CONDITION_FAILED_CODES, *MISSING_KEY_CODES):
                    raise
                # A retried PUT whose first attempt landed (its answer was lost) finds its own
                # object there: that is success, not a conflict.
                found = get_object(self.client, self.bucket, key)
                if found is None or found[0] != body:
                    raise StoreConflict(
                        f"s3://{self.bucket}/{key} changed since this deploy read it (another "
                        "deployer?); not overwriting"
                    ) from None
                answer = {"ETag": found[1]}
        self._known[manifest.name] = (str(answer.get("ETag", "")), manifest)
        if self._listed is not None:
            self._listed[manifest.name] = str(answer.get("ETag", ""))

    # -- the index: every manifest under its ETag, in one object ------------------------------
    def _read_index(self) -> dict[str, tuple[str, StoredManifest]]:
        """`{name: (etag, manifest)}` from `_index.json`; {} when missing or unusable (it is
        only a cache: every entry is checked against the listing's ETag before use)."""
        key = f"{self.prefix}{INDEX_KEY}"
        with self._errors(key, "read"):
            found = get_object(self.client, self.bucket, key)
        if found is None:
            return {}
        try:
            doc = json.loads(found[0].decode("utf-8"))
            if doc.get("schema-version") != INDEX_SCHEMA_VERSION:
                return {}
            source = f"{self.location}{INDEX_KEY}"
            return {
                str(name): (str(entry["etag"]), StoredManifest.from_dict(entry["manifest"], source))
                for name, entry in doc["entries"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError, StoreError):
            return {}

    def refresh_index(self) -> bool:
        """Rewrite `_index.json` from what this process read and wrote, when that covers every
        manifest listed; True if written. Call it holding the store's lock."""
        listed = self._listed
        if listed is None or any(self._known.get(n, ("",))[0] != e for n, e in listed.items()):
            return False
        entries = {
            n: {"etag": listed[n], "manifest": self._known[n][1].to_dict()} for n in sorted(listed)
        }
        if entries == self._index_written:
            return False
        body = json.dumps({"schema-version": INDEX_SCHEMA_VERSION, "entries": entries})
        self.write_side(INDEX_KEY, body)
        self._index_written = entries
        return True

    def archive(self, name: str) -> str:
        """Copy to `<prefix>_archive/<name>/<UTC timestamp>.yaml`, then delete the live object;
        both only while it is what this deploy read (a GET and a DELETE with `If-Match`)."""
        source = self._key(name)
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S.%fZ")
        target = f"{self.prefix}{ARCHIVE_DIR}/{name}/{stamp}{SUFFIX}"
        expected = self._expected(name)
        condition = {"IfMatch": expected} if expected else {}
        changed = StoreConflict(
            f"s3://{self.bucket}/{source} changed since this deploy read it (another "
            "deployer?); not archiving"
        )
        with self._errors(source, "archive"):
            try:
                answer = self.client.get_object(Bucket=self.bucket, Key=source, **condition)
                body = answer["Body"].read()
            except ClientError as exc:
                if error_code(exc) in CONDITION_FAILED_CODES:
                    raise changed from None
                if error_code(exc) not in MISSING_KEY_CODES:
                    raise
                raise StoreError(
                    f"cannot archive s3://{self.bucket}/{source}: it does not exist"
                ) from None
            self.client.put_object(
                Bucket=self.bucket, Key=target, Body=body, ContentType="text/yaml"
            )
        with self._errors(source, "delete (after archiving)"):
            try:
                self.client.delete_object(
                    Bucket=self.bucket, Key=source, IfMatch=str(answer.get("ETag", ""))
                )
            except ClientError as exc:
                if error_code(exc) in CONDITION_FAILED_CODES:
                    raise changed from None
                raise
        self._known.pop(name, None)
        if self._listed is not None:
            self._listed.pop(name, None)
        return f"s3://{self.bucket}/{target}"

    # -- side documents (intents) and the lock, beside the manifests ---------------------------
    def write_side(self, key: str, text: str) -> None:
        full = f"{self.prefix}{key}"
        with self._errors(full, "write"):
            self.client.put_object(Bucket=self.bucket, Key=full, Body=text.encode("utf-8"))

    def read_side_docs(self, folder: str) -> dict[str, SideDoc]:
        """`{file name: document}` of every object directly under the side folder `folder`,
        each with its age on S3's clock."""
        prefix = f"{self.prefix}{folder}/"
        found = {}
        paginator = self.client.get_paginator("list_objects_v2")
        with self._errors(prefix, "list"):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
                for item in page.get("Contents", []):
                    with self._errors(item["Key"], "read"):
                        got = get_answer(self.client, self.bucket, item["Key"])
                    if got is not None:
                        text = got[0].decode("utf-8", "replace")
                        found[item["Key"][len(prefix) :]] = SideDoc(text, age_of(got[1]))
        return found

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of every object directly under the side folder `folder`."""
        return {name: doc.text for name, doc in self.read_side_docs(folder).items()}

    def delete_side(self, key: str) -> None:
        full = f"{self.prefix}{key}"
        with self._errors(full, "delete"):
            self.client.delete_object(Bucket=self.bucket, Key=full)

    def lock_backend(self, name: str | None = None) -> S3LockBackend:
        return S3LockBackend(self.client, self.bucket, f"{self.prefix}{name or LOCK_KEY}")
