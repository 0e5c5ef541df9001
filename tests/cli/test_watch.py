"""`watch` and `resume` through the real command line, without Spark; and the service examples
in examples/watch/ use only options and environment variables `watch` has."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import socket
from pathlib import Path

import click
import yaml

from flink_sql_runner.cli.main import all_commands
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.lock import Holder
from flink_sql_runner.watch.records import Failure, WatchLog, WatchRecord, manifest_digest
from tests.support.cli import REPO, run_cli

WATCH = all_commands()["watch"]
EXAMPLES = REPO / "examples" / "watch"


def envvars(command: click.Command) -> set[str]:
    found = set()
    for param in command.params:
        names = param.envvar if isinstance(param.envvar, list) else [param.envvar]
        found.update(n for n in names if n)
    return found


def assert_watch_takes(args: list[str], env: dict[str, str], where: str) -> None:
    unknown = {k for k in env if k.startswith("FLINK_SQL_RUNNER_")} - envvars(WATCH)
    assert not unknown, f"{where}: watch reads no {sorted(unknown)}"
    context = WATCH.make_context("watch", list(args), default_map=None)
    assert context.params["output"] == "json", where


def test_the_systemd_unit_runs_watch_with_options_it_has():
    text = (EXAMPLES / "flink-sql-runner-watch.service").read_text()
    env = dict(re.findall(r"^Environment=(\w+)=(.*)$", text, re.M))
    command = re.search(r"^ExecStart=(.*?)(?<!\\)$", text, re.M | re.S)
    assert command is not None
    argv = shlex.split(command.group(1).replace("\\\n", " "))
    assert argv[0].endswith("flink-sql-runner") and argv[1] == "watch"
    assert_watch_takes(argv[2:], env, "the systemd unit")
    assert re.search(r"^TimeoutStopSec=600$", text, re.M), "time for the step in progress"


def test_the_kubernetes_deployment_runs_watch_with_options_it_has():
    deployment = yaml.safe_load((EXAMPLES / "kubernetes.yaml").read_text())
    assert deployment["spec"]["replicas"] == 2, "one acts, one stands by"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    assert container["args"][0] == "watch"
    assert_watch_takes(container["args"][1:], env, "the Kubernetes Deployment")
    assert pod["terminationGracePeriodSeconds"] >= 600


def stopped_job(store: LocalStore, name: str = "quiet") -> StoredManifest:
    job = {"name": name, "target-table": "t", "sql": "SELECT 1", "checkpoint-root": "/nowhere",
           "desired-state": "stopped"}  # fmt: skip
    manifest = StoredManifest(job, {}, Meta(1, "id-1", "2026-11-23T10:00:00Z"))
    store.write(manifest, None)
    return manifest


def test_the_log_formats_spelling_before_still_works_with_a_note(tmp_path: Path):
    """Issue 55, item 4: `watch --log-format json` is `watch --output json` (JSON Lines, one
    object per event); `--log-format` still works, hidden, with a note."""
    state = tmp_path / "state"
    stopped_job(LocalStore(state / "manifests"))
    before = run_cli("watch", "--once", "--state-dir", str(state), "--log-format", "json")
    assert before.returncode == 0, before.stderr
    assert before.stderr.splitlines() == ["note: --log-format is now --output"]
    assert [json.loads(line)["event"] for line in before.stdout.splitlines()] == ["watching"]
    env = {"FLINK_SQL_RUNNER_OUTPUT": "json"}
    now = run_cli("watch", "--once", "--state-dir", str(state), env=env)
    assert (now.returncode, now.stderr) == (0, "")
    assert [json.loads(line)["event"] for line in now.stdout.splitlines()] == ["watching"]
    shown = " ".join(run_cli("watch", "--help").stdout.split())
    assert "--log-format" not in shown
    assert "JSON Lines" in shown


def test_the_two_output_variables_disagreeing_are_refused_in_one_line(tmp_path: Path):
    """FLINK_SQL_RUNNER_LOG_FORMAT=json (a service file not yet changed) and
    FLINK_SQL_RUNNER_OUTPUT=text (set for the other commands): a usage error naming both
    variables, exit 2, not a watcher logging text."""
    env = {"FLINK_SQL_RUNNER_LOG_FORMAT": "json", "FLINK_SQL_RUNNER_OUTPUT": "text"}
    result = run_cli("watch", "--once", "--state-dir", str(tmp_path / "state"), env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error: FLINK_SQL_RUNNER_LOG_FORMAT json and FLINK_SQL_RUNNER_OUTPUT text disagree "
        "(FLINK_SQL_RUNNER_LOG_FORMAT is the spelling before of FLINK_SQL_RUNNER_OUTPUT): "
        "give one; nothing was touched"
    ]
    assert not (tmp_path / "state").exists()


def test_the_note_about_the_old_variable_names_the_variable(tmp_path: Path):
    """FLINK_SQL_RUNNER_LOG_FORMAT alone still works; its note names the variable that was set
    and the one it is now, not a flag nobody gave."""
    state = tmp_path / "state"
    stopped_job(LocalStore(state / "manifests"))
    env = {"FLINK_SQL_RUNNER_LOG_FORMAT": "json"}
    result = run_cli("watch", "--once", "--state-dir", str(state), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "note: FLINK_SQL_RUNNER_LOG_FORMAT is now FLINK_SQL_RUNNER_OUTPUT"
    ]
    assert [json.loads(line)["event"] for line in result.stdout.splitlines()] == ["watching"]


def test_watch_once_leads_looks_and_exits_and_resume_lifts_a_crash_loop_mark(tmp_path: Path):
    state = tmp_path / "state"
    store = LocalStore(state / "manifests")
    manifest = stopped_job(store)
    looked = run_cli("watch", "--once", "--state-dir", str(state), "--output", "json")
    assert looked.returncode == 0, looked.stderr
    events = [json.loads(line) for line in looked.stdout.splitlines()]
    assert [e["event"] for e in events] == ["watching"]
    assert WatchLog(store).read_all()["quiet"].state == "stopped"
    assert not (state / "manifests" / "_watch" / "_leader.json").exists(), "lease released"

    failure = Failure("2026-11-23T11:00:00Z", "[CAST_INVALID_INPUT] bad row")
    record = WatchRecord("quiet", manifest_digest(manifest), (failure,), restarts=5,
                         consecutive=5, crash_looping=True)  # fmt: skip
    WatchLog(store).write(record)
    status = run_cli("status", "--state-dir", str(state))
    assert "crash-looping" not in status.stdout, "a stopped job is stopped, whatever watch saw"
    resumed = run_cli("resume", "quiet", "--state-dir", str(state))
    assert resumed.returncode == 0, resumed.stderr
    assert (
        resumed.stdout.strip()
        == "quiet: crash-loop mark lifted; watch restarts it at its next look"
    )
    lifted = WatchLog(store).read_all()["quiet"]
    assert (lifted.crash_looping, lifted.consecutive, lifted.restarts) == (False, 0, 5)
    again = run_cli("resume", "quiet", "--state-dir", str(state))
    assert again.returncode == 0 and "nothing to lift" in again.stdout

    unknown = run_cli("resume", "nosuch", "--state-dir", str(state))
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "error: unknown job 'nosuch': the store has no manifest of that name"
    )


def test_watch_once_exits_1_when_a_restart_it_attempted_failed_and_status_shows_why(
    tmp_path: Path,
):
    """Before, `watch --once` exited 0 after a failed restart, and `status` kept showing the
    earlier failure (the driver's death), not the restart's."""
    state = tmp_path / "state"
    checkpoint = tmp_path / "ck" / "ticker" / "1"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id": "3f1c"}')
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"conf":{}}\n')
    (checkpoint / "commits" / "0").write_text("v1\n")
    job = {"name": "ticker", "target-table": "t", "sql": "SELECT 1",
           "checkpoint-root": str(tmp_path / "ck")}  # fmt: skip
    manifest = StoredManifest(job, {"t": {"format": "console"}}, Meta(1, "id-1", "2026-11-23Z"))
    LocalStore(state / "manifests").write(manifest, None)
    submit = tmp_path / "spark-submit"  # a spark-submit whose application dies at once
    submit.write_text("#!/bin/sh\necho 'Exception in thread main: no such class' >&2\nexit 1\n")
    submit.chmod(0o755)
    common = ("--state-dir", str(state), "--spark-submit", str(submit))

    looked = run_cli("watch", "--once", "--output", "json", "--start-timeout", "30", *common)
    assert looked.returncode == 1, looked.stdout + looked.stderr
    kinds = [json.loads(line)["event"] for line in looked.stdout.splitlines()]
    assert kinds == ["watching", "restart-failed", "backing-off"]
    cause = "the job exited before it was healthy: see its log"
    assert looked.stderr.splitlines() == [f"error: ticker: its restart failed: {cause}"]
    status = run_cli("status", "--output", "json", *common[:2])
    (row,) = json.loads(status.stdout)["jobs"]
    assert row["last-failure"]["reason"] == f"restart failed: {cause}"
    assert row["health"] == "backing-off"
    record = WatchLog(LocalStore(state / "manifests")).read_all()["ticker"]
    assert (record.restarts, record.consecutive) == (1, 2), "the failed restart counted once"

    # While it backs off, a look restarts nothing (and, having attempted none, exits 0).
    again = run_cli("watch", "--once", "--output", "json", *common)
    assert again.returncode == 0, again.stderr
    assert [json.loads(line)["event"] for line in again.stdout.splitlines()] == ["watching"]
    record = WatchLog(LocalStore(state / "manifests")).read_all()["ticker"]
    assert (record.restarts, record.consecutive) == (1, 2), "the next look counts nothing"


def test_a_stall_timeout_drivers_cannot_honour_is_refused(tmp_path: Path):
    """Before, any value from 1 s: with 8 s, healthy idle jobs (a heartbeat every 10 s) were
    declared stalled and restarted."""
    result = run_cli("watch", "--stall-timeout", "29", "--once", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for '--stall-timeout': 29 s is shorter than drivers can honour: "
        "they write a heartbeat every 10 s, idle or not, so healthy idle jobs would be "
        "restarted; the minimum is 30 s"
    )
    assert not any(tmp_path.iterdir()), "nothing touched"


def test_bad_watch_settings_exit_2_naming_the_option(tmp_path: Path):
    result = run_cli("watch", "--interval", "0", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert "Invalid value for '--interval': 0.0 is not in the range x>=0.5" in result.stderr
    assert not (tmp_path / "manifests").exists(), "nothing touched"
    for option in ("--interval", "--stall-timeout", "--backoff-max", "--leader-ttl"):
        for value in ("nan", "inf"):  # a wait of nan never ends; inf is no wait either
            result = run_cli("watch", option, value, "--once", "--state-dir", str(tmp_path))
            assert result.returncode == 2, (option, value, result.stderr)
            assert f"'{option}': '{value}' is not a finite number of seconds" in result.stderr
    migrated = run_cli("migrate", "--from", str(tmp_path), "--lock-timeout", "nan")
    assert migrated.returncode == 2 and "'--lock-timeout'" in migrated.stderr, migrated.stderr
    assert not (tmp_path / "manifests").exists(), "nothing touched"


def test_watch_on_a_metrics_port_in_use_exits_2_and_starts_nothing(tmp_path: Path):
    """Before, a traceback (OSError: Address already in use) after the watcher was built."""
    state = tmp_path / "state"
    stopped_job(LocalStore(state / "manifests"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "watch", "--once", "--state-dir", str(state), "--metrics-port", str(port),
            "--output", "json",
        )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"error: --metrics-port {port}: cannot serve metrics on 127.0.0.1:{port}: "
        f"{os.strerror(errno.EADDRINUSE)}"
    ]
    assert result.stdout == "", "no event: nothing started"
    assert not (state / "manifests" / "_watch").exists(), "no watch record, no leader lease"


def test_resume_takes_the_stores_lock_and_waits_for_its_holder(tmp_path: Path):
    """`resume` changes what `watch` does with a job, like `stop`: it writes only while it holds
    the store's lock, and waits for a deploy that holds it. Before, it wrote at once."""
    state = tmp_path / "state"
    store = LocalStore(state / "manifests")
    manifest = stopped_job(store)
    record = WatchRecord("quiet", manifest_digest(manifest), (), restarts=5, consecutive=5,
                         crash_looping=True)  # fmt: skip
    WatchLog(store).write(record)
    deploy = Holder("other", "ci-runner-7", 4242, "deploy", "2026-11-23T22:13:20Z", 120.0)
    assert store.lock_backend().create(deploy) is not None
    result = run_cli("resume", "quiet", "--state-dir", str(state), "--lock-timeout", "1")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.splitlines()[0].startswith(
        f"waiting for the manifest store's lock ({state / 'manifests' / '.lock'}): held by "
        "deploy by pid 4242 on ci-runner-7 since 2026-11-23T22:13:20Z"
    ), result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        "error: the manifest store is locked by deploy by pid 4242 on ci-runner-7"
    ), result.stderr
    assert WatchLog(store).read_all()["quiet"].crash_looping, "nothing written"

    store.lock_backend().delete(store.lock_backend().read()[1])
    resumed = run_cli("resume", "quiet", "--state-dir", str(state))
    assert resumed.returncode == 0, resumed.stderr
    assert not WatchLog(store).read_all()["quiet"].crash_looping
    assert store.lock_backend().read() == (None, None), "the lock was released"
