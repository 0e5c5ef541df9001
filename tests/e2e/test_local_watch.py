"""`watch` on local Spark with real spark-submit, real drivers and real signals.

1. One job and two watchers: the first leads (metrics scraped), the second stands by. SIGKILL
   the driver: restarted from its checkpoint. SIGSTOP it: stalled, replaced. Kill the driver and
   deploy a config change at once: the deploy and the watcher never both act, never two runs
   that write (a run the deploy prepares beside the watcher's, warm, waits for its go).
   SIGKILL the leading watcher: the other takes over and restarts the next killed driver. The
   target holds every row exactly once.
2. A job that fails on every start (a poison record): restarted after a wait, then
   crash-looping with Spark's error in `status`, the webhook receiving the events in order, no
   further restarts (the waits growing is tests/watch/test_watcher.py's, on a fake clock).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, kill_driver, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

#: A short --stop-timeout: the only run a watcher here stops is a SIGSTOPped one, which never
#: stops gracefully, so its replacement waits the whole timeout before the kill.
WATCH_ARGS = ("--interval", "1", "--stop-timeout", "3", "--start-timeout", "120",
              "--output", "json")  # fmt: skip


class Webhook:
    """A webhook receiver on 127.0.0.1: every JSON body it was POSTed, in order."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        received = self.events

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class WatchProcess:
    """`flink-sql-runner watch` as a subprocess of its own session, its output in a file."""

    def __init__(self, ws: Workspace, name: str, *args: str):
        self.log = ws.root / f"{name}.log"
        argv = ws.argv("watch", *WATCH_ARGS, *args, paths=False)
        argv.remove("--table-definition-path")  # watch works from the store alone
        argv.remove(str(ws.tables))
        argv.remove("--template-file")
        argv.remove(str(ws.template))
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - a list, never a shell
                argv, cwd=ws.root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def events(self) -> list[dict]:
        found = []
        for line in self.log.read_text().splitlines():
            if line.startswith("{"):
                found.append(json.loads(line))
        return found

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events() if e["event"] != "warning"]

    def wait_for_event(self, kind: str, after: int = 0, timeout: float = 120) -> dict:
        def seen():
            events = [e for e in self.events() if e["event"] == kind]
            return events[after] if len(events) > after else None

        try:
            return wait_for(seen, timeout=timeout, interval=0.5, what=f"{kind} #{after + 1}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log.name}:\n{self.text()[-3000:]}") from None

    def text(self) -> str:
        return self.log.read_text()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
        self.process.wait(30)


@pytest.fixture
def webhook():
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.close()


@pytest.fixture
def watchers():
    started: list[WatchProcess] = []
    try:
        yield started
    finally:
        for watcher in started:
            watcher.kill()


def driver(ws: Workspace, name: str) -> dict:
    return wait_for(lambda: ws.record(name), timeout=120, what=f"a run of {name}")


def waiting_for_go(record: dict) -> bool:
    """Whether the run is a prepared one (a warm handover's: its stop marker is its own, named
    `...prepared-<run id>.stop`) that waits for its go: it has started no query and writes
    nothing. Its own log first: once it says the query started, or the runner's job line says
    nothing of waiting (a run not told to wait), or it cannot be read, the run counts as one
    that writes. Else the deployer's go file beside the stop marker: a run is given its go
    there before its log says so."""
    marker = str(record.get("stop-marker"))
    if ".prepared-" not in marker:
        return False
    try:
        text = Path(record["log"]).read_text(errors="replace")
    except OSError:
        return False
    if "go: starting the query" in text:
        return False
    job_line = re.search(r"\[flink-sql-runner\] job .*", text)
    if job_line is not None and "(prepared: it waits for a go)" not in job_line[0]:
        return False
    try:
        word = json.loads(Path(marker.removesuffix(".stop") + ".go.json").read_text())
    except (OSError, ValueError):
        return True
    return not (isinstance(word, dict) and word.get("go") is True
                and word.get("run-id") == record.get("run-id"))  # fmt: skip


def alive(record: dict) -> bool:
    from flink_sql_runner.host import processes as procs

    return procs.is_same_process(int(record["pid"]), str(record["started"]))


def describe(record: dict) -> str:
    """A run in a line: its id, version, when it was recorded and how far its log has come."""
    try:
        text = Path(record["log"]).read_text(errors="replace")
    except OSError:
        text = ""
    said = [word for word in ("ready: waiting up to", "go: starting the query") if word in text]
    kind = "plain"
    if ".prepared-" in str(record.get("stop-marker")):
        kind = "prepared, waiting" if waiting_for_go(record) else "prepared, given its go"
    return (
        f"{str(record.get('run-id'))[:8]} v{record.get('version')} {kind} pid {record['pid']} "
        f"at {record.get('started-at')} log {said or 'starting'}"
    )


