"""The pages as the server answers them (no browser): what each shows of a store, that nothing
of a secret reaches them, and that a look that fails is said, never shown as no jobs."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from flink_sql_runner.errors import StoreError
from flink_sql_runner.watch.status import status_rows
from tests.ui.world import PageWorld


def text_of(body: bytes) -> str:
    """The page's text as a person reads it (tags dropped, entities decoded)."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body.decode())).split())


@pytest.fixture
def world(tmp_path: Path) -> PageWorld:
    return PageWorld(tmp_path)


def test_the_fleet_shows_every_job_as_status_does(world: PageWorld) -> None:
    world.job("alpha")
    world.job("beta", alive=False, **{"desired-state": "stopped"})
    pages = world.pages()
    answer = pages.answer("/")
    assert answer.status == 200
    shown = text_of(answer.body)
    assert "2 of 2 jobs" in shown
    rows = {r["name"]: r for r in status_rows(world.deployment, [])}
    for name in ("alpha", "beta"):
        row = re.search(rf'<tr data-job="{name}">(.*?)</tr>', answer.body.decode(), re.S)
        assert row, name
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.group(1), re.S)
        assert text_of(cells[2].encode()).startswith(rows[name]["health"]), cells
    document = json.loads(pages.answer("/status.json").body)
    assert [r["name"] for r in document["jobs"]] == ["alpha", "beta"]
    assert document["jobs"][0]["health"] == rows["alpha"]["health"] == "healthy"


def test_filters_and_search_narrow_the_fleet(world: PageWorld) -> None:
    world.job("alpha")  # 5000 offsets behind: lagging at the default threshold
    world.job("beta", alive=False)  # desired running, no run: down
    pages = world.pages()
    assert "1 of 2 jobs" in text_of(pages.answer("/?show=down").body)
    assert 'data-job="beta"' in pages.answer("/?show=down").body.decode()
    lagging = pages.answer("/?show=lagging").body.decode()
    assert 'data-job="alpha"' in lagging and 'data-job="beta"' not in lagging
    assert 'data-job="alpha"' not in world.pages(lag=10_000).answer("/?show=lagging").body.decode()
    found = pages.answer("/?q=ALP").body.decode()
    assert 'data-job="alpha"' in found and 'data-job="beta"' not in found
    assert "No job matches." in text_of(pages.answer("/?q=zeta").body)
    assert pages.answer("/?show=everything").status == 404


def test_a_look_that_fails_is_said_and_the_last_look_is_not_shown_as_now(
    world: PageWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.job("alpha")
    pages = world.pages()
    assert "1 of 1 jobs" in text_of(pages.answer("/").body)

    def fail() -> None:
        raise StoreError("the store did not answer: 503 Service Unavailable")

    monkeypatch.setattr(world.store, "snapshot", fail)
    shown = text_of(pages.answer("/").body)
    assert "The last look failed: the store did not answer: 503 Service Unavailable" in shown
    assert "not now" in shown and "1 of 1 jobs" in shown
    fresh = world.pages()  # nothing ever read: no fleet, and never "No jobs deployed."
    shown = text_of(fresh.answer("/").body)
    assert "Nothing could be read yet." in shown and "No jobs deployed." not in shown
    assert fresh.answer("/status.json").status == 503


def test_a_job_page_shows_its_run_query_and_sink(world: PageWorld) -> None:
    world.job("alpha")
    answer = world.pages().answer("/jobs/alpha")
    assert answer.status == 200
    shown = text_of(answer.body)
    assert "Job alpha" in shown and "healthy" in shown
    assert "SELECT id, ts FROM src WHERE id > 0" in shown
    assert "run-alpha" in shown
    assert str(world.tmp / "out" / "alpha") in shown  # its sink, with no claim yet
    assert "Nothing written yet." in shown


@pytest.mark.parametrize("path", ["/jobs/nobody", "/jobs/..%2F..%2Fetc%2Fpasswd", "/jobs/A B",
                                  "/nowhere", "/static/../pages.py", "/plans/1"])  # fmt: skip
def test_what_is_not_there_is_404(world: PageWorld, path: str) -> None:
    world.job("alpha")
    assert world.pages().answer(path).status == 404


def test_no_secret_reaches_a_page(world: PageWorld) -> None:
    secret = "hunter2-very-secret"
    world.job(
        "alpha",
        sql=f"SELECT id FROM src WHERE note <> 'password={secret}'",
        sparkProperties={"spark.hadoop.fs.s3a.secret.key": secret, "spark.x": "1"},
        description=f"token={secret}",
    )
    pages = world.pages()
    for path in ("/", "/jobs/alpha", "/lineage", "/status.json", "/tables/out"):
        answer = pages.answer(path)
        assert answer.status == 200, path
        assert secret not in answer.body.decode(), path


def test_the_lineage_links_each_job_and_table(world: PageWorld) -> None:
    world.job("alpha")
    upstream = {"format": "parquet", "options": {"path": str(world.tmp / "out" / "alpha")}}
    world.job("beta", tables={"src": upstream}, sql="SELECT id, ts FROM src")
    page = world.pages().answer("/lineage").body.decode()
    assert '<a href="/jobs/alpha"' in page and '<a href="/jobs/beta"' in page
    assert '<a href="/tables/src"' in page
    links = text_of(page.split('class="links"')[1].encode())
    assert "alpha" in links and "beta" in links
    focused = world.pages().answer("/lineage?job=beta").body.decode()
    assert '<a href="/jobs/alpha"' in focused  # what feeds it
    assert world.pages().answer("/lineage?job=nobody").status == 404
    table = text_of(world.pages().answer("/tables/src").body)
    assert "Read by" in table and "beta" in table


def test_a_plan_is_shown_as_the_pull_request_shows_it_its_lineage_drawn(
    world: PageWorld, tmp_path: Path
) -> None:
    from tests.render.test_plan_doc import shown  # the plans the Markdown's own tests render
    from tests.support.plans import CASES

    cases = [shown(make())[1] for make in CASES.values()]
    doc = next(d for d in cases if d.get("lineage") and d["lineage"]["jobs"])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    page = world.pages(plans=(path,)).answer("/plans/1").body.decode()
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="lineage"' in page
    assert "language-mermaid" not in page  # drawn, not left as code
    for job in doc["lineage"]["jobs"]:
        assert f'<a href="/jobs/{job["name"]}"' in page


@pytest.mark.parametrize(
    "content, said",
    [
        ("{not json", "not JSON"),
        ('{"jobs": [{"name": "<script>x</script>"}]}', "jobs[0]"),
        ("[]", "not a plan's document"),
    ],
)
def test_a_file_that_is_not_a_plan_says_why_in_one_line(
    world: PageWorld, tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content)
    page = world.pages(plans=(path,)).answer("/plans/1").body.decode()
    assert said in unescape(page) and "<script>x" not in page
