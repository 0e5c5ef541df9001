"""Manifest store in S3 (or any S3-compatible endpoint): `s3://bucket/prefix/<name>.yaml`.

A manifest's token is its ETag; writes are conditional PUTs (`If-Match`, `If-None-Match: *`)
and deletes conditional DELETEs (`If-Match`). `_index.json` holds every manifest under its
ETag, so a reader holding a fresh listing fetches only the manifests changed since.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from botocore.exceptions import (
    ClientError,
)

from flink_sql_runner.errors import StoreError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.stored import (
    ABSENT,
    ANY,
    SideDoc,
    Stored,
    StoredManifest,
    Token,
    Unconditional,
)
from flink_sql_runner.stores.base import (
    Reads,
    Snapshot,
    StoreConflict,
    archived_copies,
    conflict,
    read_each,
    reused,
)
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
from flink_sql_runner.stores.s3_listing import age, clock_of
from flink_sql_runner.stores.s3_listing import pages as listing_pages
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

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}{SUFFIX}"

    def _errors(self, key: str, action: str) -> Any:
        return translated_errors(self.bucket, key, action, StoreError)

    def snapshot(self) -> Snapshot:
        """One listing (paginated), with each manifest's ETag."""
        etags = {}
        start, end = len(self.prefix), -len(SUFFIX)
        with self._errors(self.prefix, "list"):
            for page in listing_pages(self.client, self.bucket, self.prefix):
                for listed in page.keys:
                    rest = listed.key[start:]
                    if rest.endswith(SUFFIX) and len(rest) > len(SUFFIX) and "/" not in rest:
                        etags[rest[:end]] = listed.etag
        return Snapshot(tuple(sorted(etags)), etags, etags)

    def index_snapshot(self) -> Snapshot | None:
        """The index's manifests as a snapshot (one GET, no listing); None when there is no
        usable index or it cannot be read now. A guess: a listing confirms it."""
        try:
            index = self._read_index()[0]
        except StoreError:
            return None
        if not index:
            return None
        etags = {name: etag for name, (etag, _) in index.items()}
        return Snapshot(tuple(sorted(etags)), etags, etags, held=index)

    def list_names(self) -> list[str]:
        return list(self.snapshot().names)

    def read_text(self, name: str) -> tuple[str | None, Token]:
        key = self._key(name)
        with self._errors(key, "read"):
            found = get_object(self.client, self.bucket, key)
        if found is None:
            return None, ABSENT
        body, etag = found
        try:
            return body.decode("utf-8"), etag
        except UnicodeDecodeError:
            raise StoreError(f"stored manifest s3://{self.bucket}/{key}: not UTF-8 text") from None

    def read(self, name: str) -> Stored:
        text, etag = self.read_text(name)
        if text is None:
            return Stored(None, ABSENT)
        return Stored(StoredManifest.from_yaml(text, f"s3://{self.bucket}/{self._key(name)}"), etag)

    def read_many(
        self,
        names: Iterable[str],
        max_workers: int = DEFAULT_READ_WORKERS,
        snapshot: Snapshot | None = None,
        known: Reads | None = None,
    ) -> Reads:
        """Every named manifest, one GET each, `max_workers` at a time. With the caller's
        `snapshot`: a name it does not list is absent, a manifest `known` holds under the very
        ETag the snapshot lists is given back as it is, and one the store's index
        (`_index.json`, kept by deploys) holds under that ETag comes from the index; the index
        is read only when some listed manifest is not known so."""
        names = list(dict.fromkeys(names))
        if snapshot is None:
            return read_each(self, names, max_workers)
        listed = snapshot.etags
        kept = reused(names, snapshot, known)
        unknown = [n for n in names if n in listed and n not in kept.manifests]
        index = snapshot.held
        if index is None:
            index = self._read_index()[0] if unknown else {}
        found: dict[str, StoredManifest | None] = dict(kept.manifests)
        tokens: dict[str, Token] = dict(kept.tokens)
        fetch = []
        for name in names:
            if name in found:
                continue
            if name not in listed:
                found[name], tokens[name] = None, ABSENT
            elif name in index and index[name][0] == listed[name]:
                tokens[name], found[name] = index[name]
            else:
                fetch.append(name)
        fetched = read_each(self, fetch, max_workers)
        found.update(fetched.manifests)
        tokens.update(fetched.tokens)
        return Reads(
            {n: found[n] for n in names if n in found},
            fetched.problems,
            {n: tokens[n] for n in names if n in tokens},
            # The stamp a manifest was read under: its ETag when read together with it.
            {n: listed[n] for n in names if n in listed and tokens.get(n) == listed[n]},
        )

    def _put(
        self, key: str, body: bytes, expected: Token | Unconditional, content_type: str
    ) -> Token:
        """One PutObject, conditional unless `expected` is ANY: S3 replaces an object
        atomically (readers never see a part), and only if it still has the ETag `expected`
        (`If-Match`), or does not exist when that is ABSENT (`If-None-Match: *`)."""
        condition = {}
        if expected is not ANY:
            condition = {"IfMatch": expected} if expected else {"IfNoneMatch": "*"}
        with self._errors(key, "write"):
            try:
                answer = self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=body, ContentType=content_type, **condition
                )
            except ClientError as exc:
                if not condition or error_code(exc) not in (
                    *CONDITION_FAILED_CODES,
                    *MISSING_KEY_CODES,
                ):
                    raise
                # A retried PUT whose first attempt landed (its answer was lost) finds its own
                # object there: that is success, not a conflict.
                found = get_object(self.client, self.bucket, key)
                if found is None or found[0] != body:
                    raise conflict(f"s3://{self.bucket}/{key}") from None
                return found[1]
        return str(answer.get("ETag", ""))

    def write(self, manifest: StoredManifest, expected: Token) -> Token:
        body = manifest.to_yaml().encode("utf-8")
        return self._put(self._key(manifest.name), body, expected, "text/yaml")

    # -- the index: every manifest under its ETag, in one object ------------------------------
    def _read_index(self) -> tuple[dict[str, tuple[str, StoredManifest]], Token]:
        """`{name: (etag, manifest)}` from `_index.json` and the index's own ETag; no entries
        when missing or unusable (it is only a cache: every entry is checked against a
        listing's ETag before use)."""
        key = f"{self.prefix}{INDEX_KEY}"
        with self._errors(key, "read"):
            found = get_object(self.client, self.bucket, key)
        if found is None:
            return {}, ABSENT
        try:
            doc = json.loads(found[0].decode("utf-8"))
            if doc.get("schema-version") != INDEX_SCHEMA_VERSION:
                return {}, found[1]
            source = f"{self.location}{INDEX_KEY}"
            entries = {
                str(name): (str(entry["etag"]), StoredManifest.from_dict(entry["manifest"], source))
                for name, entry in doc["entries"].items()
            }
            return entries, found[1]
        except (ValueError, KeyError, TypeError, AttributeError, StoreError):
            return {}, found[1]

    def refresh_index(self, known: Reads | None = None, max_workers: int = 16) -> bool:
        """Rewrite `_index.json` from a fresh listing: each listed manifest under its ETag,
        taken from `known` or the index where they hold it under that ETag, else read (one GET
        each). Conditional on the index being what was read (a concurrent refresh wins: False).
        True if written. Call it holding the store's lock."""
        snapshot = self.snapshot()
        index, index_token = self._read_index()
        entries: dict[str, tuple[str, StoredManifest]] = {}
        fetch = []
        for name in snapshot.names:
            etag = snapshot.etags[name]
            manifest = known.manifests.get(name) if known is not None else None
            if manifest is not None and known is not None and known.tokens.get(name) == etag:
                entries[name] = (etag, manifest)
            elif name in index and index[name][0] == etag:
                entries[name] = index[name]
            else:
                fetch.append(name)
        fetched = read_each(self, fetch, max_workers)
        for name in fetch:
            manifest, token = fetched.manifests.get(name), fetched.tokens.get(name)
            if manifest is not None and token:
                entries[name] = (token, manifest)  # read together: the pair is consistent
        if entries == index:
            return False
        doc = {n: {"etag": e, "manifest": m.to_dict()} for n, (e, m) in sorted(entries.items())}
        body = json.dumps({"schema-version": INDEX_SCHEMA_VERSION, "entries": doc})
        try:
            self.write_side(INDEX_KEY, body, expected=index_token)
        except StoreConflict:
            return False
        return True

    def archive(self, name: str, expected: Token) -> str:
        """Copy to `<prefix>_archive/<name>/<UTC timestamp>.yaml`, then delete the live object;
        both only while it is at `expected` (a GET and a DELETE with `If-Match`)."""
        source = self._key(name)
        stamp = datetime.fromtimestamp(runtime.wall(), timezone.utc).strftime("%Y-%m-%dT%H%M%S.%fZ")
        target = f"{self.prefix}{ARCHIVE_DIR}/{name}/{stamp}{SUFFIX}"
        changed = conflict(f"s3://{self.bucket}/{source}", "archiving")
        with self._errors(source, "archive"):
            try:
                condition = {"IfMatch": expected} if expected else {}
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
            if expected is ABSENT:
                raise changed  # it was absent when read, and exists now
            self.client.put_object(
                Bucket=self.bucket, Key=target, Body=body, ContentType="text/yaml"
            )
        self._delete(source, str(answer.get("ETag", "")), changed)
        return f"s3://{self.bucket}/{target}"

    def _delete(self, key: str, expected: Token | Unconditional, changed: StoreConflict) -> None:
        """DeleteObject, with `If-Match` unless `expected` is ANY; an object already gone (a
        retried DELETE whose first attempt landed) is deleted."""
        condition = {"IfMatch": expected} if isinstance(expected, str) else {}
        with self._errors(key, "delete"):
            try:
                self.client.delete_object(Bucket=self.bucket, Key=key, **condition)
            except ClientError as exc:
                if error_code(exc) in CONDITION_FAILED_CODES:
                    raise changed from None
                if error_code(exc) not in MISSING_KEY_CODES:
                    raise

    # -- side documents (intents) and the lock, beside the manifests ---------------------------
    def read_archived(self, name: str) -> list[StoredManifest]:
        return archived_copies(self, ARCHIVE_DIR, name)

    def write_side(self, key: str, text: str, *, expected: Token | Unconditional = ANY) -> Token:
        return self._put(f"{self.prefix}{key}", text.encode("utf-8"), expected, "application/json")

    def read_side_folder(self, folder: str) -> dict[str, str]:
        """`{file name: text}` of every object directly under the side folder `folder`."""
        return {name: doc.text for name, doc in self.read_side_docs(folder).items()}

    def read_side_docs(
        self, folder: str, known: dict[str, SideDoc] | None = None
    ) -> dict[str, SideDoc]:
        """`{file name: document}` of every object directly under the side folder, each with
        its ETag and its age on S3's clock: one listing, and a GET of each object but those
        `known` holds under the ETag listed now (given back, their age as listed)."""
        prefix = f"{self.prefix}{folder}/"
        found = {}
        known = known or {}
        with self._errors(prefix, "list"):
            for page in listing_pages(self.client, self.bucket, prefix):
                now = clock_of(page.date)
                for key, etag, _, modified in page.keys:
                    file_name = key[len(prefix) :]
                    before = known.get(file_name)
                    if etag and before is not None and before.stamp == etag:
                        found[file_name] = replace(before, age=age(now, modified))
                        continue
                    with self._errors(key, "read"):
                        got = get_answer(self.client, self.bucket, key)
                    if got is not None:
                        text = got[0].decode("utf-8", "replace")
                        etag = str(got[1].get("ETag", ""))
                        found[file_name] = SideDoc(text, etag, age_of(got[1]), etag)
        return found

    def delete_side(self, key: str, *, expected: Token | Unconditional = ANY) -> None:
        full = f"{self.prefix}{key}"
        changed = conflict(f"s3://{self.bucket}/{full}", "deleting")
        if expected is ABSENT:
            with self._errors(full, "read"):
                if get_object(self.client, self.bucket, full) is not None:
                    raise changed
            return
        self._delete(full, expected, changed)

    def clear_side_folder(self, folder: str) -> None:
        """Nothing: a PUT S3 did not take leaves nothing, and S3 has no folders."""

    def clock(self) -> float:
        """S3's clock: the `Date` of an answer to a listing of at most one intent record."""
        prefix = f"{self.prefix}_intents/"
        with self._errors(prefix, "list"):
            page = next(listing_pages(self.client, self.bucket, prefix, max_keys=1))
        now = clock_of(page.date)
        if now is None:
            raise StoreError(
                f"s3://{self.bucket}/{prefix}: the store's answer has no Date: its clock cannot "
                "be read"
            )
        return now.timestamp()

    def lock_backend(self, name: str | None = None) -> S3LockBackend:
        return S3LockBackend(self.client, self.bucket, f"{self.prefix}{name or LOCK_KEY}")