def status_of(ws: Workspace, name: str) -> dict:
    result = ws.cli("status", "--output", "json", paths=False)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)["jobs"]}[name]


def test_watch_restarts_replaces_yields_to_deploy_and_hands_over(
    workspace: Workspace, spark, webhook: Webhook, watchers: list[WatchProcess]
):
    ws = workspace
    out = ws.root / "out"
    job = {"description": "first", "sql": "SELECT value FROM ticks"}
    ws.write_one_job("ticker", str(out), **job)
    deployed = ws.deploy()
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    first = driver(ws, "ticker")

    # A lease of 60 s (the default, said here so that no environment changes it): the standby
    # takes over at once when the leader's process is gone (it is on this machine), and a
    # renewal slowed by a busy machine hands nothing over.
    common = ("--stall-timeout", "30", "--leader-ttl", "60", "--notify-url", webhook.url)
    leader = WatchProcess(ws, "watch-a", *common, "--metrics-port", "0")
    watchers.append(leader)
    leader.wait_for_event("watching")
    standby = WatchProcess(ws, "watch-b", *common)
    watchers.append(standby)

    # Metrics: the per-job series, once the job has committed a batch.
    url = leader.wait_for_event("metrics")["message"]

    def scraped():
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        return text if 'flink_sql_runner_job_last_batch_id{job="ticker"}' in text else None

    text = wait_for(scraped, timeout=60, what="a scrape with the last batch")
    assert 'flink_sql_runner_job_up{job="ticker"} 1.0' in text
    assert 'flink_sql_runner_job_state{job="ticker",state="healthy"} 1.0' in text
    assert 'flink_sql_runner_job_input_rows_per_second{job="ticker"}' in text
    assert "flink_sql_runner_watch_leader 1.0" in text
    # Beside /metrics, the pages `ui` serves, of the same store: the job, running, and its page
    # with its version, checkpoint and log (real Spark wrote them).
    base = url.removesuffix("metrics")
    with urllib.request.urlopen(base, timeout=30) as answer:
        fleet = answer.read().decode()
    assert '<tr data-job="ticker">' in fleet and "healthy" in fleet
    with urllib.request.urlopen(f"{base}jobs/ticker", timeout=60) as answer:
        page = answer.read().decode()
    assert "Stored version</dt><dd>v1" in page
    assert f"{ws.state}/checkpoints/ticker/1" in page and '"batches"' in page
    # The driver log's tail (Spark's INFO lines push the runner's first line out of it).
    assert f"{ws.state}/logs/ticker/" in page and '<pre class="log"' in page

    # 1. SIGKILL the driver: restarted from its checkpoint, at once.
    kill_driver(int(first["pid"]))
    restarted = leader.wait_for_event("restarted")
    assert "restart from checkpoint" in restarted["message"], restarted
    second = driver(ws, "ticker")
    assert second["pid"] != first["pid"]
    row = status_of(ws, "ticker")
    assert (row["health"], row["restarts"]) == ("healthy", 1), row
    assert row["last-failure"]["reason"] == "its driver ended without a word (killed?)"

    # 2. SIGSTOP the driver: its heartbeat stops; stalled, then stopped (killed) and replaced.
    os.killpg(int(second["pid"]), signal.SIGSTOP)
    stalled = leader.wait_for_event("stalled")
    assert "no heartbeat from its driver" in stalled["message"]
    leader.wait_for_event("restarted", after=1)
    third = driver(ws, "ticker")
    assert third["pid"] != second["pid"]

    # 3. The driver dies and a config change is deployed at the same moment: one of the two
    #    acts first, the other after it, from what it finds then. Never two runs.
    ws.write_one_job("ticker", str(out), **{**job, "description": "second"})
    seen: list[tuple[float, list[str]]] = []  # (seconds since the kill, the runs that write)
    missed: list[str] = []  # looks that failed: a record removed as it was read (a stop)
    polling = threading.Event()
    began = time.monotonic()

    def poll() -> None:  # a run prepared beside the old one (a warm handover) writes nothing
        while not polling.is_set():
            try:
                writing = [r for r in ws.runs("ticker") if not waiting_for_go(r)]
                # Alive after its go was read: two counted were both up at that moment.
                writing = [describe(r) for r in writing if alive(r)]
                seen.append((round(time.monotonic() - began, 2), writing))
            except (OSError, ValueError) as exc:
                missed.append(repr(exc))
            time.sleep(0.2)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        kill_driver(int(third["pid"]))
        deployed = ws.deploy("--lock-timeout", "120")
    finally:
        polling.set()
        poller.join()
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    twice = [(at, runs) for at, runs in seen if len(runs) > 1]
    assert not twice, (
        f"never two runs of one job: {twice[:5]}\n{deployed.stdout}\n{leader.text()[-3000:]}"
    )
    assert any(len(runs) == 1 for _, runs in seen), f"no look saw the run: {seen} {missed}"
    fourth = driver(ws, "ticker")
    assert ws.stored("ticker")["description"] == "second"
    # The live run's runtime manifest: the version's own (a cold start: the watcher's restart
    # came second, or nothing ran), else the prepared run's, beside its own stop marker (warm).
    marker = Path(fourth["stop-marker"])
    runtime = json.loads(
        marker.with_name(marker.name.removesuffix(".stop") + ".manifest.json").read_text()
    )
    assert runtime["description"] == "second", "the run is the deployed one"
    time.sleep(3)  # a few more looks: the watcher leaves the deployed run alone
    assert ws.record("ticker")["pid"] == fourth["pid"]

    # 4. SIGKILL the leading watcher: the standby takes over and keeps the job running.
    assert "watching" not in standby.kinds(), "the standby did not act while the leader lived"
    leader.kill()
    standby.wait_for_event("watcher-took-over", timeout=30)
    kill_driver(int(fourth["pid"]))
    standby.wait_for_event("restarted")
    fifth = driver(ws, "ticker")
    assert fifth["pid"] != fourth["pid"]

    # The webhook heard both watchers, in order; the target holds every row exactly once. The
    # watcher logs an event, then posts it: the webhook may hear it a moment later (CI once
    # read it before the standby's `restarted` came).
    def heard_the_restart() -> bool:
        heard = webhook.kinds()
        return (
            "watcher-took-over" in heard
            and "restarted" in heard[heard.index("watcher-took-over") :]
        )

    wait_for(heard_the_restart, timeout=30, what="the webhook's restarted after the takeover")
    kinds = [k for k in webhook.kinds() if k not in ("metrics", "backing-off")]
    assert kinds[0] == "watching" and kinds[-2:] == ["watcher-took-over", "restarted"], kinds
    assert kinds.index("stalled") < kinds.index("watcher-took-over")
    # The last run was healthy when `restarted` came: its first batch is in. One batch more
    # (a row: one a batch) past what is in now: every restart's seam is behind it.
    count = len(rows_by_version(spark, out)[0].get(1, []))
    values = wait_for(
        lambda: (v := rows_by_version(spark, out)[0]) and len(v.get(1, [])) > count and v,
        what="rows after the last restart",
    )
    assert set(values) == {1}
    assert_exactly_once(values)


