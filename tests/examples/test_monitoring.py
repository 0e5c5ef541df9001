"""The monitoring examples (examples/monitoring/): the Grafana dashboard and the Prometheus
alerting rules read only metrics `watch` serves, by labels they have; the rules and every query
of the dashboard are PromQL that promtool takes, and the alerts fire, and do not, as their unit
tests say (`pytest -m promtool`: Debian's prometheus package brings promtool)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from flink_sql_runner.model.runs import Run
from flink_sql_runner.watch.health import Health, State
from flink_sql_runner.watch.metrics import Metrics
from tests.support.cli import REPO

MONITORING = REPO / "examples" / "monitoring"
DASHBOARD = MONITORING / "grafana-dashboard.json"
RULES = MONITORING / "alert-rules.yaml"
RULE_TESTS = MONITORING / "alert-rules.test.yaml"
PROMETHEUS = MONITORING / "prometheus.yml"

#: The scrape job the rules and the dashboard expect (prometheus.yml).
SCRAPE_JOB = "flink-sql-runner-watch"
#: Labels the scrape gives every series: `instance`, and `job` where the metric has none.
TARGET_LABELS = frozenset({"instance", "job"})
#: Prometheus's own series of a scrape: its labels are the target's.
SCRAPE_SERIES = {"up": TARGET_LABELS}
#: Every query about a job reads the leading watcher's series only: nothing another watcher
#: served (one that stands by, one that led before) counts twice.
LEADER_ONLY = "and on(instance) (flink_sql_runner_watch_leader == 1)"
#: What Grafana puts in place of the dashboard's variables when it runs a query (the job
#: variable's All is its allValue).
GRAFANA_VARIABLES = {"job": ".*", "watch_job": SCRAPE_JOB, "__rate_interval": "1m"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
STATES = {state.value for state in State}

# -- what watch serves ----------------------------------------------------------------------

#: A batch as the runner reports it: every batch metric gets a value.
BATCH = {
    "id": 41,
    "timestamp": "2026-11-23T13:14:39.412Z",
    "num-input-rows": 12,
    "input-rows-per-second": 1.5,
    "processed-rows-per-second": 2.5,
    "duration-ms": 400,
    "offsets-behind-latest": 5000.0,
}
#: The states in which a job's one run is up.
RUNNING = {State.HEALTHY, State.STARTING, State.RESTARTING, State.STALLED}


def health(state: State, name: str, batch: dict[str, Any] | None = None) -> Health:
    run = Run(name, 1, f"run-{name}") if state in RUNNING else None
    return Health(state, "", run, {"run-id": f"run-{name}", "last-batch": batch or BATCH})


def exposition(metrics: Metrics) -> list[tuple[str, dict[str, str], float]]:
    """What `/metrics` serves, as (name, labels, value) samples."""
    text = generate_latest(metrics.registry).decode()
    return [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


@dataclass(frozen=True)
class Served:
    labels: dict[str, frozenset[str]]  # metric -> the labels it has, once scraped
    states: frozenset[str]  # the values of flink_sql_runner_job_state's `state`


def served() -> Served:
    """Every metric `watch` serves, read from its exposition after it observed one job in each
    state and led; with the labels the scrape adds."""
    metrics = Metrics()
    for state in State:
        metrics.observe(f"job-{state.value}", health(state, f"job-{state.value}"), 2)
    metrics.leader.set(1)
    labels: dict[str, set[str]] = {}
    states = set()
    for name, sample_labels, _ in exposition(metrics):
        labels.setdefault(name, set(TARGET_LABELS)).update(sample_labels)
        states.add(sample_labels.get("state"))
    labels.update({name: set(extra) for name, extra in SCRAPE_SERIES.items()})
    return Served({k: frozenset(v) for k, v in labels.items()}, frozenset(states - {None}))


SERVED = served()


def test_watch_serves_every_metric_of_its_reference_with_every_state() -> None:
    """What the checks below compare with is all of it: a metric missing from the exposition
    (a gauge that got no value) would make a query of it look wrong."""
    names = set(
        re.findall(
            r"`(flink_sql_runner_\w+)`",
            (REPO / "docs" / "reference" / "events-and-metrics.md").read_text(),
        )
    )
    assert len(names) == 10
    assert names == set(SERVED.labels) - set(SCRAPE_SERIES)
    assert SERVED.states == STATES
    assert SERVED.labels["flink_sql_runner_job_state"] == {"instance", "job", "state"}
    assert SERVED.labels["flink_sql_runner_watch_leader"] == TARGET_LABELS


# -- PromQL, read ---------------------------------------------------------------------------

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile"}  # fmt: skip
FUNCTIONS = AGGREGATIONS | {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp",
    "clamp_max", "clamp_min", "count_over_time", "day_of_month", "day_of_week", "day_of_year",
    "days_in_month", "delta", "deriv", "exp", "floor", "histogram_quantile", "holt_winters",
    "hour", "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time",
    "ln", "log10", "log2", "max_over_time", "min_over_time", "minute", "month",
    "predict_linear", "present_over_time", "quantile_over_time", "rate", "resets", "round",
    "scalar", "sgn", "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
    "sum_over_time", "time", "timestamp", "vector", "year",
}  # fmt: skip
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OPERATORS = {"and", "or", "unless", "bool", "offset", "atan2"}
TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"""
    r"|(?P<range>\[[^\]]*\])|(?P<number>\d+(?:\.\d+)?(?:[smhdwy]|ms)?)"
    r"|(?P<name>[a-zA-Z_:][\w:]*)|(?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){},])"
)


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, op, value)


