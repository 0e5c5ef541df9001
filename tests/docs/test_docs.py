"""Docs that cannot drift: every command line of the README and docs/*.md is checked against
the real command line, every output sample is compared with what the real CLI prints (or
marked, with a reason, as needing a cluster or a running Spark). The harness:
tests/support/doctest_md.py; how to mark a sample: its docstring and CONTRIBUTING.md."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.support import warm_cli
from tests.support.cli import REPO
from tests.support.doctest_md import (
    DOCS,
    Block,
    all_blocks,
    check_command,
    command_lines,
    inline_command_lines,
    mismatch,
    page_with,
    read_blocks,
    shape_mismatch,
    split,
)
from tests.support.stand_in import AWAIT_GO

STATE = ".flink-sql-runner"


# -- the project as a reader has it: examples/ in a folder of its own, state in ./.flink-sql-runner


class Project:
    """A copy of examples/ in a temp folder, run from there as the README runs it (its state in
    `./.flink-sql-runner`), so that what the CLI prints reads as in the docs."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("ci"))
        self.seen: set[tuple[int, str]] = set()  # the runs the commands started: (pid, started)

    def run(
        self, argv: list[str], env: dict[str, str] | None = None, stdin: int | None = None
    ) -> subprocess.CompletedProcess:
        """`argv` as the docs write it, `flink-sql-runner` first."""
        assert argv[0] == "flink-sql-runner", argv
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FLINK_SQL_RUNNER_")}
        environ.update({"FLINK_SQL_RUNNER_STATE_DIR": STATE, "NO_COLOR": "1", **(env or {})})
        try:
            return warm_cli.run(argv[1:], cwd=self.root, env=environ, stdin=stdin, timeout=300)
        finally:
            self.seen |= self._recorded_runs()

    def _recorded_runs(self) -> set[tuple[int, str]]:
        """The runs the local target records now, but this test's own process (`deployed`)."""
        found = set()
        for path in (self.root / STATE / "runs").glob("*/*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if int(record["pid"]) != os.getpid():
                found.add((int(record["pid"]), str(record["started"])))
        return found

    def kill_runs(self) -> None:
        """Kill every run the commands started that is still alive, even when a test failed."""
        from flink_sql_runner.host import processes as procs

        for pid, started in self.seen | self._recorded_runs():
            procs.kill_group(pid, started)

    def deployed(
        self,
        *folders: str,
        tables: tuple[str, ...] = ("examples/tables",),
        running: bool = True,
        batch: int = 0,
        spark: str | None = None,
    ) -> None:
        """The jobs of `folders` as deployed and `running`: v1 stored (its last run on `spark`),
        `batch` committed in each checkpoint, a run record naming a live process (this test's
        own: nothing is stopped)."""
        from flink_sql_runner.act.history import HistoryWriter
        from flink_sql_runner.host import processes as procs
        from flink_sql_runner.model.stored import Meta, StoredManifest
        from flink_sql_runner.read.catalog import load_catalog
        from flink_sql_runner.read.manifest import load_jobs
        from flink_sql_runner.stores.local import LocalStore

        state = self.root / STATE
        cwd = Path.cwd()
        os.chdir(self.root)  # relative paths in the catalog, as the CLI reads them here
        try:
            catalog = load_catalog([Path(t) for t in tables])
            jobs = load_jobs([Path(f) for f in folders], None, catalog, Path(STATE))
        finally:
            os.chdir(cwd)
        me, started = os.getpid(), procs.start_marker(os.getpid())
        store = LocalStore(state / "manifests")
        for job in jobs:
            stored = StoredManifest(job.spec, job.tables, replace(Meta.new(1), spark_version=spark))
            store.write(stored, None)
            # Its history record, as the deploy that recorded it writes one (act/history.py).
            assert (
                HistoryWriter(store).write(stored, "start-clean", "new job", lambda e: None) is None
            )
            checkpoint = self.root / job.checkpoint_location(1)
            for folder in ("offsets", "commits"):
                (checkpoint / folder).mkdir(parents=True)
                (checkpoint / folder / str(batch)).write_text("v1\n{}\n")
            (checkpoint / "metadata").write_text('{"id": "x"}')
            if not running:
                continue
            runs = state / "runs" / job.name
            runs.mkdir(parents=True)
            record = {"name": job.name, "version": 1, "run-id": f"run-{job.name}", "pid": me,
                      "started": started}  # fmt: skip
            (runs / f"run-{job.name}.json").write_text(json.dumps(record))

    def edit(self, path: str, change: Callable[[dict], None]) -> None:
        doc = yaml.safe_load((self.root / path).read_text())
        change(doc)
        (self.root / path).write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    project = Project(tmp_path)
    try:
        yield project
    finally:
        project.kill_runs()


# -- finding samples ------------------------------------------------------------------------


def sample(name: str) -> Block:
    """The block marked `<!-- doc: output NAME -->` (or `shape NAME`), wherever it is. A sample
    may be shown on more than one page (the README's quickstart and a tutorial), each copy the
    same text: the one checked is every one."""
    found = [b for b in all_blocks() if b.marker and b.marker.detail == name]
    assert found, f"no sample marked {name!r} in {DOCS}"
    differ = [b.where for b in found if b.text != found[0].text or b.marker != found[0].marker]
    assert not differ, f"the samples marked {name!r} differ: {found[0].where} and {differ}"
    return found[0]


def sample_command(block: Block, index: int = 0) -> list[str]:
    """The sample's own `$ ` command line: the docs' command is the one run."""
    lines = [c for c in command_lines(block) if c.argv[:1] == ["flink-sql-runner"]]
    return lines[index].argv


def output_of(block: Block) -> Block:
    """The sample less its `$ ` command lines (continuations included)."""
    kept, skipping = [], False
    for line in block.text.splitlines():
        if line.startswith("$ ") or skipping:
            skipping = line.rstrip().endswith("\\")
            continue
        kept.append(line)
    return Block(block.path, block.line, block.lang, "\n".join(kept), block.marker)


def same(block: Block, actual: str, replacements: dict[str, str] | None = None) -> None:
    problem = mismatch(output_of(block), actual, replacements)
    if problem:
        pytest.fail(problem, pytrace=False)


# -- every command line, every sample accounted for ----------------------------------------


@pytest.mark.parametrize("doc", DOCS)
def test_every_command_line_is_one_the_tools_take(doc: str) -> None:
    lines = [line for block in read_blocks(doc) for line in command_lines(block)]
    lines += inline_command_lines(doc)
    problems = [
        f"{line.where}: {problem}\n    {line.text.strip()}"
        for line in lines
        for problem in check_command(line.argv)
    ]
    assert not problems, "command lines the docs show that would not run:\n" + "\n".join(problems)


def ci_command_lines() -> list[tuple[str, str]]:
    """Every `flink-sql-runner` command line of the CI examples (examples/ci/), from the
    program's name on: each one the tools take, as the docs' own."""
    found = []
    for path in sorted((REPO / "examples" / "ci").glob("*.yml")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            at = re.search(r"(?:^|[\s:;(])(flink-sql-runner [^#]*)", line)
            if at and not line.lstrip().startswith("#"):
                found.append((f"{path.relative_to(REPO)}:{number}", at.group(1)))
    return found


def test_the_ci_examples_command_lines_are_ones_the_tools_take() -> None:
    lines = ci_command_lines()
    commands = {split(text)[1] for _, text in lines}
    assert {"validate", "lineage", "plan", "deploy"} <= commands, commands
    assert any("--out" in split(t) for _, t in lines) and any(
        "--plan" in split(t) for _, t in lines
    )
    problems = [
        f"{where}: {problem}\n    {text}"
        for where, text in lines
        for problem in check_command(split(text))
    ]
    assert not problems, "command lines the CI examples run that would not:\n" + "\n".join(problems)


def test_every_output_sample_is_checked_or_says_why_not() -> None:
    problems = []
    marked: dict[str, list[str]] = {}
    for block in all_blocks():
        problems += [f"{block.where}: {problem}" for problem in block.problems]
        if block.marker and block.marker.kind in ("output", "shape"):
            marked.setdefault(block.marker.detail, []).append(block.where)
        elif block.is_output and block.marker is None and not block.problems:
            first = block.text.splitlines()[0] if block.text else ""
            problems.append(
                f"{block.where}: an output sample no test compares: mark it "
                f"`<!-- doc: output ID -->` and compare it in {Path(__file__).name}, or "
                f"`<!-- doc: remote|illustrative REASON -->`\n    {first[:100]}"
            )
    for name, where in marked.items():
        if name not in CHECKED:
            problems.append(f"{', '.join(where)}: marked {name!r}, which no doc test checks")
        texts = {b.text for b in all_blocks() if b.marker and b.marker.detail == name}
        if len(texts) > 1:
            problems.append(f"{', '.join(where)}: {name!r} marks samples that differ")
    problems += [f"{name}: no sample is marked so" for name in CHECKED if name not in marked]
    assert not problems, "\n".join(problems)


# -- the samples ----------------------------------------------------------------------------

CHECKED: dict[str, str] = {}  # id -> test, filled by @checks


def checks(*names: str) -> Callable:
    def mark(test: Callable) -> Callable:
        for name in names:
            CHECKED[name] = test.__name__
        return test

    return mark


def plan_of_the_description_change(project: Project, sample_id: str) -> None:
    """The README's first change (tick-log's description), planned as sample `sample_id` says."""
    block = sample(sample_id)
    project.deployed("examples/queries")
    project.edit(
        "examples/queries/tick-log.yaml",
        lambda job: job.update(description="Every tick, with a better description"),
    )
    result = project.run(sample_command(block))
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)


@checks("plan-config-change")
def test_plan_of_a_config_change(project: Project) -> None:
    plan_of_the_description_change(project, "plan-config-change")


@checks("plan-cold-handover")
def test_plan_of_a_cold_handover(project: Project) -> None:
    plan_of_the_description_change(project, "plan-cold-handover")


@checks("plan-query-change")
def test_plan_of_a_query_change(project: Project) -> None:
    block = sample("plan-query-change")
    project.deployed("examples/queries")
    sql = "SELECT value, timestamp AS tick_time, value % 2 = 0 AS even\nFROM ticks\n"
    project.edit("examples/queries/tick-log.yaml", lambda job: job.update(sql=sql))
    result = project.run(sample_command(block))
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)


