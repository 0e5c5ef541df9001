"""The store lock on S3: an object created with `If-None-Match: *` and renewed or taken over with
`If-Match: <etag>` (lock.py has the lease)."""

from __future__ import annotations

from typing import Any

from flink_sql_runner.errors import StoreError
from flink_sql_runner.stores.lock import Holder
from flink_sql_runner.stores.s3_client import CONDITION_FAILED_CODES, MISSING_KEY_CODES

_BOGUS_ETAG = '"00000000000000000000000000000000"'


class S3LockBackend:
    def __init__(self, client: Any, bucket: str, key: str):
        self.client, self.bucket, self.key = client, bucket, key
        self.location = f"s3://{bucket}/{key}"
        self._checked = False
        #: The last lock read and its holder: a waiter reads the same lock every second (and
        #: twice an attempt) until its holder renews it; a holder is frozen.
        self._last: tuple[str, Holder | None] = ("", None)

    def _code(self, exc: Exception) -> str:
        return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))

    def _put(self, holder: Holder, action: str, **condition: str) -> str | None:
        """The new ETag, or None when the condition failed."""
        try:
            answer = self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=holder.to_json(), **condition
            )
        except Exception as exc:  # botocore ClientError and friends
            if self._code(exc) == "NoSuchBucket":
                raise StoreError(
                    f"cannot {action} lock {self.location}: bucket {self.bucket} does not exist"
                ) from None
            if self._code(exc) not in (*CONDITION_FAILED_CODES, *MISSING_KEY_CODES):
                raise StoreError(
                    f"cannot {action} lock {self.location}: {self._code(exc) or exc}"
                ) from None
            # A retried put whose first attempt landed finds its own holder there.
            current, token = self.read()
            return token if current == holder and action != "check" else None
        return str(answer.get("ETag", ""))

    def create(self, holder: Holder) -> Any:
        token = self._put(holder, "create", IfNoneMatch="*")
        if token is not None and not self._checked:
            self._check_conditional_writes(holder, token)
        return token

    def _check_conditional_writes(self, holder: Holder, token: str) -> None:
        """Every condition the lock relies on must be refused when it does not hold: a second
        `If-None-Match: *` PUT, a PUT and a DELETE with a wrong `If-Match` (releasing deletes
        the lock with `If-Match`: where DELETE ignores it, a holder that lost its lease would
        delete the next holder's lock). An endpoint that ignores them cannot keep two
        deployers apart."""
        ignored = []
        if self._put(holder, "check", IfNoneMatch="*") is not None:
            ignored.append("If-None-Match")
        if self._put(holder, "check", IfMatch=_BOGUS_ETAG) is not None:
            ignored.append("If-Match")
        if not self._delete_refused(_BOGUS_ETAG):
            ignored.append("If-Match on DELETE")
        if ignored:
            self.client.delete_object(Bucket=self.bucket, Key=self.key)
            raise StoreError(
                f"the S3 endpoint of {self.location} ignores conditional writes "
                f"({' and '.join(ignored)}), so the store's lock cannot keep two deployers "
                "apart; use an endpoint that supports them (AWS S3, and recent MinIO, Ceph and "
                "moto do)"
            )
        self._checked = True

    def _delete_refused(self, etag: str) -> bool:
        """Whether a DELETE with `If-Match: <etag>` (not the lock's) left the lock in place."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=etag)
        except Exception as exc:
            if self._code(exc) in CONDITION_FAILED_CODES:
                return True
            raise StoreError(
                f"cannot check conditional deletes on {self.location}: {self._code(exc) or exc}"
            ) from None
        return self.read()[1] is not None

    def read(self) -> tuple[Holder | None, Any]:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key)
            body = answer["Body"].read().decode("utf-8", "replace")
        except Exception as exc:
            if self._code(exc) in ("NoSuchKey", "404"):
                return None, None
            raise StoreError(
                f"cannot read lock {self.location}: {self._code(exc) or exc}"
            ) from None
        if body != self._last[0]:
            self._last = (body, Holder.from_json(body))
        return self._last[1], str(answer["ETag"])

    def replace(self, holder: Holder, token: Any) -> Any:
        return self._put(holder, "renew", IfMatch=str(token))

    def delete(self, token: Any) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=str(token))
        except Exception as exc:
            if self._code(exc) not in ("PreconditionFailed", "NoSuchKey", "404", "412"):
                raise StoreError(
                    f"cannot release lock {self.location}: {self._code(exc) or exc}"
                ) from None