@dataclass(frozen=True)
class Read:
    """What one PromQL expression reads."""

    selectors: tuple[Selector, ...]
    functions: frozenset[str]
    grouping: frozenset[str]  # labels of by, without, on, ignoring, group_left/right


def tokens(expr: str) -> list[tuple[str, str]]:
    found, at = [], 0
    while at < len(expr):
        match = TOKEN.match(expr, at)
        if match is None:
            raise ValueError(f"cannot read {expr[at : at + 20]!r} in {expr!r}")
        if match.lastgroup != "space":
            found.append((match.lastgroup or "", match.group()))
        at = match.end()
    return found


def read(expr: str) -> Read:
    """The metrics (with their label matchers), functions and grouping labels of `expr`."""
    toks = tokens(expr)
    selectors, functions, grouping = [], set(), set()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind != "name":
            i += 1
            continue
        if text in GROUPING:
            i += 1
            if following == "(":
                end = next(j for j in range(i, len(toks)) if toks[j][1] == ")")
                grouping |= {t for k, t in toks[i + 1 : end] if k == "name"}
                i = end + 1
            continue
        if text in OPERATORS:
            i += 1
            continue
        if following == "(" or (text in AGGREGATIONS and following in ("by", "without")):
            functions.add(text)
            i += 1
            continue
        matchers = []
        i += 1
        if i < len(toks) and toks[i][1] == "{":
            end = next(j for j in range(i, len(toks)) if toks[j][1] == "}")
            inside = [t for t in toks[i + 1 : end] if t[1] != ","]
            if len(inside) % 3:
                raise ValueError(f"cannot read the matchers of {text} in {expr!r}")
            for at in range(0, len(inside), 3):
                (_, label), (_, op), (_, value) = inside[at : at + 3]
                matchers.append((label, op, value[1:-1]))
            i = end + 1
        selectors.append(Selector(text, tuple(matchers)))
    return Read(tuple(selectors), frozenset(functions), frozenset(grouping))


def problems(expr: str) -> list[str]:
    """What in `expr` is not served: a metric, a label a metric does not have, a `state` that is
    none of State's, a function PromQL does not have, a grouping label no metric of it has."""
    found = []
    seen = read(expr)
    for name in sorted(seen.functions - FUNCTIONS):
        found.append(f"no PromQL function {name}")
    labels_of_expr = set(TARGET_LABELS)
    for selector in seen.selectors:
        labels = SERVED.labels.get(selector.metric)
        if labels is None:
            found.append(f"watch serves no metric {selector.metric}")
            continue
        labels_of_expr |= labels
        for label, op, value in selector.matchers:
            if label not in labels:
                found.append(f"{selector.metric} has no label {label} (it has {sorted(labels)})")
            elif label == "state":
                values = value.split("|") if op in ("=~", "!~") else [value]
                found += [f"no state {v!r}" for v in values if v not in STATES]
    found += [f"no metric has the label {g}" for g in sorted(seen.grouping - labels_of_expr)]
    return found


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("flink_sql_runner_job_upp", "watch serves no metric flink_sql_runner_job_upp"),
        ('flink_sql_runner_job_up{state="down"}', "flink_sql_runner_job_up has no label state"),
        ('flink_sql_runner_job_state{state=~"down|runing"}', "no state 'runing'"),
        ("max by (jobs) (flink_sql_runner_job_up)", "no metric has the label jobs"),
        ("maxx(flink_sql_runner_job_up)", "no PromQL function maxx"),
        ('up{job="w"} and on(instance) flink_sql_runner_watch_leaders', "watch serves no metric"),
    ],
)
def test_the_check_finds_what_is_not_served(expr: str, problem: str) -> None:
    assert any(p.startswith(problem) for p in problems(expr)), problems(expr)


