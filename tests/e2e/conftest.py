"""The throwaway workspace of an end-to-end test; every Spark process it started is killed at
teardown, pass or fail."""

from __future__ import annotations

import pytest

from tests.support.workspace import Workspace


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace(tmp_path)
    try:
        yield ws
    finally:
        ws.kill_all()
