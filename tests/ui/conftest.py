"""What the page tests share: a page server over one job's world on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flink_sql_runner.ui.server import PageServer
from tests.ui.world import PageWorld


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PageServer]:
    """The pages of a world with one job, `alpha`, served on a free port; closed after."""
    world = PageWorld(tmp_path)
    world.job("alpha")
    running = PageServer(world.pages(), "127.0.0.1", 0)
    try:
        yield running
    finally:
        running.close()
