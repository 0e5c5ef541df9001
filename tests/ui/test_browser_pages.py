"""The pages in a real browser (headless Chromium, tests/support/browser.py), served by a real
`flink-sql-runner ui` process over a store the real CLI deployed: the fleet against
`status --output json` of the same store, links followed from the fleet to a job, to its
lineage, to the job it feeds and back, a saved plan, and every page held to axe-core's WCAG
A/AA rules and to a keyboard focus order that shows where it is.

spark-submit is a stand-in (a small Python program behaving like the runner on the local
target: it reports its run healthy with a last batch, logs, claims its sink with the schema it
writes, and stops at the stop marker): what the pages read is what the runner writes, and
tests/e2e/test_local_watch.py reads the same pages of a real Spark run.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import (
    accessibility_violations,
    follow,
    open_page,
    page_problems,
    tab_order,
    visible_text,
)
from tests.support.stand_in import AWAIT_GO
from tests.support.workspace import Workspace

pytestmark = pytest.mark.browser

STAND_IN = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
doc = json.load(open(args[args.index("--manifest") + 1]))
{await_go}
await_go(doc)
name, version = doc["name"], doc["meta"]["query-version"]
print(f"stand-in: job {{name}} v{{version}} run {{doc['run-id']}} started", flush=True)
sink = doc["tables"][doc["target-table"]]["options"]["path"]
claims = os.path.join(sink, "_flink-sql-runner", "claims")
os.makedirs(claims, exist_ok=True)
order = len(os.listdir(claims)) + 1
with open(os.path.join(claims, f"{{order:012d}}-0.json"), "w") as handle:
    json.dump({{"checkpoint": doc["checkpoint-location"], "job": name, "query-version": version,
               "run-id": doc["run-id"], "claimed": "2026-11-29T12:00:00Z",
               "schema": [{{"name": "value", "type": "bigint", "nullable": True}}]}}, handle)
batch = 0
while not os.path.exists(doc["stop-marker"]):
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    status = {{"state": "active", "run-id": doc["run-id"], "heartbeat": batch,
               "updated": now[:19] + "Z",
               "last-batch": {{"id": batch, "timestamp": now, "input-rows-per-second": 4.0,
                              "processed-rows-per-second": 8.0, "duration-ms": 120}}}}
    with open(doc["status-file"] + ".tmp", "w") as handle:
        json.dump(status, handle)
    os.replace(doc["status-file"] + ".tmp", doc["status-file"])
    batch += 1
    time.sleep(0.2)
print(f"stand-in: job {{name}} v{{version}} stopped at its marker", flush=True)
"""


class Site:
    def __init__(self, ws: Workspace, url: str, status: dict[str, dict[str, Any]]):
        self.ws, self.url, self.status = ws, url, status


def _ui(ws: Workspace, *args: str) -> tuple[subprocess.Popen[str], str]:
    """`ui` started on any free port; its process and the address it printed."""
    argv = [sys.executable, "-m", "flink_sql_runner", "ui", "--state-dir", str(ws.state)]
    process = subprocess.Popen(
        [*argv, "--port", "0", *args],
        cwd=ws.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    assert " on http://127.0.0.1:" in line, line + (process.stderr.read() if not ready else "")
    return process, line.rsplit(" on ", 1)[1].strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("pages")
    script = tmp / "spark-submit"
    script.write_text(STAND_IN.format(python=sys.executable, await_go=AWAIT_GO))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    saved = os.environ.get("FLINK_SQL_RUNNER_SPARK_SUBMIT")
    os.environ["FLINK_SQL_RUNNER_SPARK_SUBMIT"] = str(script)
    ws = Workspace(tmp / "project")
    process = None
    try:
        ws.write_tables(
            [
                {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}},
                {
                    "name": "raw",
                    "format": "parquet",
                    "schema": "value BIGINT",
                    "options": {"path": str(ws.root / "raw")},
                },  # fmt: skip
                {
                    "name": "clean",
                    "format": "parquet",
                    "options": {"path": str(ws.root / "clean")},
                },  # fmt: skip
            ]
        )
        ws.write_job("ingest", **{"target-table": "raw"}, sql="SELECT value FROM ticks")
        ws.write_job("tidy", **{"target-table": "clean"}, sql="SELECT value FROM raw")
        for step in ("first", "query change"):
            deployed = ws.deploy()
            assert deployed.returncode == 0, step + deployed.stdout + deployed.stderr
            ws.write_job(
                "ingest", **{"target-table": "raw"}, sql="SELECT value FROM ticks WHERE value > 0"
            )
        ws.write_job(
            "tidy", **{"target-table": "clean"}, description="pending", sql="SELECT value FROM raw"
        )
        planned = ws.cli("plan", "--out", str(tmp / "plan.json"))
        assert planned.returncode in (0, 4), planned.stdout + planned.stderr
        shown = ws.cli("status", "--output", "json", paths=False)
        assert shown.returncode == 0, shown.stderr
        status = {row["name"]: row for row in json.loads(shown.stdout)["jobs"]}
        process, url = _ui(ws, "--plan", str(tmp / "plan.json"))
        yield Site(ws, url, status)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        ws.cli("stop", "--all", paths=False)
        ws.kill_all()
        if saved is None:
            os.environ.pop("FLINK_SQL_RUNNER_SPARK_SUBMIT", None)
        else:
            os.environ["FLINK_SQL_RUNNER_SPARK_SUBMIT"] = saved


