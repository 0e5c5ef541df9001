"""The YARN scenarios: one real Hadoop for the session (a MiniDFSCluster and a MiniYARNCluster,
tests/support/hadoop_cluster.py), a throwaway workspace per test whose YARN applications and
local processes are stopped at teardown, pass or fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hadoop_cluster import Hadoop
from tests.support.yarn_cli import YarnWorkspace


@pytest.fixture
def yarn_workspace(tmp_path: Path, hadoop_cluster: Hadoop) -> Iterator[YarnWorkspace]:
    ws = YarnWorkspace(tmp_path, hadoop_cluster)
    try:
        yield ws
    finally:
        ws.clean_up()