def test_the_check_reads_what_the_rules_write() -> None:
    seen = read(
        'max by (job) (time() - flink_sql_runner_job_last_batch_timestamp_seconds{job=~"a|b"}'
        ' and on(instance, job) (flink_sql_runner_job_state{state="healthy"} == 1)) > 1800'
        " or sum(increase(flink_sql_runner_job_restarts[1h] offset 5m)) without (instance)"
    )
    assert seen.selectors == (
        Selector("flink_sql_runner_job_last_batch_timestamp_seconds", (("job", "=~", "a|b"),)),
        Selector("flink_sql_runner_job_state", (("state", "=", "healthy"),)),
        Selector("flink_sql_runner_job_restarts", ()),
    )
    assert seen.functions == {"max", "time", "sum", "increase"}
    assert seen.grouping == {"job", "instance"}


# -- the examples' queries ------------------------------------------------------------------


def load_dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def load_rules() -> list[dict[str, Any]]:
    return [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]


def grafana(expr: str) -> str:
    """The query as Grafana runs it: its variables given their values."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in GRAFANA_VARIABLES, f"a variable the test does not know: ${name} in {expr}"
        return GRAFANA_VARIABLES[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_queries() -> dict[str, str]:
    """Every PromQL query of the dashboard, by where it is, as Grafana runs it."""
    dashboard = load_dashboard()
    found = {}
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            found[f"panel {panel['title']!r} {target['refId']}"] = grafana(target["expr"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            # label_values(SELECTOR, LABEL): its selector (the label is checked below).
            text = variable["query"]["query"]
            query = re.fullmatch(r"label_values\((.+),\s*\w+\)", text)
            found[f"variable {variable['name']}"] = grafana(query.group(1) if query else text)
    return found


def rule_queries() -> dict[str, str]:
    return {f"rule {rule['alert']}": rule["expr"] for rule in load_rules()}


QUERIES = {**dashboard_queries(), **rule_queries()}


@pytest.mark.parametrize("where", sorted(QUERIES))
def test_every_query_reads_what_watch_serves(where: str) -> None:
    assert not problems(QUERIES[where]), f"{where}: {QUERIES[where]}"


@pytest.mark.parametrize("where", sorted(QUERIES))
def test_every_query_of_a_job_reads_the_leaders_series_only(where: str) -> None:
    """Nothing a watcher that does not lead served counts. Restarts are the exception: their
    count is kept in the store, the same whoever serves it, and an increase() cannot be taken
    of the leader's series alone."""
    expr = QUERIES[where]
    metrics = {s.metric for s in read(expr).selectors}
    if not any(m.startswith("flink_sql_runner_job_") for m in metrics) or where.startswith("var"):
        return
    if metrics == {"flink_sql_runner_job_restarts"}:
        assert "increase(" in expr, where
        return
    assert LEADER_ONLY in " ".join(expr.split()), f"{where}: {expr}"


def test_the_examples_read_every_metric_watch_serves() -> None:
    read_somewhere = {s.metric for expr in QUERIES.values() for s in read(expr).selectors}
    assert read_somewhere == set(SERVED.labels) - {"flink_sql_runner_job_last_batch_id"}


# -- the dashboard --------------------------------------------------------------------------


def test_the_dashboard_is_one_grafana_imports() -> None:
    dashboard = load_dashboard()
    assert dashboard["schemaVersion"] == 42 and dashboard["id"] is None
    assert dashboard["uid"] == "flink-sql-runner-watch"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    job = variables["job"]
    assert job["type"] == "query" and job["datasource"] == DATASOURCE
    assert (
        job["definition"] == job["query"]["query"] == "label_values(flink_sql_runner_job_up, job)"
    )
    assert job["multi"] and job["includeAll"] and job["allValue"] == GRAFANA_VARIABLES["job"]
    assert variables["watch_job"]["query"] == SCRAPE_JOB
    used = set(re.findall(r"\$\{?(\w+)", DASHBOARD.read_text()))
    builtin = {"__all", "__rate_interval", "__dashboard", "__data", "__field", "__url_time_range"}
    assert used - builtin == set(variables), used - builtin


