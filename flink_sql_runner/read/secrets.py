"""Keeping secrets out of everything the deployer prints and off every command line.

A property is secret when its key matches Spark's own redaction rule (the default of
`spark.redaction.regex`, `(?i)secret|password|token|access[.]?key`), or names one of the
well-known credentials that rule misses (JAAS configurations such as Kafka's SASL login, Azure
account keys and SAS tokens, private keys of GCS service accounts, Kafka's `ssl.keystore.key`,
anything holding `passwd` or `credential`), or when its value assigns one (`...password="x"`,
`;token=abc`: Spark applies its rule to values too) or holds a private key (PEM); a URL's user
and password are masked wherever they are (`mongodb://*****@host`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: Spark's `spark.redaction.regex` default (3.5 and 4.x spell it `access[.]key` or
#: `access[.]?key`; the wider one is used).
SPARK_REDACTION = re.compile(r"(?i)secret|password|token|access[.]?key")
#: Credential keys Spark's default misses.
CREDENTIAL_KEYS = re.compile(
    r"(?i)passwd|credential|jaas[.]config|account[.]key|private[._-]?key|sas[._-]?token"
    r"|fs[.]azure[.]sas[.]|keystore[.]key"
)
#: Private key material (PEM), whatever the key it is under says: masked from its first line to
#: its last (or to the end of the text where that is cut off).
PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S
)
#: What a quoted key that gives a secret is: Spark's words and the credential keys', after
#: dotted segments (`"password"`, `"fs.s3a.secret.key"`, `"fs.azure.account.key.acct.dfs..."`,
#: `"credentials"`), never inside a word (`'reset_password'` is a value, not a key).
_QUOTED_SECRET_KEY = (
    r"[\"'](?:[\w-]+[.])*(?:secret|password|passwd|token|access[.]?key|credentials?"
    r"|account[.]key|private[._-]?key|sas[._-]?token|sas[.])[^\"'\s]{0,80}[\"']"
)
#: A value that assigns a secret, e.g. a JAAS line or a JDBC URL with a password in it; or that
#: gives one as a quoted key's value in code (`.option("password", "x")`,
#: `.set("fs.s3a.secret.key", "x")`) or SQL (`password 'x'`, `'password' 'x'`).
SECRET_IN_VALUE = re.compile(
    r"(?i)(secret|password|passwd|token|access[.]?key)[^=:\s]{0,20}\s*[=:]"
    r"|" + _QUOTED_SECRET_KEY + r"(\s*,\s*|\s+)[\"']"
    r"|\b(password|passwd|secret)\s+[\"']"
)
MASK = "*****"
#: A URL's user and password (`mongodb://user:secret@host`, or a token as the user): masked
#: (`mongodb://*****@host`), the rest of the URL kept.
URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
#: The plan key (act/saved_plan.py): the deployer's alone. No job may name it (`${...}`), and no
#: child process gets it (host/processes.py's `child_env`).
PLAN_KEY_VARIABLE = "FLINK_SQL_RUNNER_PLAN_KEY"
_ASSIGNED_SECRET = re.compile(
    r"(?i)((?:secret|password|passwd|token|access[.]?key)[^=:\s]{0,20}\s*[=:]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^\s;&,]+)"
)
#: A secret given as a quoted key's value in code or SQL: `.option("password", "x")`,
#: `.set("fs.s3a.secret.key", "x")`, `OPTIONS (password 'x')`, `OPTIONS ('password' 'x')`.
_GIVEN_SECRET = re.compile(
    r"(?i)(" + _QUOTED_SECRET_KEY + r"(?:\s*,\s*|\s+)"
    r"|\b(?:password|passwd|secret)\s+)(\"[^\"]*\"|'[^']*')"
)
#: A user and password before a host without a scheme (`"key:secret@bucket"`, as an error
#: message quotes a bucket of `s3a://key:secret@bucket/`).
#: What `bare_credentials` finds, in linear time where this expression's search takes the
#: square of a line's length (a 1 MB line of `!a:` after an `@`: about 20 minutes).
BARE_CREDENTIALS = re.compile(r"(?<![\w/@:.-])[^\s/@:\"'<>]+:[^\s/@\"'<>]+@(?=[\w.-])")
#: A run of the characters a user and password are made of (and the user's `:`).
_CREDENTIAL_RUN = re.compile(r"[^\s/@\"'<>]+")
_AFTER_AT = re.compile(r"[\w.-]")
_NOT_BEFORE_USER = re.compile(r"[\w/@:.-]")


#: Words one of which every match of `SECRET_IN_VALUE` holds, in lower case.
_SECRET_WORDS = ("secret", "passw", "token", "access", "credential", "account", "private", "sas")


@lru_cache(maxsize=8192)
def is_secret_key(key: str) -> bool:
    return bool(SPARK_REDACTION.search(key) or CREDENTIAL_KEYS.search(key))


def holds_secret(value: str) -> bool:
    """Whether `mask` or `redact_text` would hide anything of `value`: a secret it assigns, a
    private key, a URL's (or a bare host's) user and password."""
    if assigns_secret(value):
        return True
    if "@" in value and (URL_CREDENTIALS.search(value) or bare_credentials(value)):
        return True
    return "PRIVATE KEY" in value and bool(PRIVATE_KEY.search(value))


def assigns_secret(value: str) -> bool:
    """Whether `value` assigns a secret (`SECRET_IN_VALUE`): an ASCII text without one of its
    words is answered without the expression, five times faster (Unicode's case folding, which
    the expression follows, is left to it)."""
    if value.isascii():
        lowered = value.lower()
        if not any(word in lowered for word in _SECRET_WORDS):
            return False
    return bool(SECRET_IN_VALUE.search(value))


def bare_credentials(text: str) -> list[tuple[int, int]]:
    """Where each match of `BARE_CREDENTIALS` is (its start, and its end past the `@`), in
    one pass: a match lies in a run of `_CREDENTIAL_RUN` right before an `@`, from the first
    place in that run the expression may begin (not after a word character, `/`, `@`, `:`,
    `.` or `-`; not at a `:`) to that `@`, when the run has a `:` there with a password after
    it, and the `@` is followed by a host's character."""
    found = []
    for run in _CREDENTIAL_RUN.finditer(text):
        at = run.end()
        if at + 1 >= len(text) or text[at] != "@" or not _AFTER_AT.match(text, at + 1):
            continue
        start = run.start()
        while start < at and (
            text[start] == ":" or (start > 0 and _NOT_BEFORE_USER.match(text, start - 1))
        ):
            start += 1
        colon = text.find(":", start, at)
        if start < at and colon != -1 and colon + 1 < at:
            found.append((start, at + 1))
    return found