def test_a_job_failing_on_every_start_backs_off_then_is_left_crash_looping(
    workspace: Workspace, webhook: Webhook, watchers: list[WatchProcess]
):
    ws = workspace
    # A poison record: from value 3 on (the fourth batch, 9 s after the first, which the deploy
    # waits for), every batch fails; a restart from the checkpoint replays the failing batch.
    poison = "CAST(CASE WHEN value < 3 THEN CAST(value AS STRING) ELSE 'x' END AS INT)"
    ws.write_one_job(
        "poison",
        str(ws.root / "out"),
        sql=f"SELECT {poison} AS value FROM ticks",
        sparkProperties={"spark.sql.ansi.enabled": "true"},
    )
    # The watcher starts beside the deploy: it watches the job from the moment it is recorded.
    # Three failures in a row: the deployed run's and two restarts', a wait between them (that
    # each wait is longer than the one before is tests/watch/test_watcher.py's, on a fake clock).
    watcher = WatchProcess(ws, "watch", "--max-failures", "3", "--backoff-first", "1",
                           "--notify-url", webhook.url)  # fmt: skip
    watchers.append(watcher)
    deployed = ws.deploy()
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    watcher.wait_for_event("crash-looping", timeout=300)
    # The watcher logs an event, then posts it: the webhook may hear it a moment later.
    wait_for(lambda: "crash-looping" in webhook.kinds(), timeout=30, what="the webhook's event")

    kinds = [k for k in webhook.kinds() if k != "watching"]
    assert kinds == ["restart-failed", "backing-off", "restart-failed", "crash-looping"], kinds
    delays = [e["delay-seconds"] for e in webhook.events if e["event"] == "backing-off"]
    assert delays == [1], "the first wait is --backoff-first"
    looping = webhook.events[-1]
    assert "CAST_INVALID_INPUT" in looping["reason"]
    assert "`flink-sql-runner resume poison`" in looping["message"]

    starts = len(list((ws.state / "runs" / "poison").glob("*.json")))
    looked_from = time.monotonic()
    row = status_of(ws, "poison")
    assert row["health"] == "crash-looping" and row["restarts"] == 2, row
    assert "CAST_INVALID_INPUT" in row["last-failure"]["reason"]
    text = ws.cli("status", paths=False).stdout
    assert "crash-looping" in text and "flink-sql-runner resume poison" in text
    # several more looks (6 s of them, the status calls' time included): it stays down
    time.sleep(max(0.0, looked_from + 6 - time.monotonic()))
    assert len(list((ws.state / "runs" / "poison").glob("*.json"))) == starts
    assert ws.record("poison") is None