@checks("plan-config-refused")
def test_plan_of_a_config_change_spark_refuses(project: Project) -> None:
    """README's rollback: a change of the rate source's numPartitions is a config change."""
    block = sample("plan-config-refused")
    project.deployed("examples/queries")

    def refused(catalog: dict) -> None:
        (ticks,) = [table for table in catalog["tables"] if table["name"] == "ticks"]
        ticks["options"]["numPartitions"] = -1

    project.edit("examples/tables/sources.yaml", refused)
    result = project.run(sample_command(block))
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)


@checks("plan-spark-change")
def test_plan_of_a_newer_spark(project: Project) -> None:
    block = sample("plan-spark-change")
    project.deployed("examples/queries", running=False, batch=41, spark="3.5.9")
    result = project.run(sample_command(block))
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)


#: A saved plan's digest differs from one plan to the next (its salt, its time): the samples
#: show this one.
SAMPLE_DIGEST = "sha256:" + "3f2a" * 16


@checks("plan-out", "deploy-plan-stale")
def test_a_saved_plan_is_written_and_refused_once_stale(project: Project) -> None:
    """The README's saved plan: `plan --out` after tick-log's description changed, then the
    same job edited again before `deploy --plan`: refused whole (exit 2), nothing touched, and
    a plan made now printed to review instead."""
    saved, stale = sample("plan-out"), sample("deploy-plan-stale")
    project.deployed("examples/queries")
    project.edit(
        "examples/queries/tick-log.yaml",
        lambda job: job.update(description="Every tick, with a better description"),
    )
    planned = project.run(sample_command(saved))
    assert planned.returncode == 0, planned.stderr
    digest = json.loads((project.root / "plan.json").read_text())["digest"]
    same(saved, planned.stdout + planned.stderr, {digest: SAMPLE_DIGEST})
    manifests = project.root / STATE / "manifests"

    def stored() -> dict[str, bytes]:
        """Every file of the store, its history records (in a folder per job) among them."""
        return {str(p.relative_to(manifests)): p.read_bytes()
                for p in manifests.rglob("*") if p.is_file()}  # fmt: skip

    before = stored()
    assert any(name.startswith("_history/tick-log/") for name in before)
    project.edit("examples/queries/tick-log.yaml", lambda job: job.update(description="Again"))
    refused = project.run(sample_command(stale))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    same(stale, refused.stderr + refused.stdout)
    assert stored() == before, "nothing touched"


