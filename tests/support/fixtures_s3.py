"""S3 fixtures over moto's server. Register with `pytest_plugins = ["tests.support.fixtures_s3"]`.

- `s3_endpoint` (session): URL of moto's S3 server on 127.0.0.1, stopped after the session.
- `s3_env`: dummy credentials, region and AWS_ENDPOINT_URL in the environment for one test;
  isolated from ~/.aws.
- `s3_session` (session): a boto3 session with the dummy credentials, blind to ~/.aws and the
  environment; it keeps botocore's models loaded, so a client costs ~5 ms instead of ~100 ms.
- `s3_client`: a new client on moto's server for one test (event hooks a test registers on it do
  not leak), with the retry settings of `make_s3_client()`. Tests of how `make_s3_client()` reads
  the environment use `s3_env` and call it themselves.
- `s3_bucket`: a new, empty bucket (unique name) for one test.
- `fault_proxy`: a `tests.support.faultproxy.FaultProxy` in front of moto's server for one test.
- `proxied_client`: a new client like `s3_client` that talks to moto through `fault_proxy`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.faultproxy import FaultProxy
from tests.support.s3server import CLEARED_ENV, TEST_ENV, moto_s3_server


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with moto_s3_server() as url:
        yield url


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    for name in CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    env = dict(TEST_ENV, AWS_ENDPOINT_URL=s3_endpoint)
    env["AWS_CONFIG_FILE"] = str(tmp_path / "no-aws-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "no-aws-credentials")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture(scope="session")
def s3_session() -> Any:
    import boto3
    import botocore.session

    core = botocore.session.Session()
    core.set_config_variable("config_file", os.devnull)
    core.set_config_variable("credentials_file", os.devnull)
    return boto3.session.Session(
        aws_access_key_id=TEST_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=TEST_ENV["AWS_SECRET_ACCESS_KEY"],
        region_name=TEST_ENV["AWS_DEFAULT_REGION"],
        botocore_session=core,
    )


def _client(session: Any, endpoint: str) -> Any:
    from botocore.config import Config

    retries = {"mode": "standard", "total_max_attempts": 5}
    config = Config(retries=retries, max_pool_connections=64)
    return session.client("s3", endpoint_url=endpoint, config=config)


@pytest.fixture
def s3_client(s3_endpoint: str, s3_session: Any) -> Any:
    return _client(s3_session, s3_endpoint)


@pytest.fixture
def fault_proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    proxy = FaultProxy(s3_endpoint).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def proxied_client(fault_proxy: FaultProxy, s3_session: Any) -> Any:
    return _client(s3_session, fault_proxy.url)


@pytest.fixture
def s3_bucket(s3_client: Any) -> str:
    name = f"test-{uuid.uuid4().hex[:20]}"
    s3_client.create_bucket(Bucket=name)
    return name
