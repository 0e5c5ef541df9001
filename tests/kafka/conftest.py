"""The Kafka scenarios: one real broker and one Spark with its Kafka connector for the session
(tests/support/kafka_broker.py, tests/support/kafka_spark.py), a throwaway workspace per test
whose Spark processes are killed at teardown, pass or fail."""

from __future__ import annotations

import pytest

from tests.support.kafka_broker import kafka_broker  # noqa: F401 - a fixture
from tests.support.kafka_spark import kafka_env, kafka_spark  # noqa: F401 - fixtures
from tests.support.workspace import Workspace


@pytest.fixture
def kafka_workspace(tmp_path, kafka_env):  # noqa: F811 - the fixture above
    ws = Workspace(tmp_path, target_options=kafka_env.target_options)
    try:
        yield ws
    finally:
        ws.kill_all()