#: spark-submit's stand-in: it behaves as the runner does on the local target (a prepared run
#: says ready and waits for its go; a run reports itself healthy in the status file and leaves at
#: the stop marker) and fails as Spark does when the rate source is given a negative
#: numPartitions, before its query starts, so in a prepared run's pre-flight (the only Spark
#: message here that is not Spark's).
STAND_IN = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
doc = json.load(open(args[args.index("--manifest") + 1]))
{await_go}
prepare = doc.get("prepare") or {{}}
def report(path, **status):
    with open(path + ".tmp", "w") as handle:
        json.dump({{"run-id": doc["run-id"], "spark-version": "4.3.0", **status}}, handle)
    os.replace(path + ".tmp", path)
ticks = doc["tables"].get("ticks", {{}}).get("options", {{}})
if str(ticks.get("numPartitions", "1")).startswith("-"):
    error = "Invalid value '-1'. The option 'numPartitions' must be positive"
    report(prepare.get("status-file") or doc["status-file"], state="failed", error=error)
    markers = [m for m in (doc["stop-marker"], prepare.get("stop-marker")) if m]
    deadline = time.monotonic() + 30  # as Spark's driver, it takes a while to go
    while not any(map(os.path.exists, markers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(1)
await_go(doc)
report(doc["status-file"], state="active", **{{"batch-id": 0, "heartbeat": 1}})
while not os.path.exists(doc["stop-marker"]):
    time.sleep(0.05)
report(doc["status-file"], state="stopped", **{{"batch-id": 0, "heartbeat": 2}})
"""


@checks(
    "deploy-config-change", "deploy-preflight-failed", "deploy-rolled-back", "deploy-query-change"
)
def test_deploy_says_what_it_did(project: Project) -> None:
    """The README's deploys of a config change, then of one Spark refuses (warm: its
    pre-flight fails; cold: it is rolled back), on a stand-in spark-submit: the deployer's own
    lines, as the real runs print them."""
    project.deployed("examples/queries")
    driver = a_driver_that_stops_when_asked(project, "tick-log")
    stand_in = project.root / "spark-submit"
    stand_in.write_text(STAND_IN.format(python=sys.executable, await_go=AWAIT_GO))
    stand_in.chmod(0o755)
    env = {"FLINK_SQL_RUNNER_SPARK_SUBMIT": str(stand_in)}
    deploy = ["flink-sql-runner", "deploy", "--path", "examples/queries",
              "--table-definition-path", "examples/tables"]  # fmt: skip
    try:
        project.edit(
            "examples/queries/tick-log.yaml",
            lambda job: job.update(description="Every tick, with a better description"),
        )
        changed = project.run(deploy, env)
        assert changed.returncode == 0, changed.stdout + changed.stderr

        def refused(catalog: dict) -> None:
            (ticks,) = [table for table in catalog["tables"] if table["name"] == "ticks"]
            ticks["options"]["numPartitions"] = -1

        project.edit("examples/tables/sources.yaml", refused)
        preflight = project.run(deploy, env)
        assert preflight.returncode == 1, preflight.stdout + preflight.stderr
        rolled_back = project.run(sample_command(sample("deploy-rolled-back")), env)
        assert rolled_back.returncode == 1, rolled_back.stdout + rolled_back.stderr

        shutil.copy(REPO / "examples/tables/sources.yaml", project.root / "examples/tables")
        sql = "SELECT value, timestamp AS tick_time, value % 2 = 0 AS even\nFROM ticks\n"
        project.edit("examples/queries/tick-log.yaml", lambda job: job.update(sql=sql))
        new_version = project.run(sample_command(sample("deploy-query-change")), env)
        assert new_version.returncode == 0, new_version.stdout + new_version.stderr
    finally:
        stopped = project.run(["flink-sql-runner", "stop", "tick-log"], env)
        driver.kill()
        driver.wait()
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    same(sample("deploy-config-change"), results_of(changed.stdout))
    home = {str(project.root): "/home/you/flink-sql-runner"}
    same(sample("deploy-preflight-failed"), results_of(preflight.stdout), home)
    same(sample("deploy-rolled-back"), rolled_back.stdout, home)
    same(sample("deploy-query-change"), new_version.stdout)


def results_of(printed: str) -> str:
    """What a deploy did: its output after the plan."""
    return printed.split("changes pending.\n", 1)[1]


@checks("status-examples", "status-watched")
def test_status_has_the_columns_the_samples_show(project: Project) -> None:
    project.deployed("examples/queries")
    for name in ("status-examples", "status-watched"):
        block = sample(name)
        result = project.run(sample_command(block))
        assert result.returncode == 0, result.stderr
        problem = shape_mismatch(output_of(block), result.stdout)
        assert problem is None, problem


@checks("stop")
def test_stop_says_what_it_did(project: Project) -> None:
    block = sample("stop")
    project.deployed("examples/queries")
    driver = a_driver_that_stops_when_asked(project, "tick-log")
    try:
        out = []
        for line in command_lines(block):
            result = project.run(line.argv)
            out.append((result.stdout + result.stderr).rstrip("\n"))
    finally:
        driver.kill()
        driver.wait()
    same(block, "\n".join(out))


@checks("forget")
def test_forget_lists_asks_and_says_what_it_did(project: Project) -> None:
    """The README's `forget`, answered `y` on a terminal, of a running example job."""
    block = sample("forget")
    project.deployed("examples/queries")
    state = project.root / STATE
    (state / "logs" / "tick-log").mkdir(parents=True)
    (state / "logs" / "tick-log" / "20261125T024100Z-run.log").write_text("a driver's log\n")
    control = state / "checkpoints" / "tick-log" / "_control"
    control.mkdir(parents=True, exist_ok=True)
    (control / "v1.manifest.json").write_text("{}")
    driver = a_driver_that_stops_when_asked(project, "tick-log")
    leader, follower = pty.openpty()
    os.write(leader, b"y\n")
    try:
        result = project.run(sample_command(block), stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
        driver.kill()
        driver.wait()
    assert result.returncode == 0, result.stdout + result.stderr
    # The question goes to stderr, the answer echoed by the terminal: as a reader sees it.
    listing, _, done = result.stdout.rpartition("\n" + "tick-log: forgotten")
    asked = result.stderr.rstrip() + " y"
    shown = f"{listing}\n{asked}\ntick-log: forgotten{done}"
    same(block, shown, {str(project.root.resolve()): "/home/you/flink-sql-runner",
                        str(project.root): "/home/you/flink-sql-runner"})  # fmt: skip


@checks("inspect")
def test_inspect_reads_a_checkpoint_spark_wrote(project: Project) -> None:
    """The README's `inspect` of order-stats, on the checkpoint, status file and driver logs
    (their runner lines) a real local run of it wrote: started, stopped, a second file of orders,
    deployed again, stopped (tests/data/inspect, paths as /home/you/flink-sql-runner)."""
    block = sample("inspect")
    project.deployed("examples/queries", running=False)
    state = project.root / STATE
    shutil.rmtree(state / "checkpoints" / "order-stats")
    data = REPO / "tests" / "data" / "inspect"
    shutil.copytree(data / "checkpoints" / "order-stats", state / "checkpoints" / "order-stats")
    shutil.copytree(data / "logs", state / "logs")
    result = project.run(sample_command(block))
    assert result.returncode == 0, result.stderr
    same(block, result.stdout, {str(project.root): "/home/you/flink-sql-runner"})


def a_driver_that_stops_when_asked(project: Project, name: str) -> subprocess.Popen:
    """A process standing in for `name`'s driver: it leaves when its stop marker appears, as
    the runner does; recorded as the job's run."""
    from flink_sql_runner.host import processes as procs

    record_path = project.root / STATE / "runs" / name / f"run-{name}.json"
    record = json.loads(record_path.read_text())
    marker = project.root / STATE / "checkpoints" / name / "_control" / "v1.stop"
    code = (
        "import os, sys, time\n"
        "while not any(os.path.exists(p) for p in sys.argv[1:]): time.sleep(0.05)\n"
    )
    driver = subprocess.Popen([sys.executable, "-c", code, str(marker)])
    record.update(pid=driver.pid, started=procs.start_marker(driver.pid))
    record_path.write_text(json.dumps(record))
    return driver


@checks("watch-log")
def test_the_watch_log_sample_is_lines_watch_writes() -> None:
    """The sample needs jobs killed, frozen and failing on Spark; each of its lines must be an
    event `watch` emits, laid out as its log writes one."""
    from flink_sql_runner.watch.events import Event

    block = sample("watch-log")
    emitted = emitted_events()
    problems = []
    for number, line in enumerate(output_of(block).text.splitlines(), start=1):
        at, kind, rest = (line.split(maxsplit=2) + ["", ""])[:3]
        job, _, message = (
            rest.partition(": ") if kind not in ("watching", "metrics") else ("", "", rest)
        )
        written = Event(kind, job or None, message if job else rest, at=at).line()
        if kind not in emitted:
            problems.append(f"line {number}: {kind!r} is not an event watch emits")
        elif written != line:
            problems.append(
                f"line {number}: watch writes it\n      {written}\n    not\n      {line}"
            )
    assert not problems, f"{block.where}: not lines watch writes\n" + "\n".join(problems)


@checks("lock-waiting", "lock-refused")
def test_a_locked_store_says_who_holds_it(project: Project) -> None:
    """Another machine's deploy holds the store's lock (here a folder store's; the samples show
    S3's): the waiting line at once, then the refusal, exit 3."""
    project.deployed("examples/queries")
    store = project.root / STATE / "manifests"
    holder = {"owner": "x", "host": "ci-runner-7", "pid": 4242, "command": "deploy",
              "since": "2026-11-23T10:02:11Z", "ttl": 120.0}  # fmt: skip
    (store / ".lock").write_text(json.dumps(holder))
    result = project.run(["flink-sql-runner", "stop", "tick-log", "--lock-timeout", "1"])
    assert result.returncode == 3, result.stderr
    where = {f"{STATE}/manifests/.lock": "s3://bucket/jobs/_lock.json"}
    waiting, refused = result.stderr.splitlines()[0], result.stderr.splitlines()[-1]
    same(sample("lock-waiting"), waiting, where)
    same(sample("lock-refused"), refused, where)


@checks("validate-interval", "validate-table-name", "properties-ignored")
def test_validate_says_what_the_samples_say(project: Project) -> None:
    jobs = project.root / "jobs"
    jobs.mkdir()
    tables = project.root / "tables.yaml"
    tables.write_text(yaml.safe_dump({"tables": [
        {"name": "kafka.orders", "format": "kafka",
         "options": {"subscribe": "orders", "kafka.bootstrap.servers": "k:9092"}},
        {"name": "out", "format": "parquet", "options": {"path": "out"}},
    ]}))  # fmt: skip
    cases = {
        "validate-interval": ("q", {"trigger": {"processingTime": "5 secnds"}}),
        "validate-table-name": ("a", {"target-table": "sink.orders"}),
        "properties-ignored": ("q", {"sparkProperties": {
            "state.backend": "rocksdb", "execution.checkpointing.interval": "60s"}}),
    }  # fmt: skip
    for name, (job, fields) in cases.items():
        for old in jobs.iterdir():
            old.unlink()
        doc = {"name": job, "target-table": "out", "sql": "SELECT value FROM kafka.orders"}
        (jobs / f"{job}.yaml").write_text(yaml.safe_dump({**doc, **fields}, sort_keys=False))
        result = project.run(
            ["flink-sql-runner", "validate", "--path", "jobs", "--table-definition-path",
             "tables.yaml"]
        )  # fmt: skip
        block = sample(name)
        lines = [line for line in result.stderr.splitlines() if line.startswith(("error:", "warn"))]
        same(block, "\n".join(lines[: len(block.text.splitlines())]))


LINEAGE = ["examples/queries", "examples/pipeline/queries"]


@checks("lineage-text", "lineage-mermaid", "lineage-dot")
def test_lineage_as_the_samples_show_it(project: Project) -> None:
    block = sample("lineage-text")
    argv = sample_command(block)
    result = project.run(argv)
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)
    for name, output in (("lineage-mermaid", "mermaid"), ("lineage-dot", "dot")):
        drawn = project.run([*argv, "--output", output])
        assert drawn.returncode == 0, drawn.stderr
        same(sample(name), drawn.stdout)


@checks("lineage-json")
def test_lineage_json_sample_is_an_excerpt_of_the_real_one(project: Project) -> None:
    """The sample shows one item of some lists: each item shown is one of the real ones."""
    block = sample("lineage-json")
    argv = [*sample_command(sample("lineage-text")), "--output", "json"]
    real = json.loads(project.run(argv).stdout)
    shown = json.loads(block.text)
    root = str(project.root)
    problems = []
    assert list(shown) == list(real), f"{block.where}: keys {list(shown)} != {list(real)}"
    for key, value in shown.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                wanted = json.loads(json.dumps(item).replace("/...", root))
                if wanted not in real[key]:
                    problems.append(f"{key}: {item} is not one of the real {real[key]}")
        elif value != real[key]:
            problems.append(f"{key}: {value} != the real {real[key]}")
    assert not problems, f"{block.where}: the sample is not an excerpt of the real output\n" + (
        "\n".join(problems)
    )


def pipeline_changed(project: Project) -> None:
    """The README's pull request: expensive-orders' threshold and description, order-stats'
    description."""
    project.deployed(*LINEAGE, tables=("examples/tables", "examples/pipeline/tables"))

    def threshold(job: dict) -> None:
        job["sql"] = job["sql"].replace("9000", "10000")
        job["description"] = job["description"].replace("9000", "10000")

    project.edit("examples/queries/expensive-orders.yaml", threshold)
    project.edit(
        "examples/queries/order-stats.yaml",
        lambda job: job.update(
            description="Orders and revenue per minute, by order time (stateful, watermarked)"
        ),
    )


@pytest.mark.spark  # the plan analyses the changed query's schema with a local Spark session
@checks("plan-downstream", "plan-markdown")
def test_plan_along_the_lineage(project: Project) -> None:
    pipeline_changed(project)
    for name in ("plan-downstream", "plan-markdown"):
        block = sample(name)
        result = project.run(sample_command(block))
        assert result.returncode == 0, result.stderr
        same(block, result.stdout)


def expensive_orders_read_its_input(project: Project) -> None:
    """The examples deployed, expensive-orders' v1 having read the examples' orders in its
    batch 0 (its checkpoint's offsets and file-source log as Spark writes them), and its
    threshold lowered from 9000 to 5000."""
    project.deployed("examples/queries")
    checkpoint = project.root / STATE / "checkpoints" / "expensive-orders" / "1"
    orders = (project.root / "examples" / "data" / "orders" / "orders-0001.json").resolve()
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_795_000_000_000, "conf": {}}
    (checkpoint / "offsets" / "0").write_text(f'v1\n{json.dumps(meta)}\n{{"logOffset":0}}')
    (checkpoint / "sources" / "0").mkdir(parents=True)
    entry = {"path": f"file://{orders}", "timestamp": 1_795_000_000_000, "batchId": 0}
    (checkpoint / "sources" / "0" / "0").write_text(f"v1\n{json.dumps(entry)}")
    project.edit(
        "examples/queries/expensive-orders.yaml",
        lambda job: job.update(sql=job["sql"].replace("9000", "5000")),
    )


