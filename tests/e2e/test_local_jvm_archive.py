"""A real local driver starts from `jvm-archive`'s class-data-sharing archive: the JVM spark-submit
starts maps the archive of its Spark and Java from the state folder, and the job runs as ever
(the archive's making and its keys: tests/targets/test_jvm_archive.py; what it saves:
docs/developers/benchmarks.md). The archive here is the suite's own (tests/support/jvm.py makes it
with
the same `make_archive`, once per machine), linked into the workspace's state folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flink_sql_runner.targets.jvm_archive import archive_path
from flink_sql_runner.targets.sparksubmit import find_spark_submit
from tests.support.jvm import archive
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def mapped(pid: int) -> set[str]:
    """The files a process has mapped into memory."""
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {line.split(maxsplit=5)[5] for line in lines if len(line.split(maxsplit=5)) == 6}


def test_a_local_driver_maps_the_archive_of_its_spark_and_java(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    made = archive()
    assert made is not None, "the suite could not make its archive: see its stderr"
    path = archive_path(ws.state / "jvm", find_spark_submit())
    assert path is not None and path.name == made.name, "one key, whatever the folder"
    path.parent.mkdir(parents=True)
    os.link(made, path)
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)  # only the product's option
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}},
            {"name": "out", "format": "json", "options": {"path": str(ws.root / "out")}},
        ]
    )
    ws.write_job("archived", **{"target-table": "out"}, sql="SELECT value FROM ticks")

    result = ws.deploy()

    assert result.returncode == 0, result.stdout + result.stderr
    record = ws.record("archived")
    assert record is not None
    driver = int(record["pid"])
    command = Path(f"/proc/{driver}/cmdline").read_bytes().split(b"\0")
    assert f"-XX:SharedArchiveFile={path}".encode() in command
    assert str(path) in mapped(driver), (
        "the JVM took the archive (Java ignores one that does not fit)"
    )
    wait_for(lambda: list((ws.root / "out").glob("*.json")), what="the job's first rows")
    assert ws.cli("stop", "archived", paths=False).returncode == 0
