"""The benchmarks (tests/benchmarks/, run with `python -m tests.benchmarks`) at toy sizes, so
they cannot rot: the plan benchmark end to end against moto's server, and the pieces of the
Spark benchmarks that need no Spark. No timing is asserted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.benchmarks import __main__ as cli
from tests.benchmarks import plan_bench, recovery_bench, redeploy_bench, report, runner_bench
from tests.benchmarks.common import Measured

pytestmark = pytest.mark.s3


def test_plan_benchmark_at_toy_size(tmp_path: Path) -> None:
    result = plan_bench.run(tmp_path, jobs=6, rounds=1, say=lambda _: None)
    assert result.counts == {"unchanged": 4, "config": 1, "query": 1}
    assert {way: len(runs) for way, runs in result.timed.items()} == {
        way: 1 for way in plan_bench.WAYS
    }
    assert set(result.phases["cold"]) == {name for name, _, _ in plan_bench.PHASES}
    text = report.plan_section(result)
    assert "6 jobs (4 unchanged, 1 config changed, 1 query changed)" in text
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nprose\n")
    report.write_docs(docs, "plan", text)
    report.write_docs(docs, "runner", "runner numbers")
    report.write_docs(docs, "plan", "second")
    written = docs.read_text()
    assert written.startswith("# Benchmarks\n\nprose\n") and "second" in written
    assert "6 jobs" not in written and "runner numbers" in written
    assert written.count("results:plan:start") == 1


def test_plan_growth_at_toy_sizes(tmp_path: Path) -> None:
    """Cold, then again after 1 % of the job files were edited, at two sizes, one round each
    (a second round ran the same steps again: half this test's time); whatever a `plan` leaves
    in the state folder is gone before the next cold one (`reset_state`, checked below)."""
    result = plan_bench.run_growth(tmp_path, [20, 10], rounds=1, latency_ms=0, say=lambda _: None)
    assert [size.jobs for size in result.sizes] == [10, 20]
    assert [size.edited for size in result.sizes] == [1, 1]
    for size in result.sizes:
        assert {way: len(runs) for way, runs in size.timed.items()} == {
            "cold": 1,
            "edited": 1,
            "in-step": 1,
        }
    edited = (tmp_path / "growth-20" / "jobs" / "job-00002.yaml").read_text()
    assert "description: Benchmark job job-00002, edited (in step, round 1)\n" in edited
    text = report.growth_section(result)
    assert "#### `plan` from 10 to 20 jobs, moto's S3 server as is" in text
    assert "Growth, 20 jobs over 10 (2x the jobs): cold " in text
    assert "1 of 20 job files (1 %) were edited" in text
    assert "| 20 | 1 % edited, the store in step with git before (after a deploy) |" in text
    ws = plan_bench.Workspace(tmp_path / "reset")
    (ws.state / "runs").mkdir(parents=True)
    (ws.state / "runs" / "a.json").write_text("{}")
    pristine = plan_bench.state_files(ws)
    (ws.state / "cache" / "deep").mkdir(parents=True)
    (ws.state / "cache" / "deep" / "x").write_text("x")
    (ws.state / "runs" / "b.json").write_text("{}")
    plan_bench.reset_state(ws, pristine)
    assert plan_bench.state_files(ws) == pristine


def test_the_edited_jobs_keep_their_decision() -> None:
    """1 % of the jobs, all among the config changed ones (their description is edited)."""
    names = plan_bench.edited_jobs(10_000)
    assert len(names) == 100 and names[0] == "job-01000"
    kinds = {plan_bench.Mix().kind(int(name[4:]), 10_000) for name in names}
    assert kinds == {"config"}


def test_runner_times_come_from_the_event_log(tmp_path: Path) -> None:
    events = tmp_path / "events" / "eventlog_v2_local-1"
    events.mkdir(parents=True)
    lines = [{"Event": runner_bench.STARTED, "timestamp": "2026-01-01T00:00:00.000Z"}]
    for batch, (start, took) in enumerate([("00:00:01.000", 2000), ("00:00:03.500", 1500)]):
        progress = {"timestamp": f"2026-01-01T{start}Z", "durationMs": {"triggerExecution": took}}
        lines.append({"Event": runner_bench.PROGRESS, "progress": {"batchId": batch, **progress}})
    (events / "events_1_local-1").write_text("\n".join(json.dumps(line) for line in lines))
    assert runner_bench.query_times(tmp_path / "events") == (5.0, 3.5, 2)


def test_runner_and_redeploy_reports_render(tmp_path: Path) -> None:
    run = runner_bench.Run(Measured(10.0, 500, 0, cpu_seconds=15.0), 8.0, 7.0, 4, tmp_path)
    runs = {way: (run, run) for way in runner_bench.WAYS}
    runner = runner_bench.RunnerResult(1000, 2, 1, runs, 900, (0.5, 0.7))
    assert "| 1.000 |" in report.runner_section(runner)
    events = ["started", "command", "loaded", "stopping", "gone", "stopped", "submitted"]
    at = {name: float(i) for i, name in enumerate(events + ["commit", "healthy", "ended"])}
    rounds = (redeploy_bench.Round(Measured(9.0, 80, 0), at),)
    text = report.redeploy_section(redeploy_bench.RedeployResult(rounds, (0.1, 0.2)))
    assert "deployer's own share under 1 s" in text


def test_first_commit_after_skips_older_commits(tmp_path: Path) -> None:
    commits = tmp_path / "commits"
    commits.mkdir()
    for name in ("0", "1", ".1.crc"):
        (commits / name).write_text("v1")
    os.utime(commits / "0", (100, 100))
    os.utime(commits / "1", (200, 200))
    assert redeploy_bench.first_commit_after(tmp_path, 150) == 200


def test_the_command_line_picks_benchmarks() -> None:
    assert cli.parse(["--only", "plan,redeploy"]).only == ["plan", "redeploy"]
    assert cli.parse([]).plan_sizes == "1000,10000"
    with pytest.raises(SystemExit):
        cli.parse(["--only", "everything"])


def test_recovery_marks_pick_the_first_restart_after_the_kill(tmp_path: Path) -> None:
    log = tmp_path / "timing.jsonl"
    events = [("look", 9.0), ("look", 10.5), ("look", 11.5), ("wanted", 11.6),
              ("submitting", 11.8), ("submitted", 11.9), ("look", 12.5), ("healthy", 20.0),
              ("look", 21.0), ("wanted", 21.1)]  # fmt: skip
    log.write_text("".join(json.dumps({"event": e, "at": at}) + "\n" for e, at in events))
    at = recovery_bench.recovery_marks(recovery_bench.marks(log), killed=10.0)
    assert at == {"killed": 10.0, "look": 11.5, "wanted": 11.6, "submitting": 11.8,
                  "submitted": 11.9, "healthy": 20.0}  # fmt: skip
    assert recovery_bench.recovery_marks(recovery_bench.marks(log)[:6], killed=10.0) is None
    rounds = (recovery_bench.Round({**at, "commit": 19.0}),)
    text = report.recovery_section(recovery_bench.RecoveryResult(rounds, 1.0, (0.1, 0.2)))
    assert "| **SIGKILL to first committed batch** |  | **9.00 s (9.00)** |" in text
    assert "the watcher's own work under 1 s: 0.40 s" in text


def test_kafka_report_renders_each_handover_and_the_totals() -> None:
    from tests.benchmarks import kafka_bench
    from tests.support.kafka_handover import Handover, Result, handover_counts, longest_pause

    restart = Handover("restart", "stop-and-restart-from-checkpoint", "", 20.0, 900, 500, 1000,
                       0, 0, 18.5)  # fmt: skip
    clean = Handover("new version", "stop-and-start-clean", "", 15.0, 700, 2000, 600, 0, 0, 9.0)
    result = Result(3100, (restart, clean), {"read": 3100, "lost": 0, "repeated": 0},
                    {1: 2500, 2: 600})  # fmt: skip
    text = report.kafka_section(kafka_bench.KafkaResult((result,), "4.2.0", (0.5, 1.0)))
    assert "| 1 | restart | 900 | 500 | 1000 | 0 | 0 | 18.5 s | 20.0 s |" in text
    assert "| 1 | 3100 | 3100 | v1: 2500, v2: 600 | 0 | 0 |" in text
    assert "- met: every record read exactly once" in text
    # a handover's figures, partition by partition: offset 3 of partition 0 read by neither
    # run (lost), offset 5 of partition 1 by both (repeated)
    rows = [{"__query_version": 1, "__query_description": "a", "p": 0, "o": o} for o in (1, 2)]
    rows += [{"__query_version": 2, "p": 0, "o": 4}]
    rows += [{"__query_version": 1, "__query_description": "a", "p": 1, "o": o} for o in (4, 5)]
    rows += [{"__query_version": 2, "p": 1, "o": o} for o in (5, 6)]
    assert handover_counts(rows, "v1 a", "v2") == {
        "read_before": 4,
        "read_after": 3,
        "lost": 1,
        "repeated": 1,
    }
    assert longest_pause([1.0, 2.0, 3.0, 15.0, 16.0, 30.0], began=2.5, ended=14.0) == 12.0


def test_handover_report_compares_the_ways_and_measures_the_largest_gap() -> None:
    from tests.benchmarks import handover_bench as h

    times = [0.0, 1.0, 2.0, 9.5, 10.5]  # the deploy ran from 1.5 to 9.0: the gap 2.0 -> 9.5
    assert h.largest_gap(times, 1.5, 9.0) == 7.5
    assert h.largest_gap(times, 10.0, 10.2) == 1.0
    # The handover's own gap: the commits around the deployer's `stopped`, not the largest.
    commits = [(0.0, "v1/0"), (1.0, "v1/1"), (4.5, "v1/2"), (5.0, "v1/3"), (6.2, "v1/4")]
    assert h.handover_gap(commits, {"stopping": 4.8, "stopped": 5.4}) == (
        (5.0, "v1/3"),
        (6.2, "v1/4"),
    )
    assert h.handover_gap(commits, {}) is None, "no handover: a pre-flight that failed"
    result = h.HandoverResult(
        [
            h.Round("config", "cold", 12.0, 15.0, 500, 520, handover=11.0),
            h.Round("config", "warm", 3.0, 30.0, 500, 1010, handover=1.2),
            h.Round("config", "warm, no warm-up", 3.1, 28.0, 500, 1000, handover=2.4),
            h.Round("cannot-start", "warm", 1.0, 25.0, 500, 900, same_driver=True),
        ]
    )
    text = report.handover_section(result)
    row = "| config | warm | 1 | 1.2 (1.2-1.2) | 3.0 (3.0-3.0) | 30.0 (30.0-30.0) | 500 | 1010 |"
    assert row + " - |" in text
    assert "| cannot-start | warm | 1 | - | 1.0 (1.0-1.0) |" in text and "| True |" in text
    assert "config change: warm pause / cold pause = 0.11" in text
    assert "config change: warm pause / without the warm-up = 0.50" in text


def test_watch_report_splits_the_store_from_the_checkpoint_storage() -> None:
    from collections import Counter

    from tests.benchmarks.watch_bench import Look, section

    look = Look(1000, "S3", False, Counter({"ListObjectsV2": 4, "PutObject": 1}),
                Counter({"GetObject": 1000, "ListObjectsV2": 1}), 0.5, 2.0,
                (14.0, 6.5))  # fmt: skip
    row = section([look]).splitlines()[-1]
    assert row == (
        "| 1,000 | S3 | status files only | 5 (4 ListObjectsV2, 1 PutObject) "
        "| 1001 (1000 GetObject, 1 ListObjectsV2) | 0.50 s | 2.00 s | 14.0 s, 6.5 s |"
    )


def test_the_fleet_page_benchmark_at_toy_size() -> None:
    """Both worlds end to end over HTTP on moto's server (4 jobs, one round, `fresh_for` 3 s
    instead of 10 s); the looks' requests are counted as the page and `status` send them, and
    the profile prints. `fresh_for` must outlast the reads behind a look: a look after a pass
    that took longer finds the jobs it read first due again and reads them in a second pass
    (0.3 s did not, on a busy machine: 6 reads, not 4)."""
    from tests.benchmarks import ui_bench

    said: list[str] = []
    results = ui_bench.run([4], rounds=1, within=1, say=said.append, profile_at=4,
                           fresh_for=3.0)  # fmt: skip
    assert [(r.jobs, r.alive) for r in results] == [(4, False), (4, True)]
    gone, alive = results
    for result in results:
        (first,) = result.of("first")
        assert first.looks == 1 and first.page_bytes > 0
        assert first.storage_requests == {"GetObject": 4, "ListObjectsV2": 5}
        (reused,) = result.of("reused")
        assert reused.looks == 0 and not reused.store_requests and not reused.storage_requests
        assert len(result.of("within")) == 1 and len(result.of("status")) == 1
    listings = {"GetObject": 1, "ListObjectsV2": 3}  # the index; the store, intents, records
    for look in gone.of("after") + gone.of("within") + gone.of("status"):
        assert look.store_requests == listings and look.storage_requests == {"ListObjectsV2": 1}
    (within,) = alive.of("within")
    assert within.storage_requests == {"ListObjectsV2": 1}, "the beacons only"
    (status,) = alive.of("status")
    assert status.storage_requests == {"GetObject": 4, "ListObjectsV2": 5}, "reads every time"
    (after,) = alive.of("after")
    assert after.storage_requests == {"ListObjectsV2": 1}, "the running jobs: read behind it"
    (behind,) = alive.of("behind")
    assert behind.storage_requests == {"GetObject": 4, "ListObjectsV2": 4}
    assert not gone.of("behind"), "runs gone: nothing to read again"
    assert any("Ordered by: cumulative time" in line for line in said), "the profile"
    text = ui_bench.section(results)
    assert "| 4 | alive | a look within fresh_for | 1 |" in text
    assert "`status`'s look / the page's look within fresh_for" in text


def test_ci_plan_benchmark_at_toy_size(tmp_path: Path) -> None:
    """Both codes, this checkout's with its cache restored too; each run checked to decide
    what the workspace was built for (no query changes: no Spark)."""
    from tests.benchmarks import ci_plan

    mix = plan_bench.Mix(config_changed=0.2, query_changed=0.0)
    results = ci_plan.measure([10], "HEAD", 1, 0, tmp_path, mix)
    assert set(results) == {
        (10, "now", ci_plan.COLD),
        (10, "now", ci_plan.UNKEPT),
        (10, "now", ci_plan.CACHED),
        (10, "at HEAD", ci_plan.COLD),
        (10, "at HEAD", ci_plan.UNKEPT),
    }
    text = ci_plan.table(results, "HEAD")
    assert "| 10 | nothing kept | " in text and "| 10 | cache restored | - | " in text
    assert (tmp_path / "cache-10" / "load.json").is_file()


def test_the_plan_floor_benchmark_at_toy_size(tmp_path: Path) -> None:
    """Each read counts what it must (else the benchmark raises), the whole plan decides what
    the workspace was built for, and the floor is the imports and the longer of the listing and
    the local reads, never their sum."""
    from tests.benchmarks import plan_floor

    results = plan_floor.measure(tmp_path, 10, 1)
    assert [label for label, _ in results] == [
        plan_floor.IMPORTED,
        "12 input files read and hashed",
        plan_floor.LISTING,
        plan_floor.LISTING_CPU,
        "10 run records read (one process named)",
        "2 checkpoints' latest offsets (the changed jobs)",
        plan_floor.WHOLE,
    ]
    seconds = {label: values[0] for label, values in results}
    local = sum(seconds[label] for label, _ in results[1:] if "listing" not in label
                and "CPU" not in label and label != plan_floor.WHOLE)  # fmt: skip
    floor = seconds[plan_floor.IMPORTED] + max(seconds[plan_floor.LISTING], local)
    assert f"**{floor:.2f} s**" in plan_floor.table(results)


def test_the_benchmarks_jobs_run_at_the_one_second_trigger_their_pages_say(tmp_path) -> None:
    """The suite's template says 3 s; the benchmarks' jobs, on any target, 1 s (the handover
    benchmark measured at 3 s for two days, and its standalone run did not start)."""
    import yaml

    from tests.benchmarks.common import BENCH_TRIGGER, bench_workspace

    ws = bench_workspace(tmp_path, "spark://127.0.0.1:7077", "standalone", ("--cluster-api", "u"))
    assert (ws.master, ws.target, ws.target_options) == (
        "spark://127.0.0.1:7077",
        "standalone",
        ("--cluster-api", "u"),
    )
    assert yaml.safe_load(ws.template.read_text())["trigger"] == BENCH_TRIGGER
    assert BENCH_TRIGGER == {"processingTime": "1 second"}


def test_the_repeated_warm_handovers_table_gives_medians_of_the_pause_and_its_steps() -> None:
    from tests.benchmarks import handover_bench as h
    from tests.benchmarks.warm_repeat_bench import table

    def done(pause: float, go: float) -> h.Round:
        steps = {"stopping": -0.1, "stopped": go - 0.01, "go": go, "new run committed it": pause}
        return h.Round("config", "warm", pause, 20.0, 500, 900, steps=steps, handover=pause)

    text = table({"warm": [done(1.2, 0.5), done(1.4, 0.6), done(3.0, 0.9)],
                  "warm, no warm-up": [done(2.9, 0.5)]})  # fmt: skip
    rows = text.splitlines()
    assert rows[2] == "| warm | 3 | 1.40 s (1.20-3.00) | -0.10 | +0.59 | +0.60 | - | +1.40 |"
    assert rows[3].startswith("| warm, no warm-up | 1 | 2.90 s (2.90-2.90) |")


def test_the_suite_s_cpu_is_told_by_kind_and_by_the_test_that_started_each_process() -> None:
    from tests.benchmarks.suite_cpu import Seen, attribute, report, sample

    test = "tests/e2e/test_local_two_jobs.py::test_one_failing_job_does_not_stop_the_other"
    seen = {
        "1:1": Seen(1, 0, 2.0, "python3", "python3 -c exec(eval(sys.stdin", test, 0, 30),
        "2:1": Seen(2, 1, 1.0, "python3", "python3 -m flink_sql_runner deploy", test, 1, 3),
        # spark-submit exec'd into the driver's JVM: its test is its parent's
        "3:1": Seen(3, 2, 9.0, "java", "java ... SparkSubmit ... job_runner.py", None, 2, 20),
        "4:1": Seen(4, 3, 1.5, "python3", "python3 job_runner.py --manifest m", None, 4, 20),
        "5:1": Seen(5, 2, 7.0, "java", "java ... job_runner.py --probe schema_probe", None, 2, 9),
        # there before the run: only what it used during it counts
        "6:1": Seen(6, 0, 120.0, "kdamond.0", "", None, 0, 30, base=100.0),
    }
    attribute(seen)
    assert seen["4:1"].test == test and seen["5:1"].test == test
    text = report(seen, wall=30, busy=0.9)
    assert "| driver JVMs | 9 | 1 |" in text and "| driver Pythons | 2 | 1 |" in text
    assert "| probe JVMs | 7 | 1 |" in text and "| kernel threads (kdamond.0) | 20 | 1 |" in text
    assert "| `tests/e2e/test_local_two_jobs.py` | 20 | 2 |" in text
    assert "CPU seen in processes 40 s" in text
    live: dict[str, Seen] = {}
    sample(live, 0.0, first=True)
    me = [s for s in live.values() if s.pid == os.getpid()]
    assert len(me) == 1 and me[0].base == me[0].cpu and me[0].used == 0


def test_what_a_jvm_waited_for_unseen_is_its_reaped_cpu_less_what_was_seen_below_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.benchmarks import suite_cpu
    from tests.benchmarks.common import ProcessStat
    from tests.benchmarks.suite_cpu import UNSEEN, Seen, report, sample, unseen_children

    def reading(name: str, cpu: float, reaped: float) -> list[ProcessStat]:
        fields = ["S", "1", "1", *["0"] * 40]
        fields[11], fields[13], fields[19] = str(round(cpu * 100)), str(round(reaped * 100)), "7"
        return [ProcessStat(7, name, fields)]

    monkeypatch.setattr(suite_cpu, "_environ_test", lambda pid: None)
    monkeypatch.setattr(suite_cpu.Path, "read_bytes", lambda self: b"spark-class")
    seen: dict[str, Seen] = {}
    # spark-class waited for its launcher JVM (0.3 CPU-s) before it became the driver's JVM:
    # that is not the JVM's; what it waited for afterwards (0.2) is
    steps = (("bash", 0, 0), ("java", 1, 0.3), ("java", 2, 0.3), ("java", 3, 0.5))
    for name, cpu, reaped in steps:
        table = reading(name, cpu, reaped)
        monkeypatch.setattr(suite_cpu, "process_table", lambda table=table: iter(table))
        sample(seen, 0.0)
    ((_, jvm),) = seen.items()
    assert round(jvm.reaped - jvm.reaped_base, 6) == 0.2
    # a JVM that waited for nothing at first: all it waits for later is its own
    seen = {}
    for cpu, reaped in ((1, 0), (2, 0.4)):
        table = reading("java", cpu, reaped)
        monkeypatch.setattr(suite_cpu, "process_table", lambda table=table: iter(table))
        sample(seen, 0.0)
    ((_, jvm),) = seen.items()
    assert round(jvm.reaped - jvm.reaped_base, 6) == 0.4

    jvm = Seen(10, 1, 9.0, "java", "java SparkSubmit", "t.py::a", 0, 100, reaped=5.0)
    seen = {
        "10": jvm,
        # its Python ended before it did: in what it reaped, and seen
        "11": Seen(11, 10, 3.0, "python3", "job_runner.py", None, 1, 50),
        # a script that ended, and the JVM it launched, which it waited for: both seen
        "12": Seen(12, 10, 0.0, "bash", "launch_container.sh", None, 2, 60),
        "13": Seen(13, 12, 1.5, "java", "java CoarseGrainedExecutorBackend", None, 3, 60),
        # a child still running: what it waited for is its own, not the JVM's
        "14": Seen(14, 10, 0.1, "bash", "bash", None, 4, 100, reaped=2.0),
        "15": Seen(15, 14, 2.0, "sleep", "sleep", None, 5, 20),
    }
    (unseen,) = [u for u in unseen_children(seen) if u.pid == 10]
    assert round(unseen.used, 6) == 0.5, "5.0 reaped, less 3.0 and 1.5 seen that ended"
    assert unseen.test == "t.py::a" and unseen.name == UNSEEN
    assert "| programs JVMs started, unseen | 2 | 1 |" in report(
        {"10": jvm, "11": seen["11"]}, wall=100, busy=0.5
    ), "5.0 reaped less the Python's 3.0"


@pytest.mark.spark  # it starts two small JVMs (no Spark)
def test_the_spawn_cost_benchmark_at_toy_size(capsys) -> None:
    from tests.benchmarks import spawn_cost

    assert spawn_cost.main(["--rounds", "1", "--spawns", "5"]) == 0
    printed = capsys.readouterr().out
    assert "| Java's default | " in printed and "| VFORK | " in printed
    assert printed.count("round 1: ") == 2


def test_the_suite_timeline_tells_each_workers_files_and_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.benchmarks import suite_timeline

    (tmp_path / "notes.jsonl").write_text("kept\n")  # not the timeline's: left alone
    files = ["tests/model/test_json_values.py", "tests/model/test_runtime.py"]
    args = ["--out", str(tmp_path), "--above", "0", "--", "-n", "2", "-q", "-p", "no:cacheprovider"]
    assert suite_timeline.main([*args, *files]) == 0
    workers = suite_timeline.read(tmp_path)
    assert sorted(workers) == ["gw0", "gw1"]  # a whole file to each worker
    ran = {row["id"].split("::")[0] for tests in workers.values() for row in tests}
    assert ran == set(files)
    for tests in workers.values():
        assert len({row["id"].split("::")[0] for row in tests}) == 1
        assert all(row["began"] < row["ended"] for row in tests)
    said = capsys.readouterr().out
    assert len(re.findall(r"^gw[01]: \d+ tests, from \d+ s to \d+ s", said, re.M)) == 2, said
    assert all(f"s  {file}" in said for file in files), said
    assert "the machine was busy" in said
    assert (tmp_path / "notes.jsonl").read_text() == "kept\n"