@pytest.mark.spark  # each preview runs both queries in a local Spark (and the plan its analysis)
@checks("preview", "plan-preview-markdown")
def test_preview_of_a_lower_threshold(project: Project) -> None:
    expensive_orders_read_its_input(project)
    sink = project.root / STATE / "output"
    for name in ("preview", "plan-preview-markdown"):
        block = sample(name)
        result = project.run(sample_command(block))
        assert result.returncode == 0, result.stderr
        same(block, result.stdout)
    orders = REPO / "examples" / "data" / "orders" / "orders-0001.json"
    prices = [json.loads(line)["price"] for line in orders.read_text().splitlines()]
    added = sum(5000 < p <= 9000 for p in prices)
    assert f"{added} row(s) only the new query writes; 0 only the old one wrote" in result.stdout
    assert not sink.exists(), "a preview writes nothing"


@checks("plan-json")
def test_plan_json_has_the_keys_and_order_the_page_says(project: Project) -> None:
    block = sample("plan-json")
    project.deployed("examples/queries")
    project.edit("examples/queries/tick-log.yaml", lambda job: job.update(sql="SELECT 1 AS x"))
    project.edit("examples/queries/expensive-orders.yaml", lambda job: job.update(sql="SELECT 1"))
    result = project.run(
        ["flink-sql-runner", "plan", "--path", "examples/queries", "--table-definition-path",
         "examples/tables", "--output", "json"]
    )  # fmt: skip
    real = json.loads(result.stdout)
    shown = json.loads(block.text)
    names = [job["name"] for job in real["jobs"]]
    assert names == sorted(names), "jobs come sorted by name"
    page = (REPO / block.path).read_text()
    said = page[page.index(block.text) + len(block.text) :].split("\n\n")[1]
    assert "sorted by name" in said, f"{block.where}: the text after the sample says {said!r}"
    changed = {job["name"]: job for job in real["jobs"]}["tick-log"]
    (job,) = shown["jobs"]
    problems = []
    if set(job) != set(changed):
        problems.append(f"a job's keys: {sorted(job)} != the real {sorted(changed)}")
    for key in ("changes", "steps", "rollback"):
        for item in job[key]:
            kin = [real for real in changed[key] if real.get("step") == item.get("step")]
            if not kin or set(item) != set(kin[0]):
                problems.append(f"{key}: {sorted(item)} != the real {[sorted(k) for k in kin]}")
    assert not problems, f"{block.where}: the sample is not the real document's shape\n" + (
        "\n".join(problems)
    )


