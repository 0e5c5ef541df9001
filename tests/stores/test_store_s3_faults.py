"""S3Store under faults: moto's server behind tests/support/faultproxy.py, all on 127.0.0.1.

Throttling (503 SlowDown, 429 Throttling), 500 InternalError and connections dropped mid-answer
are retried by botocore's standard mode with backoff, up to the attempt budget; then one clear
StoreError line. An upload cut mid-transfer never leaves a partial manifest: S3 (and moto) store
an object whole or not at all, and a reader sees the old manifest or the new one.

Backoff waits are what botocore chooses, recorded by `backoffs` and shortened a hundredfold so
the tests stay fast; nothing here asserts on wall-clock time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import FsrError, StoreError
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.s3 import S3Store, make_s3_client
from tests.support.cli import run_cli
from tests.support.faultproxy import FaultProxy
from tests.support.jobs import manifest

pytestmark = pytest.mark.s3

KEY = "jobs/job.yaml"
OPS = ("read", "write", "list")
THROTTLED = "the endpoint is throttling requests; gave up after 5 attempts"
FAULT_MESSAGES = {
    "slowdown": f"SlowDown (HTTP 503), {THROTTLED}",
    "internal": "InternalError (HTTP 500); gave up after 5 attempts",
    "throttle": f"Throttling (HTTP 429), {THROTTLED}",
}


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, float]]:
    """(attempt number, delay) for every backoff botocore's standard mode chooses; the test
    waits a hundredth of each."""
    from botocore.retries.standard import ExponentialBackoff

    chosen: list[tuple[int, float]] = []
    original = ExponentialBackoff.delay_amount

    def recorded(self: ExponentialBackoff, context: Any) -> float:
        delay = original(self, context)
        chosen.append((context.attempt_number, delay))
        return delay / 100

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", recorded)
    return chosen


def read_then_write(store: S3Store) -> None:
    store.write(manifest("job", 2), store.read("job").token)


def operations(bucket: str, store: S3Store) -> dict[str, tuple[str, str, Callable[[], Any], Any]]:
    """op -> (HTTP method, path, call, what it returns when it works)."""
    return {
        "read": ("GET", f"/{bucket}/{KEY}", lambda: store.read("job").manifest, manifest("job", 1)),
        # A deployer writes what it read: the write is conditional on that.
        "write": ("PUT", f"/{bucket}/{KEY}", lambda: read_then_write(store), None),
        "list": ("GET", f"/{bucket}", store.list_names, ["job"]),
    }


@pytest.fixture
def stored(s3_client: Any, s3_bucket: str) -> str:
    """A bucket holding jobs/job.yaml (version 1), written past the proxy."""
    S3Store(s3_bucket, "jobs/", s3_client).write(manifest("job", 1), None)
    return s3_bucket


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fault", [*FAULT_MESSAGES, "reset"])
def test_a_few_faults_are_retried_with_backoff(
    fault: str,
    op: str,
    stored: str,
    fault_proxy: FaultProxy,
    proxied_client: Any,
    backoffs: list[tuple[int, float]],
) -> None:
    method, path, call, result = operations(stored, S3Store(stored, "jobs/", proxied_client))[op]
    fault_proxy.inject(fault, times=2, method=method, path=path)
    assert call() == result
    if fault == "reset" and op == "write":
        # The first PUT landed and only its answer was lost; the retry, conditional on the
        # old ETag, is refused, and the store finds its own manifest there: done.
        assert [s.fault for s in fault_proxy.seen(method, path)] == [fault, fault]
        assert S3Store(stored, "jobs/", proxied_client).read("job").manifest == manifest("job", 2)
        return
    assert [s.fault for s in fault_proxy.seen(method, path)] == [fault, fault, None]
    if fault == "reset" and op == "read":
        # The answer's headers arrived whole; the store reads the cut body again itself.
        assert backoffs == []
    else:
        # botocore waited before each retry: a random share of min(base * 2 ** (n - 1), 20 s).
        assert [attempt for attempt, _ in backoffs] == [1, 2]
        assert all(0 <= delay <= min(2 ** (n - 1), 20) for n, delay in backoffs)


@pytest.mark.parametrize(
    ("fault", "op", "message"),
    [(fault, op, message) for fault, message in FAULT_MESSAGES.items() for op in OPS]
    + [
        ("reset", "read", "the connection broke while the answer was arriving"),
        (
            "reset",
            "list",
            "HTTP 500 without an S3 error code (or an answer cut short); gave up after 5 attempts",
        ),
    ],
)
def test_a_store_that_keeps_failing_gives_one_clear_line(
    fault: str,
    op: str,
    message: str,
    stored: str,
    fault_proxy: FaultProxy,
    proxied_client: Any,
    s3_env: dict[str, str],
    backoffs: list[tuple[int, float]],
) -> None:
    method, path, call, _ = operations(stored, S3Store(stored, "jobs/", proxied_client))[op]
    fault_proxy.inject(fault, times=100, method=method, path=path)
    with pytest.raises(StoreError) as raised:
        call()
    where = f"s3://{stored}/jobs/" + ("" if op == "list" else "job.yaml")
    expected = message.format(url=fault_proxy.url, bucket=stored)
    assert str(raised.value) == f"cannot {op} {where}: {expected}"
    assert len(fault_proxy.seen(method, path)) == 5  # the budget: 5 attempts in all
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in str(raised.value)
    assert s3_env["AWS_ACCESS_KEY_ID"] not in str(raised.value)


def test_aws_max_attempts_sets_the_budget(
    stored: str,
    fault_proxy: FaultProxy,
    s3_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    backoffs: list[tuple[int, float]],
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", fault_proxy.url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    fault_proxy.inject("slowdown", times=100)
    with pytest.raises(StoreError, match="SlowDown .*gave up after 2 attempts$"):
        S3Store(stored, "jobs/").read("job")
    assert len(fault_proxy.seen()) == 2


@pytest.mark.parametrize("value", ["zero", "0", "-3"])
def test_a_bad_aws_max_attempts_is_a_clear_error(
    value: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", value)
    with pytest.raises(FsrError) as raised:
        make_s3_client()
    assert str(raised.value) == (
        "cannot set up the S3 client: max attempts (AWS_MAX_ATTEMPTS or max_attempts) must be "
        f"a whole number of at least 1, got {value!r}"
    )


def test_standard_mode_does_not_depend_on_botocores_default(
    s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore up to 1.3x defaulted to "legacy" retries; the client asks for "standard"."""
    import botocore.configprovider
    import botocore.session

    legacy = ("retry_mode", "AWS_RETRY_MODE", "legacy", None)
    variables = botocore.configprovider.BOTOCORE_DEFAUT_SESSION_VARIABLES
    monkeypatch.setitem(variables, "retry_mode", legacy)
    assert botocore.session.Session().get_config_variable("retry_mode") == "legacy"
    assert make_s3_client().meta.config.retries == {"mode": "standard", "total_max_attempts": 5}


