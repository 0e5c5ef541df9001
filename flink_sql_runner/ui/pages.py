"""The pages, by path: what each shows, made with the templates of this folder.

    /                   the fleet (?show=all|down|lagging|failing, ?q=part of a name)
    /jobs/NAME          a job
    /lineage            the job-table graph (?job=NAME: that job, what feeds it and what it feeds)
    /tables/NAME        a table: where it is, who writes and who reads it
    /plans, /plans/N    the plans given with --plan, each as the pull request's Markdown shows it
    /status.json        the fleet as `status --output json` prints it
    /static/FILE        the style sheet

Everything is read; nothing is written, started or stopped from here. Text from manifests,
logs and plans goes through the templates' autoescape (and the Markdown of a plan through
render/plan_html.py, which lets no tag of the document's own through).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote

from jinja2 import Environment, PackageLoader, select_autoescape

from flink_sql_runner import __version__
from flink_sql_runner.host import runtime
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.read.names import job_name_problem
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.render.status import status_json
from flink_sql_runner.ui.fleet import DEFAULT_LAG, FILTER_NAMES, FILTERS, Fleet, counts, shown_rows
from flink_sql_runner.ui.graph_svg import lineage_drawing, lineage_svg
from flink_sql_runner.ui.job import job_page
from flink_sql_runner.ui.plans import plan_page

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment

STATIC = {"style.css": "text/css; charset=utf-8"}


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("flink_sql_runner.ui", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["quote"] = lambda text: quote(str(text), safe="")
    env.filters["ago"] = _ago
    env.filters["masked"] = redact_text
    return env


def _ago(text: Any) -> str:
    """An RFC 3339 UTC time as people read it next to now: `12 s ago`, `3 min ago`."""
    try:
        at = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return ""
    seconds = (datetime.now(timezone.utc) - at).total_seconds()
    if seconds < 0:
        return "in the future (clocks differ)"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


class Pages:
    """The page server's answers, for `ui` and for `watch --metrics-port`."""

    def __init__(
        self,
        deployment: Deployment,
        plans: tuple[Path, ...] = (),
        lag: int = DEFAULT_LAG,
        fleet: Fleet | None = None,
        extra: dict[str, Callable[[], Response]] | None = None,
        pages: bool = True,
    ) -> None:
        self.deployment = deployment
        self.fleet = fleet or Fleet(deployment)
        self.plans = plans
        self.lag = lag
        #: More paths, e.g. `/metrics` when `watch` serves the pages.
        self.extra = extra or {}
        #: False: only the `extra` paths are answered (watch's metrics off loopback, unasked).
        self.pages = pages
        #: Each job's page as last made, by name, with when (runtime.monotonic): given again
        #: for as long as the fleet's look is (`Fleet.reuse_for`).
        self._jobs: dict[str, tuple[float, dict[str, Any]]] = {}
        self._jobs_lock = runtime.lock()
        self.env = _environment()
        self.static = {
            name: resources.files("flink_sql_runner.ui").joinpath("static", name).read_bytes()
            for name in STATIC
        }

    def answer(self, target: str) -> Response:
        """The response to a GET of `target` (a path with its query)."""
        path, _, query = target.partition("?")
        args = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        path = unquote(path)
        if path in self.extra:
            return self.extra[path]()
        if not self.pages:
            return Response(404, "text/plain; charset=utf-8", b"only /metrics is served here\n")
        if path == "/":
            return self._fleet(args)
        if path == "/status.json":
            seen = self.fleet.seen()
            if seen.failed is not None or seen.look is None:  # never the last look as now
                said = json.dumps({"error": f"the fleet could not be read now: {seen.failed}"})
                return Response(503, "application/json", said.encode())
            return Response(200, "application/json", status_json(seen.look.rows).encode())
        if path.startswith("/jobs/"):
            return self._job(path.removeprefix("/jobs/"))
        if path == "/lineage":
            return self._lineage(args.get("job"))
        if path.startswith("/tables/"):
            return self._table(path.removeprefix("/tables/"))
        if path == "/plans":
            return self._page("plans.html", title="Plans", plans=self._plan_list())
        if path.startswith("/plans/"):
            return self._plan(path.removeprefix("/plans/"))
        if path.startswith("/static/") and path.removeprefix("/static/") in self.static:
            name = path.removeprefix("/static/")
            return Response(200, STATIC[name], self.static[name], {"Cache-Control": "max-age=300"})
        return self._error(404, f"no page at {path}")

    def _page(self, template: str, status: int = 200, **values: Any) -> Response:
        html = self.env.get_template(template).render(
            release=__version__,
            store=redact_text(self.deployment.store.location),
            target=self.deployment.target.name,
            plans_given=bool(self.plans),
            **values,
        )
        return Response(status, "text/html; charset=utf-8", html.encode())

    def _error(self, status: int, message: str) -> Response:
        return self._page("error.html", status, title="Not found" if status == 404 else "Error",
                          code=status, message=message)  # fmt: skip

    def _fleet(self, args: dict[str, str]) -> Response:
        which = args.get("show", "all")
        if which not in FILTER_NAMES:
            return self._error(404, f"no filter {which!r}: one of {', '.join(FILTER_NAMES)}")
        search = args.get("q", "")
        seen = self.fleet.seen()
        rows = seen.look.rows if seen.look is not None else []
        return self._page(
            "fleet.html",
            title="Fleet",
            seen=seen,
            rows=shown_rows(rows, which, search, self.lag),
            counts=counts(rows, self.lag),
            filters=FILTERS,
            which=which,
            search=search,
            lag=self.lag,
        )

    def _job(self, name: str) -> Response:
        if job_name_problem(name) is not None:
            return self._error(404, "no such job: not a job name")
        seen = self.fleet.seen()
        page = self._job_page(seen, name)
        if page is None:
            return self._error(404, f"no job {name} in {self.deployment.store.location}")
        return self._page("job.html", title=name, seen=seen, job=page, lag=self.lag)

    def _job_page(self, seen: Any, name: str) -> dict[str, Any] | None:
        """The job's page, made again at most once per `Fleet.reuse_for` seconds: a page left
        reloading, or ten tabs, read its history, checkpoint, log and claims once."""
        with self._jobs_lock:
            kept = self._jobs.get(name)
            now = runtime.monotonic()
            if kept is not None and now - kept[0] < self.fleet.reuse_for:
                return kept[1]
            page = job_page(self.deployment, seen, name)
            if page is not None:
                self._jobs[name] = (now, page)
            return page

    def _lineage(self, focus: str | None) -> Response:
        seen = self.fleet.seen()
        if seen.look is None:
            return self._error(503, f"the fleet could not be read: {seen.failed}")
        look = seen.look
        lineage = build_lineage([], stored=look.manifests)
        if focus is not None and focus not in lineage.jobs:
            return self._error(404, f"no job {focus} in the lineage")
        health = {name: row.get("health") for name, row in look.by_name.items()}
        drawing = lineage_drawing(lineage, health, "/jobs/{}", "/tables/{}", focus)
        title = f"Lineage of {focus}" if focus else "Lineage of every stored job"
        return self._page(
            "lineage.html",
            title=title,
            seen=seen,
            focus=focus,
            svg=lineage_svg(drawing, title) if not drawing.empty else "",
            links=[
                lk for lk in lineage.links if focus is None or focus in (lk.producer, lk.consumer)
            ],  # fmt: skip
            cycles=lineage.cycles,
        )

    def _table(self, name: str) -> Response:
        seen = self.fleet.seen()
        if seen.look is None:
            return self._error(503, f"the fleet could not be read: {seen.failed}")
        lineage = build_lineage([], stored=seen.look.manifests)
        table = lineage.tables.get(name)
        if table is None:
            return self._error(404, f"no table {name} in the lineage of the stored jobs")
        return self._page("table.html", title=name, seen=seen, table=table)

    def _plan_list(self) -> list[dict[str, Any]]:
        return [{"index": i, "path": str(p)} for i, p in enumerate(self.plans, 1)]

    def _plan(self, index: str) -> Response:
        if not index.isdigit() or not 1 <= int(index) <= len(self.plans):
            return self._error(404, f"no plan {index}: the plans are those given with --plan")
        path = self.plans[int(index) - 1]
        return self._page("plan.html", title=f"Plan {path.name}", plan=plan_page(path))