def test_every_panel_has_its_place_a_datasource_and_queries() -> None:
    dashboard = load_dashboard()
    every = list(panels(dashboard))
    ids = [p["id"] for p in every]
    assert len(ids) == len(set(ids)), ids
    taken: list[tuple[str, int, int, int, int]] = []
    for panel in every:
        grid = panel["gridPos"]
        x, y, w, h = grid["x"], grid["y"], grid["w"], grid["h"]
        assert x >= 0 and y >= 0 and w >= 1 and h >= 1 and x + w <= 24, panel["title"]
        for other, ox, oy, ow, oh in taken:
            overlap = x < ox + ow and ox < x + w and y < oy + oh and oy < y + h
            assert not overlap, f"{panel['title']!r} overlaps {other!r}"
        taken.append((panel["title"], x, y, w, h))
        assert panel["title"]
        if panel["type"] == "row":
            assert (x, w, h) == (0, 24, 1), panel["title"]
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["description"], panel["title"]
        targets = panel["targets"]
        assert targets, panel["title"]
        assert len({t["refId"] for t in targets}) == len(targets), panel["title"]
        for target in targets:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), panel["title"]
    rows = [p["gridPos"]["y"] for p in every if p["type"] == "row"]
    assert rows == sorted(rows) and len(rows) == 4


def state_timeline() -> dict[str, Any]:
    (panel,) = [p for p in panels(load_dashboard()) if p["type"] == "state-timeline"]
    return panel


def test_the_state_timeline_names_every_state_by_its_number() -> None:
    panel = state_timeline()
    numbers = dict(re.findall(r'state="([\w-]+)"\}\s*\*\s*(\d+)', panel["targets"][0]["expr"]))
    (mapping,) = panel["fieldConfig"]["defaults"]["mappings"]
    named = {option["text"]: number for number, option in mapping["options"].items()}
    assert set(numbers) == STATES
    assert named == numbers
    assert len(set(numbers.values())) == len(STATES)


# -- the rules ------------------------------------------------------------------------------

DURATION = re.compile(r"(\d+)([smh])")


def test_every_rule_waits_says_how_bad_and_names_what_it_is_about() -> None:
    rules = load_rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)) == 10
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert DURATION.fullmatch(rule["for"]), rule["alert"]
        assert rule["labels"] == {"severity": rule["labels"]["severity"]}
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        notes = rule["annotations"]
        assert set(notes) == {"summary", "description"}, rule["alert"]
        about_jobs = any(
            s.metric.startswith("flink_sql_runner_job_") for s in read(rule["expr"]).selectors
        )
        if about_jobs:
            assert all("{{ $labels.job }}" in text for text in notes.values()), rule["alert"]
            assert re.search(r"max by \(job\)|sum by \(job\)", rule["expr"]), rule["alert"]


def rule_tests() -> dict[str, Any]:
    return yaml.safe_load(RULE_TESTS.read_text())


SERIES = re.compile(r"(\w+)\{(.*)\}")


def test_the_rules_unit_tests_feed_series_watch_serves() -> None:
    for case in rule_tests()["tests"]:
        for series in case["input_series"]:
            name, body = SERIES.fullmatch(series["series"]).groups()
            labels = dict(re.findall(r'(\w+)="([^"]*)"', body))
            assert name in SERVED.labels, series["series"]
            assert set(labels) == SERVED.labels[name], series["series"]
            if name in ("flink_sql_runner_watch_leader", "up"):
                assert labels["job"] == SCRAPE_JOB, series["series"]
            assert labels.get("state", "healthy") in STATES, series["series"]


def test_every_alert_is_shown_firing_and_not() -> None:
    fired, quiet = set(), set()
    for case in rule_tests()["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in load_rules()}
    assert fired == names, names - fired
    assert {"FlinkSqlRunnerJobDown", "FlinkSqlRunnerWatchNoLeader"} <= quiet


# -- promtool: the rules checked and run, every dashboard query evaluated -------------------


def promtool_here() -> str:
    """promtool's path; the test fails, saying what to install, where there is none."""
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool is needed to check the Prometheus rules and the dashboard's queries: "
            "apt-get install prometheus (Debian's package brings promtool)",
            pytrace=False,
        )
    return found


def run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.mark.promtool
def test_promtool_takes_the_rules_and_the_scrape_config(tmp_path: Path) -> None:
    promtool = promtool_here()
    assert "SUCCESS: 10 rules found" in run([promtool, "check", "rules", RULES.name], MONITORING)
    assert "SUCCESS" in run([promtool, "check", "config", PROMETHEUS.name], MONITORING)
    # The Kubernetes scrape the config's comments give: its relabelling (Debian's Prometheus has
    # no Kubernetes discovery, so the static targets stay).
    lines = PROMETHEUS.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "On Kubernetes" in line) + 1
    kubernetes = yaml.safe_load("\n".join(line.strip()[2:] for line in lines[start:]))
    assert kubernetes["kubernetes_sd_configs"][0]["role"] == "pod"
    config = yaml.safe_load(PROMETHEUS.read_text())
    (scrape,) = config["scrape_configs"]
    scrape["relabel_configs"] = kubernetes["relabel_configs"]
    config["rule_files"] = [str(RULES)]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert "SUCCESS" in run([promtool, "check", "config", "prometheus.yml"], tmp_path)