def test_the_profile_can_choose_mode_and_attempts(
    s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "aws-config"
    config.write_text("[default]\nretry_mode = adaptive\nmax_attempts = 7\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert make_s3_client().meta.config.retries == {"mode": "adaptive", "total_max_attempts": 7}


def test_a_slow_answer_is_given_up_on_and_asked_again(
    stored: str, fault_proxy: FaultProxy, s3_session: Any, backoffs: list[tuple[int, float]]
) -> None:
    from botocore.config import Config

    retries = {"mode": "standard", "total_max_attempts": 5}
    config = Config(retries=retries, read_timeout=2, connect_timeout=5)
    client = s3_session.client("s3", endpoint_url=fault_proxy.url, config=config)
    fault_proxy.inject("delay", times=1, method="GET", seconds=30)
    assert S3Store(stored, "jobs/", client).read("job").manifest == manifest("job", 1)
    assert [s.fault for s in fault_proxy.seen("GET")][:2] == ["delay", None]


def test_a_cut_upload_never_leaves_a_partial_manifest(
    stored: str,
    fault_proxy: FaultProxy,
    proxied_client: Any,
    s3_client: Any,
    backoffs: list[tuple[int, float]],
) -> None:
    old = manifest("job", 1)
    new = manifest("job", 2, description="v2 " + "x" * 200_000)  # large enough to cut
    writer = S3Store(stored, "jobs/", proxied_client)
    reader = S3Store(stored, "jobs/", s3_client)
    seen: list[StoredManifest | None | str] = []
    done = threading.Event()

    def read_until_done() -> None:
        while True:
            last = done.is_set()
            try:
                seen.append(reader.read("job").manifest)
            except StoreError as exc:  # e.g. a manifest that does not parse: a partial one
                seen.append(str(exc))
            if last:
                return

    watcher = threading.Thread(target=read_until_done)
    watcher.start()
    try:
        # Every attempt cut: the write fails, and the old manifest stays, whole.
        fault_proxy.inject("cut-request", times=100, method="PUT")
        token = writer.read("job").token
        with pytest.raises(StoreError, match="^cannot write .*jobs/job.yaml: Connection was"):
            writer.write(new, token)
        cuts = fault_proxy.seen("PUT")
        assert len(cuts) == 5
        assert all(0 < s.forwarded_bytes < s.body_bytes for s in cuts)  # moto got part of each
        assert reader.read("job").manifest == old
        # Two attempts cut, the third whole: the new manifest, whole.
        fault_proxy.clear()
        fault_proxy.inject("cut-request", times=2, method="PUT")
        writer.write(new, token)
        assert [s.fault for s in fault_proxy.seen("PUT")] == ["cut-request", "cut-request", None]
    finally:
        done.set()
        watcher.join()
    assert seen[-1] == new
    assert [m for m in seen if m != old and m != new] == []  # nothing else, ever
    assert old in seen


def test_plan_exits_1_with_one_line_when_the_store_keeps_failing(
    stored: str, fault_proxy: FaultProxy, s3_env: dict[str, str], tmp_path: Path
) -> None:
    """StoreError is an FsrError: exit code 1 (README, Exit codes), one line, no traceback."""
    fault_proxy.inject("internal", times=100)
    env = {**s3_env, "AWS_ENDPOINT_URL": fault_proxy.url, "AWS_MAX_ATTEMPTS": "3"}
    result = run_cli(
        "plan",
        "--path", "examples/queries",
        "--table-definition-path", "examples/tables",
        "--state-dir", str(tmp_path / "state"),
        "--manifest-store", f"s3://{stored}/jobs/",
        env=env,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: cannot list s3://{stored}/jobs/: InternalError (HTTP 500); "
        "gave up after 3 attempts"
    ]
    # Read ahead (gather/store_ahead.py): the store's index, tried 3 times and given up in
    # silence (the listing stands in for it), and the listing, tried 3 times; then the plan
    # stops before asking anything else.
    attempts = Counter(seen.path for seen in fault_proxy.seen())
    assert attempts == {f"/{stored}": 3, f"/{stored}/jobs/_index.json": 3}
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in result.stderr


def test_the_proxy_stops_every_connection_and_its_port(s3_endpoint: str) -> None:
    import socket

    proxy = FaultProxy(s3_endpoint).start()
    port = int(proxy.url.rsplit(":", 1)[1])
    idle = socket.create_connection(("127.0.0.1", port), timeout=10)  # a keep-alive client
    proxy.inject("delay", seconds=60)
    proxy.stop()
    try:
        assert idle.recv(1) == b""  # closed by the proxy
    except ConnectionResetError:
        pass  # closed by the proxy, too
    finally:
        idle.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