@checks("migrate-dry-run")
def test_migrate_dry_run_as_the_page_shows(project: Project) -> None:
    block = sample("migrate-dry-run")
    store = project.root / "flink-sql-runner" / "manifests"
    shutil.copytree(REPO / "tests" / "data" / "migration" / "original" / "store", store)
    argv = sample_command(block)
    result = project.run(argv)
    assert result.returncode == 0, result.stderr
    same(block, result.stdout)
    assert sorted(p.name for p in store.iterdir()) == sorted(
        p.name for p in (REPO / "tests/data/migration/original/store").iterdir()
    )


@checks("show-expensive-orders")
def test_the_rows_shown_have_the_columns_a_run_writes() -> None:
    """The rows themselves need Spark; their columns are the query's, then the create
    timestamp, then the runner's metadata columns, in that order."""
    from flink_sql_runner._runner.query import METADATA_COLUMNS

    block = sample("show-expensive-orders")
    job = yaml.safe_load((REPO / "examples/queries/expensive-orders.yaml").read_text())
    template = yaml.safe_load((REPO / "templates/job-template.yaml").read_text())
    selected = re.search(r"SELECT\s+(.*?)\s+FROM", job["sql"], re.S).group(1)
    columns = [c.strip() for c in selected.split(",")]
    columns += [template["metadata-columns"]["create-timestamp-column"], *METADATA_COLUMNS]
    header = block.text.splitlines()[1]
    shown = [cell.strip() for cell in header.strip("|").split("|")]
    assert shown == columns, f"{block.where}: the sample's columns {shown} are not {columns}"