def test_the_fleet_shows_what_status_says(site: Site) -> None:
    page = open_page(site.url)
    assert visible_text(page, "h1") == "Fleet"
    assert sorted(site.status) == ["ingest", "tidy"]
    for name, row in site.status.items():
        cells = page.locator(f'tr[data-job="{name}"] > *').all_inner_texts()
        assert cells[0] == name
        assert cells[1] == row["desired-state"]
        assert cells[2].splitlines()[0] == row["health"] == "healthy"
        assert cells[3].startswith("yes") and row["running"]
        assert cells[4] == f"v{row['stored-version']}"
    assert site.status["ingest"]["stored-version"] == 2
    assert page_problems(page) == []


def test_from_the_fleet_to_a_job_its_lineage_the_job_it_feeds_and_back(site: Site) -> None:
    page = open_page(site.url)
    assert follow(page, "ingest").endswith("/jobs/ingest")
    assert visible_text(page, "h1") == "Job ingest"
    history = page.locator("table.history > tbody > tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in history] == [
        ["v2", "stop-and-start-clean"],
        ["v1", "start-clean"],
    ], history
    diff = visible_text(page, "pre.diff")
    assert "-SELECT value FROM ticks" in diff and "+SELECT value FROM ticks WHERE value > 0" in diff
    assert "stand-in: job ingest v2 run" in visible_text(page, "pre.log")
    claims = page.locator("table.claims tbody tr").all_inner_texts()
    assert [c.split("\t")[1] for c in claims] == ["ingest v1", "ingest v2"], claims
    assert follow(page, "Its lineage").endswith("/lineage?job=ingest")
    assert follow(page, selector='svg a[href="/jobs/tidy"]').endswith("/jobs/tidy")
    assert visible_text(page, "h1") == "Job tidy"
    assert follow(page, selector='a[href="/tables/clean"]').endswith("/tables/clean")
    assert "tidy" in visible_text(page, "dl.facts")
    assert follow(page, "Fleet").rstrip("/") == site.url.rstrip("/")
    assert page_problems(page) == []


def test_a_saved_plan_shows_as_the_pull_request_does(site: Site) -> None:
    page = open_page(site.url + "plans")
    assert follow(page, selector='main a[href="/plans/1"]').endswith("/plans/1")
    shown = visible_text(page, "article.markdown")
    assert "tidy" in shown and "restart" in shown, shown
    assert page_problems(page) == []


@pytest.mark.parametrize(
    "path", ["", "?show=down", "jobs/ingest", "jobs/tidy", "lineage", "tables/raw", "plans/1"]
)
def test_every_page_meets_wcag_a_and_aa(site: Site, path: str) -> None:
    page = open_page(site.url + path)
    assert accessibility_violations(page) == []
    assert page_problems(page) == []


def test_the_keyboard_reaches_the_content_first_and_shows_its_focus(site: Site) -> None:
    page = open_page(site.url)
    order = tab_order(page, 10)
    assert [f.text for f in order[:5]] == [
        "Skip to content", "Fleet", "Lineage", "Plans", "Look again",
    ]  # fmt: skip
    assert [f.text.split()[0] for f in order[5:9]] == ["All", "Down", "Lagging", "Failing"]
    assert order[9].tag == "input"  # the search box, by its label
    assert all(f.visible_indicator for f in order), order
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent").split()[0] == "Failing"
    with page.expect_navigation():
        page.keyboard.press("Enter")  # followed by the keyboard alone
    assert page.url.endswith("?show=failing")
    assert page_problems(page) == []