def is_secret(key: str, value: Any = None) -> bool:
    """Spark redacts a property whose key or value matches its rule; so does the deployer."""
    if is_secret_key(key):
        return True
    return isinstance(value, str) and bool(
        SECRET_IN_VALUE.search(value) or PRIVATE_KEY.search(value)
    )


def mask(value: Any, key: str = "") -> Any:
    """`value` with every value under a secret key, or assigning a secret, replaced (any
    depth)."""
    if key and is_secret_key(key):
        return MASK
    if isinstance(value, dict):
        return {k: mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key) for v in value]
    if isinstance(value, str) and (SECRET_IN_VALUE.search(value) or PRIVATE_KEY.search(value)):
        return MASK
    if isinstance(value, str):
        return URL_CREDENTIALS.sub(MASK + "@", value)
    return value


def redact_text(text: str) -> str:
    """Free text (an error message, an event, SQL, code, a log) with every assigned secret's
    value masked: `password="x"` -> `password=*****`, `.option("password", "x")` ->
    `.option("password", *****)`; private key material -> `*****`; a URL's user and password,
    with or without its scheme -> `*****@`."""
    text = _ASSIGNED_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = _GIVEN_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = URL_CREDENTIALS.sub(MASK + "@", PRIVATE_KEY.sub(MASK, text))
    found = bare_credentials(text) if "@" in text else []
    for start, end in reversed(found):
        text = text[:start] + MASK + "@" + text[end:]
    return text


def redact_all(value: Any) -> Any:
    """Every text of a document (dicts and lists, any depth) through `redact_text`: a status
    row, what `inspect` read, as the page and `status` show them."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_all(v) for v in value]
    return value


def masked_conf_args(args: list[str]) -> list[str]:
    """A spark-submit argument list fit for printing: `--conf k=v` with secret k masked."""
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        out.append(f"{key}={MASK}" if sep and is_secret(key, value) else arg)
    return out