@checks("status-file")
def test_the_status_file_sample_is_what_the_runner_writes() -> None:
    """The runner's own status writer, fed a completed batch's progress as Spark reports it."""
    from flink_sql_runner._runner.query_look import QueryLook
    from flink_sql_runner._runner.status import Status

    class Written:
        text = ""

        def write(self, location: str, text: str) -> None:
            self.text = text

    written = Written()
    status = Status(written, "status.json", "run", "4.3.0")  # type: ignore[arg-type]
    status.set("active", 3)

    class Query:
        status = {"isTriggerActive": False}
        lastProgress = {"batchId": 3, "timestamp": "2026-11-22T13:50:10.000Z",
                        "numInputRows": 50, "inputRowsPerSecond": 5.0,
                        "processedRowsPerSecond": 52.7, "durationMs": {"triggerExecution": 949},
                        "sources": [{"metrics": {}}]}  # fmt: skip

    status.beat(QueryLook(Query()))
    block = sample("status-file")
    real, shown = json.loads(written.text), json.loads(block.text)
    problems = [
        f"{where}: the sample's keys {sorted(mine)} are not the real {sorted(theirs)}"
        for where, mine, theirs in (
            ("top level", shown, real),
            ("last-batch", shown["last-batch"], real["last-batch"]),
        )
        if set(mine) != set(theirs)
    ]
    same_values = shown["last-batch"] == real["last-batch"]
    assert not problems and same_values, (
        f"{block.where}: "
        + "\n".join(problems)
        + (f"\nlast-batch: {shown['last-batch']} != the real {real['last-batch']}")
    )


