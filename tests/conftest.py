"""Shared fixtures: one SparkSession for every test that reads or runs Spark in-process, and
the suite's isolation from the user's own `./.flink-sql-runner/` (tests/support/isolation.py)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import browser, netguard, scratch, warm_cli
from tests.support.diagrams import stop_reader
from tests.support.isolation import changes, fingerprint
from tests.support.jvm import quicken
from tests.support.scheduling import group_ended, make_scheduler, order

pytest_plugins = ["tests.support.fixtures_s3", "tests.support.hadoop_cluster"]

# Spark binds its driver to the host name's address unless told: every Spark of the suite (the
# shared session below, and the drivers spark-submit starts, which inherit it) listens on 127.0.0.1.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

REPO = Path(__file__).resolve().parents[1]
#: Markers of tests that start Spark, a server or a browser, run the simulation's many seeds, or
#: need a tool of their own (promtool): any other test is in the fast lane.
HEAVY = (
    "spark", "e2e", "cluster", "s3", "kafka", "yarn", "diagrams", "browser", "promtool",
    "simulation",
)  # fmt: skip
#: The state folders a test could reach by the CLI's default: the repository's, the working
#: folder's (where pytest was started).
USER_STATE = sorted({REPO / ".flink-sql-runner", Path.cwd().resolve() / ".flink-sql-runner"})


@pytest.fixture(autouse=True)
def away_from_the_users_jobs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The default state folder (the CLI's, and a `Settings()` a test makes) is a fresh temp
    folder; a test that changes the user's `./.flink-sql-runner/` anyway fails
    (tests/support/isolation.py)."""
    monkeypatch.setenv("FLINK_SQL_RUNNER_STATE_DIR", str(tmp_path_factory.mktemp("default-state")))
    before = {folder: fingerprint(folder) for folder in USER_STATE}
    yield
    changed = [
        f"{folder}: {line}"
        for folder in USER_STATE
        for line in changes(before[folder], fingerprint(folder))
    ]
    if changed:
        pytest.fail(
            "this test changed the user's state folder (tests must use their own, e.g. "
            "--state-dir under tmp_path):\n" + "\n".join(changed),
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def only_this_machine() -> Iterator[None]:
    """A test whose process connected (or tried to) off this machine fails, naming where: the
    tests use 127.0.0.1 only (tests/support/netguard.py refuses the connection itself)."""
    netguard.taken()  # what a server thread of an earlier test asked for is not this test's
    yield
    outside = netguard.taken()
    if outside:
        pytest.fail(
            "this test connected off this machine (tests use 127.0.0.1 only): "
            + ", ".join(outside),
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def pages_looked_at(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `browser` opens its pages in a fresh browser context, closed after it
    (tests/support/browser.py); a script error, a console error or a failed request of its
    pages that the test did not take with `page_problems` fails it, naming them."""
    browser.begin_test(request.node.get_closest_marker("browser") is not None)
    yield
    left = browser.end_test()
    if left:
        pytest.fail("a page of this test had problems:\n" + "\n".join(left), pytrace=False)


#: A `java` that only says it was asked for: the fast lane's JAVA_HOME.
NO_JAVA = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../asked"
echo "the fast lane starts no JVM" >&2
exit 1
"""


@pytest.fixture(autouse=True)
def no_jvm_in_the_fast_lane(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[None]:
    """A fast test that starts Java (Spark, the plan's schema probe, in a child process or
    not) fails, naming what it ran: such a test is marked `spark`."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return
    home = tmp_path_factory.mktemp("no-java")
    (home / "bin").mkdir()
    (home / "bin" / "java").write_text(NO_JAVA)
    (home / "bin" / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))
    yield
    asked = os.path.join(home, "asked")  # os, not Path: the test's own patches still hold
    if os.path.exists(asked):
        with open(asked, encoding="utf-8") as handle:
            started = handle.readline().rstrip("\n")[:200]
        pytest.fail(f"a fast test started a JVM (java {started}): mark it spark", pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    """Spark's scratch files (`spark.local.dir`, the JVMs' `java.io.tmpdir`: shuffle and block
    folders, native libraries unpacked) go to one folder of this run, removed at its end, not to
    /tmp, where every driver a test kills would leave its own (tests/support/scratch.py). The
    user's own cache folder, where the plan's probes look for `jvm-archive --for-plan`'s
    archive, is a folder of the run too: never the developer's. Sockets to addresses off this
    machine are refused (tests/support/netguard.py). SIGTERM ends the run as Ctrl-C does, its
    fixtures torn down: a test's drivers run in sessions of their own, which only the
    teardown stops (`.ci/run` stops the matrix's tests so when another stage failed; under
    pytest-xdist the controller gives a worker 10 s before it kills it)."""
    folder = scratch.begin(config)
    os.environ["FLINK_SQL_RUNNER_USER_CACHE"] = os.path.join(folder, "user-cache")
    netguard.install()
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    scratch.end(config)


def pytest_sessionfinish() -> None:
    """The worker's CLI launcher, Mermaid reader and browser, if it started them, stopped."""
    warm_cli.stop()
    stop_reader()
    browser.stop()


#: What an idle session of the tests does not need: a worker's session lives the whole run and
#: mostly waits (`python -m tests.benchmarks.idle_session`: 2.70 CPU-s in 90 s idle with Spark's
#: defaults, 1.25 with these, side by side in docs/developers/benchmarks.md). The console's
#: progress bar, which a `pyspark-shell` session redraws five times a second though no one sees
#: it, is off; the executor's and driver's heartbeats come every 40 s, not 10. Spark delays the
#: first one by the interval plus a random share of it, so the longest gap is 80 s, under
#: spark.network.timeout's 120 s: the session's executor is never taken for lost.
QUIET_SESSION = {
    "spark.ui.showConsoleProgress": "false",
    "spark.executor.heartbeatInterval": "40s",
}


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in QUIET_SESSION.items():
        builder = builder.config(key, value)
    session = (
        builder.master("local[2]")
        .appName("flink-sql-runner-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


#: Markers of tests that start a Spark JVM: a session that runs one makes its JVMs cheaper first.
SPARK = ("spark", "e2e", "cluster", "kafka", "yarn")


def pytest_collection_finish(session: pytest.Session) -> None:
    """A session that starts Spark gives every JVM it starts the measured options of
    tests/support/jvm.py (the class-data-sharing archive made first, once per machine);
    `FSR_TEST_JVM=plain` leaves them as Spark starts them (to measure the difference)."""
    if os.environ.get("FSR_TEST_JVM") == "plain" or session.config.option.collectonly:
        return
    if any(item.get_closest_marker(m) for item in session.items for m in SPARK):
        quicken(os.environ)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`fast` for every test that starts no Spark, no server and no browser (`pytest -m fast`);
    the long files first, a file's tests together (tests/support/scheduling.py: every worker
    collects the same order)."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in HEAVY):
            item.add_marker(pytest.mark.fast)
    marks = [{m.name for m in item.iter_markers()} for item in items]
    items[:] = [items[i] for i in order([item.nodeid for item in items], marks)]


@pytest.hookimpl(optionalhook=True)  # xdist's hook: `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 - xdist's
    """`pytest -n 3`: whole files to a worker, each server's files to one (scheduling.py)."""
    return make_scheduler(config, log)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    """After a server group's last test, its broker or minicluster stops (scheduling.py)."""
    yield
    group_ended(item.nodeid, nextitem.nodeid if nextitem is not None else None)
