"""The S3 client every S3 user of the deployer shares: set up from the standard AWS settings, its
errors turned into one line for people, and the error codes that conditional writes answer."""

from __future__ import annotations

import email.utils
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    IncompleteReadError,
    NoCredentialsError,
    ResponseStreamingError,
)

from flink_sql_runner.errors import FsrError, StoreError

MISSING_KEY_CODES = ("NoSuchKey", "404")


#: What S3 answers a conditional write whose condition failed (412, or 409 when two raced).
CONDITION_FAILED_CODES = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


#: Attempts per request (1 + retries) unless AWS_MAX_ATTEMPTS or the profile says otherwise.
DEFAULT_MAX_ATTEMPTS = 5


_HINTS = {
    "AccessDenied": "access denied (without s3:ListBucket a missing key reads as AccessDenied)",
    "InvalidAccessKeyId": "the access key is not known to the endpoint",
    "SignatureDoesNotMatch": "the secret key does not match the access key",
    "ExpiredToken": "the session token has expired",
    "InvalidToken": "the session token is not valid",
    "PermanentRedirect": "the bucket is in another region (set AWS_REGION)",
    "AuthorizationHeaderMalformed": "wrong region for this bucket (set AWS_REGION)",
    "SlowDown": "the endpoint is throttling requests",
    "Throttling": "the endpoint is throttling requests",
    "ThrottlingException": "the endpoint is throttling requests",
    "TooManyRequestsException": "the endpoint is throttling requests",
    "RequestLimitExceeded": "the endpoint is throttling requests",
}


def make_s3_client(max_attempts: int = DEFAULT_MAX_ATTEMPTS, max_pool_connections: int = 64) -> Any:
    """A boto3 S3 client from the standard AWS settings, with standard-mode retries.

    boto3 itself reads AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3, AWS_DEFAULT_REGION, profiles and
    the credential chain. It does not read AWS_REGION, which the other AWS SDKs prefer, so that
    one is passed explicitly.

    Retries: botocore's standard mode with `max_attempts` attempts in all (1 + retries), unless
    the user chose otherwise with AWS_RETRY_MODE / AWS_MAX_ATTEMPTS or `retry_mode` /
    `max_attempts` in the profile. The mode is always set explicitly: botocore's own default is
    "legacy" up to 1.3x and "standard" later, so relying on it would depend on the version. The
    pool is larger than boto3's default of 10 connections so that parallel reads are not
    serialised on it.
    """
    import boto3
    import botocore.session
    from botocore.config import Config

    try:
        core = botocore.session.get_session()
        mode = _user_setting(core, "AWS_RETRY_MODE", "retry_mode") or "standard"
        attempts = _attempts(_user_setting(core, "AWS_MAX_ATTEMPTS", "max_attempts"), max_attempts)
        # "total_max_attempts", not "max_attempts": in a Config the latter counts retries only.
        retries = {"mode": mode, "total_max_attempts": attempts}
        config = Config(retries=retries, max_pool_connections=max_pool_connections)
        region = os.environ.get("AWS_REGION") or None
        session = boto3.session.Session(botocore_session=core)
        return session.client("s3", region_name=region, config=config)
    except (BotoCoreError, ValueError) as exc:  # e.g. ProfileNotFound, "Invalid endpoint"
        raise FsrError(f"cannot set up the S3 client: {exc}") from None


def _user_setting(core: Any, variable: str, key: str) -> str | None:
    """What the user set: the environment variable, else the profile's key (never a default)."""
    return os.environ.get(variable) or core.get_scoped_config().get(key) or None


def _attempts(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        attempts = int(text)
    except ValueError:
        attempts = 0
    if attempts < 1:
        raise FsrError(
            f"cannot set up the S3 client: max attempts (AWS_MAX_ATTEMPTS or max_attempts) "
            f"must be a whole number of at least 1, got {text!r}"
        )
    return attempts


def describe_error(exc: Exception, bucket: str, key: str, action: str) -> str:
    """One line for a failed S3 call: what, where, and the S3 error code; never credentials."""
    where = f"s3://{bucket}/{key}"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "unknown")
        if code == "NoSuchBucket":
            return f"cannot {action} {where}: bucket {bucket} does not exist"
        metadata = exc.response.get("ResponseMetadata", {})
        status, retries = metadata.get("HTTPStatusCode"), metadata.get("RetryAttempts") or 0
        if code == str(status):  # botocore's stand-in when the answer held no S3 error
            detail = f"HTTP {status} without an S3 error code (or an answer cut short)"
        else:
            detail = f"{code} (HTTP {status})" if status else code
        hint = _HINTS.get(code)
        tries = f"; gave up after {retries + 1} attempts" if retries else ""
        return f"cannot {action} {where}: {detail}" + (f", {hint}" if hint else "") + tries
    if isinstance(exc, NoCredentialsError):
        return (
            f"cannot {action} {where}: no AWS credentials found "
            "(environment, profile or instance role)"
        )
    if isinstance(exc, (IncompleteReadError, ResponseStreamingError)):
        return f"cannot {action} {where}: the connection broke while the answer was arriving"
    # BotoCoreError messages name the endpoint or the failing setting, never secrets.
    return f"cannot {action} {where}: {exc}".replace("\n", " ")


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "")


@contextmanager
def translated_errors(
    bucket: str, key: str, action: str, error: type[FsrError] = StoreError
) -> Iterator[None]:
    """Turn boto3/botocore failures into `error` with a one-line message."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise error(describe_error(exc, bucket, key, action)) from None


def get_bytes(client: Any, bucket: str, key: str) -> bytes | None:
    """The object's bytes, or None when there is no such key; other errors propagate."""
    found = get_object(client, bucket, key)
    return found[0] if found is not None else None


def get_object(client: Any, bucket: str, key: str) -> tuple[bytes, str] | None:
    """The object's bytes and ETag, or None when there is no such key; other errors propagate."""
    found = get_answer(client, bucket, key)
    return (found[0], str(found[1].get("ETag", ""))) if found is not None else None


def age_of(answer: dict[str, Any]) -> float:
    """Seconds since the object of a GET answer was last written, on S3's own clock (its
    `Date` header against the object's `LastModified`); 0 when either is missing."""
    modified = answer.get("LastModified")
    date = answer.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    if modified is None or not date:
        return 0.0
    try:
        now = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, (now - modified).total_seconds())


def get_answer(
    client: Any, bucket: str, key: str, **extra: str
) -> tuple[bytes, dict[str, Any]] | None:
    """The object's bytes and the GET's answer (headers), or None when there is no such key;
    `extra`: the GET's other parameters (`Range`).

    botocore retries a request until its response headers arrive; a body cut off after that
    is not retried by it, so the whole GET is, as often as the client retries requests.
    """
    attempts = client.meta.config.retries.get("total_max_attempts") or DEFAULT_MAX_ATTEMPTS
    attempt = 1
    while True:
        try:
            answer = client.get_object(Bucket=bucket, Key=key, **extra)
        except ClientError as exc:
            if error_code(exc) in MISSING_KEY_CODES:
                return None
            raise
        try:
            return answer["Body"].read(), answer
        except (IncompleteReadError, ResponseStreamingError):
            if attempt >= attempts:
                raise
            attempt += 1