@checks("beacon-file")
def test_the_beacon_sample_is_what_the_runner_writes() -> None:
    """The runner's own beacon, of an active run: the sample's keys and values but the run id."""
    from runner.status import Status

    class Written:
        files: dict[str, str] = {}

        def write(self, location: str, text: str) -> None:
            self.files[location] = text

    written = Written()
    status = Status(written, "status.json", "run", "4.3.0", "beacon.json")  # type: ignore[arg-type]
    status.set("active", 3)
    block = sample("beacon-file")
    real, shown = json.loads(written.files["beacon.json"]), json.loads(block.text)
    assert {**real, "run-id": "..."} == shown, f"{block.where}: {shown} is not the real {real}"


@checks("schema-refused", "schema-refused-excerpt")
def test_a_refused_schema_change_reads_as_the_samples_show() -> None:
    """The plan of a change that would break a sink's readers, rendered from the facts the plan
    gathers, with Spark's analysis (which needs a sink Spark wrote) given: v1 wrote `value` as
    bigint, v2 would write a string, and the job `copy` reads the sink declaring bigint."""
    from flink_sql_runner.decide.plan import build_plan
    from flink_sql_runner.gather.facts import gather
    from flink_sql_runner.model.contracts import ContractFacts, Known, Reader, SinkHolds
    from flink_sql_runner.model.runs import Run
    from flink_sql_runner.render.plan import plan_text
    from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
    from tests.support.jobs import ROOT, make_job, stored_of

    def column(name: str, kind: str) -> dict:
        return {"name": name, "type": kind, "nullable": True}

    v1 = (column("value", "bigint"), column("timestamp", "timestamp"))
    v2 = (column("value", "string"), column("timestamp", "timestamp"))
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(make_job(name="ticks", sql="SELECT value, timestamp FROM ticks")))
    target.add_run(Run("ticks", 1, "run-1", "pid 42"))
    storage.add_checkpoint(f"{ROOT}/ticks/1", 3)
    changed = make_job(
        name="ticks", sql="SELECT CAST(value AS STRING) AS value, timestamp FROM ticks"
    )
    contract = ContractFacts(
        sink="/data/ticks",
        format="parquet",
        policy="additive",
        policy_from="the default",
        output=Known(v2),
        holds=SinkHolds((v1,), ("v1 of job ticks, claimed 2026-11-25T01:36:57Z",)),
        spark="4.3.0",
        readers=(Reader("copy", "tick_stream", Known(v1)),),
    )
    facts = gather([changed], store, target, storage, workers=1)
    text = plan_text(build_plan([replace(fact, contracts=(contract,)) for fact in facts]))
    for name in ("schema-refused", "schema-refused-excerpt"):
        same(sample(name), text.split("\n\n")[0])


