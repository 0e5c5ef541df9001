"""A path means one thing wherever a run starts, on local Spark with real spark-submit.

A job reads a folder of JSON files and writes JSON, both written as relative paths and deployed
from the project's folder. Its driver is killed; `watch --once`, run from another folder (as a
service unit or another CI step would), restarts it, and the new run reads the next file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.workspace import Workspace, kill_driver, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def sink_ids(out: Path) -> set[int]:
    """The order ids the JSON sink holds (its part files; the job commits whole files)."""
    found: set[int] = set()
    for part in out.glob("part-*.json"):
        for line in part.read_text().splitlines():
            found.add(json.loads(line)["id"])
    return found


def drop(folder: Path, name: str, ids: range) -> None:
    (folder / f".{name}").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (folder / f".{name}").rename(folder / name)  # whole, as a file source wants it


def test_a_job_deployed_with_relative_paths_is_restarted_by_watch_from_another_folder(
    workspace: Workspace, tmp_path: Path
):
    ws = workspace
    orders, out = ws.root / "in" / "orders", ws.root / "out" / "orders"
    orders.mkdir(parents=True)
    drop(orders, "1.json", range(1, 4))
    ws.write_tables(
        [
            {"name": "orders", "format": "json", "options": {"path": "in/orders"},
             "schema": "id BIGINT"},
            {"name": "copy_out", "format": "json", "options": {"path": "out/orders"}},
        ]
    )  # fmt: skip
    ws.write_job("copy", **{"target-table": "copy_out", "sql": "SELECT id FROM orders"})

    deployed = ws.deploy()  # from the project's folder, ws.root
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    stored = ws.stored("copy")
    assert stored["tables"]["orders"]["options"]["path"] == str(orders)
    assert stored["tables"]["copy_out"]["options"]["path"] == str(out)
    wait_for(lambda: sink_ids(out) == {1, 2, 3}, timeout=60, what="the first file in the sink")

    first = wait_for(lambda: ws.record("copy"), timeout=30, what="the run's record")
    kill_driver(int(first["pid"]))
    wait_for(lambda: ws.record("copy") is None, timeout=30, what="the driver gone")
    drop(orders, "2.json", range(4, 6))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = ws.argv("watch", "--once", "--log-format", "json", paths=False)
    for option in ("--table-definition-path", "--template-file"):  # from the store alone
        at = argv.index(option)
        del argv[at : at + 2]
    watched = subprocess.run(  # noqa: S603 - a list, never a shell
        argv, cwd=elsewhere, capture_output=True, text=True, timeout=300, check=False
    )
    ws.runs("copy")  # its run is killed at teardown, pass or fail
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "PATH_NOT_FOUND" not in watched.stdout + watched.stderr
    second = wait_for(lambda: ws.record("copy"), timeout=30, what="the restarted run")
    assert second["pid"] != first["pid"]
    wait_for(lambda: sink_ids(out) == {1, 2, 3, 4, 5}, timeout=60, what="the next file read")
    assert not (elsewhere / "in").exists() and not (elsewhere / "out").exists()
