"""The signatures of the files a command keeps beside the state folder (the load cache, the SQL
fingerprints, the plan's schema answers): where the plan key is set, each line is signed with
an HMAC under a key derived from it and the kind of file, so that a cache folder someone else
could write (a CI cache) cannot make a command act on what the files do not say; a line not
signed with it is read, or asked, again. Without the plan key, lines are kept as they are."""

from __future__ import annotations

import hashlib
import hmac
import os

from flink_sql_runner.read.secrets import PLAN_KEY_VARIABLE


def cache_key(plan_key: bytes | None, kind: str = "load") -> bytes | None:
    """The key the lines of one kind of cache file (`load`, `fingerprints`, `schemas`) are
    signed with: one derived from the plan key and the kind (so a cache signed here names
    nothing of it, and a line of one kind is no line of another), None without one."""
    if plan_key is None:
        return None
    purpose = f"flink-sql-runner {kind} cache".encode()
    return hmac.new(plan_key, purpose, hashlib.sha256).digest()


def env_cache_key(kind: str = "load") -> bytes | None:
    """`cache_key` of the plan key the environment holds (`FLINK_SQL_RUNNER_PLAN_KEY`)."""
    plan_key = os.environ.get(PLAN_KEY_VARIABLE, "")
    return cache_key(plan_key.encode("utf-8"), kind) if plan_key else None


def signed(text: str, key: bytes | None) -> str:
    """`text` as a line of a file signed with `key`: its HMAC, then itself; as it is without."""
    if key is None:
        return text
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest() + text


def unsigned(line: str, key: bytes | None) -> str | None:
    """What a signed line holds, None when its signature is not `key`'s (whatever the line
    holds where the signature goes)."""
    if key is None:
        return line
    text = line[64:]
    mac = hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    given = line[:64].encode("utf-8", "surrogatepass")
    return text if hmac.compare_digest(mac.encode(), given) else None