@checks("state-refused")
def test_a_refused_stateful_change_reads_as_the_sample_shows() -> None:
    """docs/concepts/state.md's plan of a window changed on a Kafka job whose source carries on,
    from the
    facts the plan gathers, Spark's analysis of both queries given (tests/decide/test_state.py;
    the same analysis on real Spark: tests/runner/test_stateful_plan.py)."""
    from flink_sql_runner.decide.decisions import Plan
    from flink_sql_runner.render.plan import plan_text
    from tests.support.stateful import COUNT, decide_change, kafka_job

    changed = kafka_job(sql=COUNT.replace("20 seconds", "30 seconds"))
    text = plan_text(Plan((decide_change(changed),)))
    same(sample("state-refused"), text.split("\n\n")[0])


@checks("state-continued")
def test_a_continued_stateful_change_reads_as_the_sample_shows() -> None:
    """docs/concepts/state.md's plan of a filter added before a Kafka job's count: every verdict
    kept,
    so v2 continues from v1's state (tests/decide/test_state.py)."""
    from flink_sql_runner.decide.decisions import Plan
    from flink_sql_runner.render.plan import plan_text
    from tests.support.stateful import COUNT, decide_change, kafka_job, op

    changed = kafka_job(sql=COUNT.replace("FROM src", "FROM src WHERE id > 1"))
    decision = decide_change(changed, new_ops=(op(before=("id > 1",)),))
    same(sample("state-continued"), plan_text(Plan((decision,))).split("\n\n")[0])


@checks("runtime-manifest")
def test_the_runtime_manifest_sample_has_the_real_keys(tmp_path: Path) -> None:
    """The page's sample, key by key, against the runtime manifest of the examples' job."""
    from flink_sql_runner.model.control import ControlFiles
    from flink_sql_runner.model.runtime import runtime_manifest
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs

    block = sample("runtime-manifest")
    catalog = load_catalog([REPO / "examples" / "tables"])
    jobs = load_jobs([REPO / "examples" / "queries"], None, catalog, tmp_path)
    (job,) = [job for job in jobs if job.name == "expensive-orders"]
    stored = StoredManifest(job.spec, job.tables, Meta.new(1))
    control = ControlFiles.of(f"{tmp_path}/checkpoints/{job.name}", 1)
    real = runtime_manifest(stored, "run", control, "expensive-orders.yaml")
    shown = json.loads(block.text)
    problems = [
        f"{where}: the sample's keys {sorted(mine)} are not the real {sorted(theirs)}"
        for where, mine, theirs in (
            ("top level", shown, real),
            ("meta", shown["meta"], real["meta"]),
            ("metadata-columns", shown["metadata-columns"], real["metadata-columns"]),
        )
        if set(mine) != set(theirs)
    ]
    assert not problems, f"{block.where}: " + "\n".join(problems)


# -- lists in prose that follow the code ----------------------------------------------------


def emitted_events() -> set[str]:
    """The kinds of event `watch` emits: every `Event("kind", ...)` in the code."""
    emitted = set()
    for path in (REPO / "flink_sql_runner").rglob("*.py"):
        for call in re.finditer(r"Event\(\s*(\"[a-z-]+\")(?:\s+if [^\n]+? else (\"[a-z-]+\"))?",
                                path.read_text()):  # fmt: skip
            emitted |= {kind.strip('"') for kind in call.groups() if kind}
    return emitted


def test_the_events_list_names_every_event_watch_emits() -> None:
    """The docs' `Events:` list, against the kinds `watch` emits."""
    emitted = emitted_events()
    page, readme = page_with("Events: `")
    listed = re.search(r"Events: (.*?)\. ", readme, re.S)
    assert listed, f"{page}: no `Events: ...` list"
    named = set(re.findall(r"`([a-z-]+)`", re.sub(r"\([^)]*\)", "", listed.group(1))))
    assert named == emitted, (
        f"{page}'s Events list: missing {sorted(emitted - named)}, "
        f"not emitted {sorted(named - emitted)}"
    )


def test_the_benchmarks_page_names_every_benchmark() -> None:
    """docs/developers/benchmarks.md has a section for each benchmark `--only` offers."""
    shown = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks", "--help"],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=True,
    ).stdout  # fmt: skip
    names = re.search(r"--only ONLY\s+([a-z,]+)", shown)
    assert names, shown
    page = (REPO / "docs" / "developers" / "benchmarks.md").read_text()
    commands = " ".join(
        c.text for b in read_blocks("docs/developers/benchmarks.md") for c in command_lines(b)
    )
    missing = [n for n in names.group(1).split(",") if f"`--only {n}`" not in page
               and n not in commands]  # fmt: skip
    assert not missing, f"docs/developers/benchmarks.md does not name the benchmarks {missing}"
    assert not re.search(r"\b(two|three|five|six) (benchmarks|questions)\b", page, re.I), (
        "docs/developers/benchmarks.md counts its benchmarks in words: name them instead"
    )


def test_split_reads_commands_as_a_shell_does() -> None:
    assert split("a --x 'b c' && d | e > f") == ["a", "--x", "b c", "&&", "d", "|", "e", ">", "f"]


@checks("flow-diagram")
def test_the_flow_diagram_is_one_mermaid_reads(tmp_path: Path) -> None:
    """The README's diagram of the flow, read by Mermaid's own parser (as GitHub draws it)."""
    from tests.support.diagrams import parse_mermaid

    block = sample("flow-diagram")
    (parsed,) = parse_mermaid(block.text, tmp=tmp_path, draw=False)
    shown = {vertex["text"].replace("<br>", " ") for vertex in parsed["vertices"]}
    assert "flink-sql-runner deploy" in shown, shown