@pytest.mark.promtool
def test_the_alerts_fire_as_their_unit_tests_say() -> None:
    promtool = promtool_here()
    assert "SUCCESS" in run([promtool, "test", "rules", RULE_TESTS.name], MONITORING)


def series_of(metrics: Metrics, instance: str) -> list[dict[str, str]]:
    """A watcher's exposition as Prometheus keeps it from a scrape with honor_labels, constant
    over the test's 10 minutes."""
    found = []
    for name, labels, value in exposition(metrics):
        kept = {"instance": instance, "job": SCRAPE_JOB, **labels}
        text = ", ".join(f'{k}="{v}"' for k, v in sorted(kept.items()))
        found.append({"series": f"{name}{{{text}}}", "values": f"{value:g}x10"})
    return found


def fleet() -> list[dict[str, str]]:
    """Two watchers: watch-1 leads; watch-2 led before and still shows what it saw then."""
    leader = Metrics()
    leader.observe("orders", health(State.DOWN, "orders"), 1)
    leader.observe("paused", health(State.STOPPED, "paused"), 0)
    leader.observe("clicks", health(State.HEALTHY, "clicks"), 0)
    leader.observe("poison", health(State.CRASH_LOOPING, "poison"), 5)
    leader.observe(
        "slow", health(State.HEALTHY, "slow", {**BATCH, "offsets-behind-latest": 9e5}), 0
    )
    leader.leader.set(1)
    standby = Metrics()
    standby.observe("orders", health(State.HEALTHY, "orders"), 1)
    standby.observe("gone", health(State.DOWN, "gone", {**BATCH, "offsets-behind-latest": 1e9}), 0)
    scraped = [
        {"series": f'up{{instance="{instance}", job="{SCRAPE_JOB}"}}', "values": "1x10"}
        for instance in ("watch-1:9464", "watch-2:9464")
    ]
    return series_of(leader, "watch-1:9464") + series_of(standby, "watch-2:9464") + scraped


#: What panels show of the fleet above (at 5 minutes), by panel title.
SHOWN = {
    "Jobs watched": {"{}": 5},
    "Running": {"{}": 2},
    "Should run, not running": {"{}": 2},
    "Crash-looping": {"{}": 1},
    "Stalled": {"{}": 0},
    "Watchers leading": {"{}": 1},
    "Watchers scraped": {"{}": 2},
    "Jobs that need attention": {
        '{job="orders", state="down"}': 1,
        '{job="poison", state="crash-looping"}': 1,
    },
    "Health state": {
        '{job="orders"}': 9,
        '{job="paused"}': 7,
        '{job="clicks"}': 1,
        '{job="poison"}': 5,
        '{job="slow"}': 1,
    },
    "Largest Kafka lag": {
        '{job="slow"}': 9e5,
        '{job="clicks"}': 5000,
        '{job="orders"}': 5000,
        '{job="paused"}': 5000,
        '{job="poison"}': 5000,
    },
}


@pytest.mark.promtool
def test_every_dashboard_query_runs_and_shows_the_fleet(tmp_path: Path) -> None:
    """Each query of the dashboard, as Grafana runs it, is a recording rule promtool takes, and
    the main panels, evaluated on what two watchers serve (one of them standing by), show what
    the leader sees."""
    promtool = promtool_here()
    queries = dashboard_queries()
    rules = [
        {"record": f"dashboard:query_{i}", "expr": expr} for i, expr in enumerate(queries.values())
    ]
    (tmp_path / "queries.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    assert f"SUCCESS: {len(rules)} rules found" in run(
        [promtool, "check", "rules", "queries.yaml"], tmp_path
    )
    by_title = {p["title"]: p for p in panels(load_dashboard())}
    checks = [
        {
            "expr": grafana(by_title[title]["targets"][0]["expr"]),
            "eval_time": "5m",
            "exp_samples": [{"labels": k, "value": v} for k, v in samples.items()],
        }
        for title, samples in SHOWN.items()
    ]
    test = {
        "rule_files": ["queries.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": fleet(), "promql_expr_test": checks}],
    }
    (tmp_path / "dashboard.test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    assert "SUCCESS" in run([promtool, "test", "rules", "dashboard.test.yaml"], tmp_path)
