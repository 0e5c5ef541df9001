"""Two jobs that swap sinks, through the real command line on the local target: one `deploy`
changes them over, and no two runs ever write one folder.

spark-submit is a stand-in (a small Python program behaving like the runner: a prepared run waits
for its go, a run reports itself healthy in the status file and stops at the stop marker). Each
run claims the folder it writes with an exclusive create while it runs (a prepared run from its
go), so a second writer is seen the moment it starts.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.stand_in import AWAIT_GO
from tests.support.workspace import Workspace

FAKE_SUBMIT = """#!{python}
import json, os, sys, time, urllib.parse
args = sys.argv[1:]
doc = json.load(open(args[args.index("--manifest") + 1]))
{await_go}
await_go(doc)  # a prepared run claims its folder only once given its go
sink = doc["tables"][doc["target-table"]]["options"]["path"]
claims = os.environ["FAKE_CLAIMS"]
claim = os.path.join(claims, urllib.parse.quote(sink, safe=""))
line = f"{{doc['name']}} v{{doc['meta']['query-version']}} writes {{sink}}"
try:
    os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except FileExistsError:
    with open(os.path.join(claims, "..", "collisions"), "a") as log:
        log.write(line + "\\n")
with open(os.path.join(claims, "..", "starts"), "a") as log:
    log.write(line + "\\n")
status = {{"state": "active", "run-id": doc["run-id"], "batches": 1}}
with open(doc["status-file"] + ".tmp", "w") as handle:
    json.dump(status, handle)
os.replace(doc["status-file"] + ".tmp", doc["status-file"])
while not os.path.exists(doc["stop-marker"]):
    time.sleep(0.05)
os.unlink(claim)
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = tmp_path / "spark-submit"
    script.write_text(FAKE_SUBMIT.format(python=sys.executable, await_go=AWAIT_GO))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "claims").mkdir()
    monkeypatch.setenv("FAKE_CLAIMS", str(tmp_path / "claims"))
    monkeypatch.setenv("FLINK_SQL_RUNNER_SPARK_SUBMIT", str(script))
    workspace = Workspace(tmp_path / "project")
    try:
        yield workspace
    finally:
        workspace.cli("stop", "--all", paths=False)
        workspace.kill_all()


def jobs(ws: Workspace, a_writes: str, b_writes: str) -> None:
    for name, table in (("a", a_writes), ("b", b_writes)):
        ws.write_job(name, **{"target-table": table}, sql="SELECT value FROM ticks")


@pytest.mark.parametrize("parallelism", ["1", "2"])
def test_one_deploy_swaps_the_sinks_of_two_jobs(ws, tmp_path, parallelism) -> None:
    ws.write_tables(
        [{"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}}]
        + [
            {"name": f"out_{n}", "format": "parquet", "options": {"path": str(ws.root / n)}}
            for n in "xy"
        ]
    )
    jobs(ws, "out_x", "out_y")
    first = ws.cli("deploy")
    assert first.returncode == 0, first.stdout + first.stderr

    jobs(ws, "out_y", "out_x")
    plan = ws.cli("plan")
    # a's new run is prepared beside its old one; its go waits for b's stop.
    assert "starts once b has stopped: do: prepare v2 clean" in plan.stdout, plan.stdout
    assert "then go: the prepared v2 starts its query" in plan.stdout
    swap = ws.cli("deploy", "--parallelism", parallelism)
    assert swap.returncode == 0, swap.stdout + swap.stderr
    assert "ok   a: running v2 (clean)" in swap.stdout
    assert "ok   b: running v2 (clean)" in swap.stdout
    assert "Deploy finished: all jobs ok." in swap.stdout

    assert not (tmp_path / "collisions").exists(), (tmp_path / "collisions").read_text()
    assert (tmp_path / "starts").read_text().splitlines()[2:] == [
        f"a v2 writes {ws.root / 'y'}",
        f"b v2 writes {ws.root / 'x'}",
    ]
    assert sorted(os.listdir(tmp_path / "claims")) == sorted(
        p.replace("/", "%2F") for p in (str(ws.root / "x"), str(ws.root / "y"))
    )
    again = ws.cli("plan", "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr
