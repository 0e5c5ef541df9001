"""Which properties are secret: Spark's own redaction rule on keys, the credentials it misses,
and values that assign a secret."""

from __future__ import annotations

import pytest

from flink_sql_runner.read.secrets import MASK, is_secret, mask, masked_conf_args, redact_text

SECRET = [
    ("spark.hadoop.fs.s3a.secret.key", "x"),
    ("spark.hadoop.fs.s3a.access.key", "x"),  # Spark's `access[.]?key`
    ("spark.hadoop.fs.s3a.accesskey", "x"),
    ("my.api.TOKEN", "x"),
    ("spark.kafka.sasl.jaas.config", "x"),
    ("spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net", "x"),
    ("spark.hadoop.google.cloud.auth.service.account.private.key", "x"),
    ("spark.hadoop.fs.azure.sas.container.acct.blob.core.windows.net", "x"),
    ("spark.db.passwd", "x"),
    ("spark.some.credentials.file", "x"),
    ("spark.foo.url", "jdbc:postgresql://h/db?user=u&password=hunter2"),
    ("spark.login", 'PlainLoginModule required username="u" password="p";'),
]
PLAIN = [
    ("spark.sql.shuffle.partitions", "4"),
    ("spark.jars.packages", "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.1"),
    ("spark.kafka.sasl.mechanism", "PLAIN"),
    ("path", "s3a://bucket/tokens/2026/"),
    ("spark.secretary.name", None),
]


@pytest.mark.parametrize("key, value", SECRET)
def test_secret(key, value):
    assert is_secret(key, value)
    assert mask({key: value}) == {key: MASK}
    assert masked_conf_args(["--conf", f"{key}={value}"]) == ["--conf", f"{key}={MASK}"]


@pytest.mark.parametrize("key, value", PLAIN[:4])
def test_not_secret(key, value):
    assert not is_secret(key, value)
    assert mask({key: value}) == {key: value}


def test_a_key_that_merely_contains_the_word_is_secret_as_spark_would_have_it():
    assert is_secret(*PLAIN[4]), "Spark's rule matches `secret` anywhere in a key: so does this"


def test_a_secret_mapping_is_masked_whole():
    assert mask({"credentials": {"user": "u", "key": "k"}}) == {"credentials": MASK}


PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"


def test_private_key_material_is_a_secret_under_any_key_and_in_any_text():
    """Issue 54's finding 7: Kafka's `ssl.keystore.key` (a PEM private key) was not a
    credential key, so it was printed in plans, saved plans and the pull request's comment."""
    from flink_sql_runner.read.secrets import is_secret, mask, redact_text

    assert is_secret("kafka.ssl.keystore.key")
    assert is_secret("kafka.some.option", PEM_KEY)
    assert mask({"options": {"kafka.ssl.keystore.key": PEM_KEY}}) == {
        "options": {"kafka.ssl.keystore.key": "*****"}
    }
    assert mask({"pem": PEM_KEY}) == {"pem": "*****"}
    said = redact_text(f"cannot read {PEM_KEY} at all")
    assert "MIIEv" not in said and said.startswith("cannot read ") and said.endswith(" at all")
    assert not is_secret("kafka.ssl.truststore.type", "PEM")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (
            "mongodb://svc:S3cr3tPassw0rd@db.internal:27017/orders",
            "mongodb://*****@db.internal:27017/orders",
        ),
        ("https://ghp_token123@github.com/o/r.git", "https://*****@github.com/o/r.git"),
        ("s3a://bucket/path@2024", "s3a://bucket/path@2024"),
    ],
)
def test_a_urls_credentials_are_masked_anywhere(value: str, shown: str) -> None:
    """Review of issue 54, R4: a table option's URL with a password went unmasked into plans,
    saved plans and the pull request's comment."""
    assert mask({"uri": value}) == {"uri": shown}
    assert redact_text(f"cannot reach {value}: refused") == f"cannot reach {shown}: refused"


@pytest.mark.parametrize(
    "value",
    [
        "password=x", "PASSWORD: x", "a.Passwd=1", "x;token=abc", "access.key=k", "AccessKey:k",
        "'password', 'x'", "password 'x'", "secret", "tokens", "path/to/data", "SELECT 1",
        "ſecret=x", "paſſword=x", "ACCESS\u212aEY=x", "tök=1", "",  # Unicode folds as re does
    ],
)  # fmt: skip
def test_a_value_assigns_a_secret_exactly_as_the_expression_says(value: str) -> None:
    """`assigns_secret`'s shortcut (no word of the expression in an ASCII text) never says
    otherwise than the expression itself, which the masking and the load cache follow."""
    from flink_sql_runner.read.secrets import SECRET_IN_VALUE, assigns_secret

    assert assigns_secret(value) == bool(SECRET_IN_VALUE.search(value))


# -- a review's finding: a value naming a password is not a secret given ----------------------


def test_a_query_naming_a_value_with_password_in_it_is_shown_in_the_plan() -> None:
    """A value naming a password (`'reset_password'`) is no key given a secret: the whole
    SQL masked on both sides would show the approver no query."""
    from flink_sql_runner.render.markdown import _change_row

    old = "SELECT * FROM events WHERE kind IN ('reset_password', 'login')"
    new = "SELECT * FROM events WHERE kind IN ('reset_password', 'logout')"
    assert mask(new, "sql") == new
    row, _ = _change_row({"field": "sql", "old": old, "new": new, "kind": "query", "why": ""})
    assert "*****" not in row


def test_bare_credentials_are_found_where_the_expression_finds_them() -> None:
    """`bare_credentials` finds in one pass what `BARE_CREDENTIALS` finds (whose search takes
    the square of a line's length: a job file's 1 MB line of `!a:` after an `@` was about 20
    minutes of a plan, 0.4 s now): 15,000 random texts of the characters that decide it."""
    import random

    from flink_sql_runner.read.secrets import BARE_CREDENTIALS, bare_credentials

    rng = random.Random(57)
    alphabet = "a:!@/ .-_x'\"<>é"
    for _ in range(15_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        spans = [(m.start(), m.end()) for m in BARE_CREDENTIALS.finditer(text)]
        assert bare_credentials(text) == spans, text
    assert redact_text("see key:secret@bucket/x") == f"see {MASK}@bucket/x"
