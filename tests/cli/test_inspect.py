"""`inspect` through the real command line, without Spark, on a local store with hand-written
checkpoints and driver logs: the text and JSON forms, another version, a job not stored, a
version with no checkpoint, a malformed file named, and nothing written into the checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import migrated_store
from tests.support.cli import run_cli as cli

PINS = {"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.multipleWatermarkPolicy": "min"}


def offsets(*sources: object, watermark: int, at: int) -> str:
    meta = {"batchWatermarkMs": watermark, "batchTimestampMs": at, "conf": PINS}
    return "\n".join(["v1", json.dumps(meta), *(json.dumps(s) for s in sources)])


def given(tmp_path: Path) -> tuple[Path, Path]:
    """A stored job `clicks` at v2 (sparkProperties: one pinned setting agrees, one not), its
    checkpoint with batches 4 and 5 committed and 6 planned, and two runs' logs of v2."""
    state, root = tmp_path / "state", tmp_path / "ck"
    props = {"spark.sql.shuffle.partitions": "8", "spark.sql.streaming.multipleWatermarkPolicy":
             "min", "spark.ui.enabled": "false"}  # fmt: skip
    job = {"name": "clicks", "target-table": "t", "sql": "SELECT 1",
           "checkpoint-root": str(root), "sparkProperties": props}  # fmt: skip
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta(2, "q", "t")), None)
    files = {
        "metadata": '{"id":"5d0c"}',
        "offsets/4": offsets({"clicks": {"0": 10, "1": 3}}, watermark=0, at=1_795_600_000_000),
        "offsets/5": offsets({"clicks": {"0": 12, "1": 5}}, watermark=0, at=1_795_600_060_000),
        "offsets/6": offsets({"clicks": {"1": 9, "0": 15}}, watermark=0, at=1_795_600_120_000),
        "commits/4": 'v1\n{"nextBatchWatermarkMs":0}',
        "commits/5": 'v1\n{"nextBatchWatermarkMs":1767225600000}',
        "state/0/0/5.delta": "",
        "state/0/1/5.delta": "",
    }
    for rel, text in files.items():
        path = root / "clicks" / "2" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    logs = state / "logs" / "clicks"
    logs.mkdir(parents=True)
    (logs / "20261125T090000.000Z-run-a.log").write_text(
        "==== 2026-11-25T09:00:00 flink-sql-runner-clicks-v2 run run-a\n"
        "2026-11-25T09:00:20Z [flink-sql-runner] active: first trigger done (batch 0)\n"
        "2026-11-25T10:00:00Z [flink-sql-runner] stopped gracefully after batch 3\n"
    )
    (logs / "20261125T110000.000Z-run-b.log").write_text(
        "==== 2026-11-25T11:00:00 flink-sql-runner-clicks-v2 run run-b\n"
        "2026-11-25T11:00:20Z [flink-sql-runner] active: first trigger done (batch 4)\n"
    )
    (logs / "20261125T080000.000Z-run-0.log").write_text(
        "==== 2026-11-25T08:00:00 flink-sql-runner-clicks-v1 run run-0\n"
    )
    return state, root


def tree(root: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_the_text_form(tmp_path: Path) -> None:
    state, root = given(tmp_path)
    before = tree(root)
    result = cli("inspect", "clicks", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "clicks v2 (the stored version)",
        f"  checkpoint  {root}/clicks/2",
        "  query id    5d0c",
        "  batches     4 to 5 committed (2 kept), planned 2026-11-25T09:46:40Z to "
        "2026-11-25T09:47:40Z",
        "  pending     batch 6 planned, not committed: a restart runs it again with the same "
        "offsets",
        "  watermark   2026-01-01T00:00:00Z (the next batch's)",
        "  source 0    kafka: committed clicks[0:12,1:5]",
        "              next batch reads to clicks[0:15,1:9]",
        "  state       operator 0 (its name: Spark 4.0+ writes it), 2 partitions",
        "  pinned      2 settings; the stored manifest sets 2",
        "              spark.sql.shuffle.partitions: the manifest says 8, the checkpoint 2 "
        "(Spark runs with 2)",
        "              spark.sql.streaming.multipleWatermarkPolicy = min (agrees)",
        "  run         run-a started 2026-11-25T09:00:00Z, first batch 0, stopped",
        "  run         run-b started 2026-11-25T11:00:00Z, first batch 4",
    ]
    assert tree(root) == before, "inspect wrote into the checkpoint"
    assert not (state / "lock").exists() and not list(state.glob("*.lock"))


def test_the_json_form(tmp_path: Path) -> None:
    state, root = given(tmp_path)
    result = cli("inspect", "clicks", "--output", "json", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["name"], doc["version"], doc["stored-version"]) == ("clicks", 2, 2)
    checkpoint = doc["checkpoint"]
    assert checkpoint["batches"] == {"first": 4, "last": 5, "count": 2, "pending": 6,
        "first-planned": "2026-11-25T09:46:40.000Z",
        "last-planned": "2026-11-25T09:47:40.000Z"}  # fmt: skip
    source = {"index": 0, "kind": "kafka", "committed": {"clicks": {"0": 12, "1": 5}},
              "next": {"clicks": {"1": 9, "0": 15}}}  # fmt: skip
    assert checkpoint["sources"] == [source]
    assert checkpoint["watermark"] == "2026-01-01T00:00:00.000Z"
    assert checkpoint["operators"] == [
        {"id": 0, "name": None, "partitions": 2, "stores": [], "schema-version": None}
    ]
    assert doc["pins"] == [
        {"setting": "spark.sql.shuffle.partitions", "checkpoint": "2", "manifest": "8",
         "agrees": False},
        {"setting": "spark.sql.streaming.multipleWatermarkPolicy", "checkpoint": "min",
         "manifest": "min", "agrees": True},
    ]  # fmt: skip
    assert [(r["run-id"], r["first-batch"], r["ended"], r["up"]) for r in doc["runs"]] == [
        ("run-a", 0, "stopped", False),
        ("run-b", 4, None, False),
    ]


def test_another_version_without_a_checkpoint_exits_1(tmp_path: Path) -> None:
    state, root = given(tmp_path)
    result = cli(
        "inspect", "clicks", "--query-version", "1", "--state-dir", str(state), cwd=tmp_path
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "clicks v1 (stored: v2)",
        f"  checkpoint  {root}/clicks/1",
        "  no checkpoint yet: no run of this version has planned a batch",
        "  run         run-0 started 2026-11-25T08:00:00Z",
    ]


def test_a_job_not_stored_is_bad_input(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "manifests").mkdir(parents=True)
    result = cli("inspect", "nothing", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        f"error: unknown job 'nothing': no manifest of it in {state / 'manifests'}"
    ]


def test_a_malformed_file_is_named(tmp_path: Path) -> None:
    state, root = given(tmp_path)
    (root / "clicks" / "2" / "commits" / "5").write_text("v1\n{nope")
    result = cli("inspect", "clicks", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [f"error: {root}/clicks/2/commits/5: line 2 is not JSON"]


def test_sample_keys_without_state_is_bad_input(tmp_path: Path) -> None:
    state, _ = given(tmp_path)
    result = cli("inspect", "clicks", "--sample-keys", "3", "--state-dir", str(state),
                 cwd=tmp_path)  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error: --sample-keys samples the state: give --state with it"
    ]


def test_the_sample_keys_spelling_before_still_works_with_a_note(tmp_path: Path) -> None:
    """Issue 55, item 5: `inspect --keys N` (a sample of N state keys) read like `preview --key
    COLUMN` (rows compared by a column); it is `--sample-keys N`, and `--keys N` still works,
    hidden, with a note."""
    state, _ = given(tmp_path)
    result = cli("inspect", "clicks", "--keys", "3", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "note: --keys N is now --sample-keys N",
        "error: --sample-keys samples the state: give --state with it",
    ]
    shown = cli("inspect", "--help").stdout
    assert "--sample-keys N" in shown
    assert "--keys" not in shown


def test_the_run_history_gives_the_runs_on_any_target(tmp_path: Path) -> None:
    """The runs' own history on the checkpoint's storage (every target) wins over the driver
    logs; a run it does not list (an older release's) still comes from its log."""
    state, root = given(tmp_path)
    history = {"runs": [
        {"run-id": "run-b", "started": "2026-11-25T11:00:01Z", "first-batch": 4,
         "ended": "failed", "spark-version": "4.3.0"},
        {"run-id": "run-c", "started": "2026-11-25T12:00:00Z", "first-batch": 6, "ended": None,
         "spark-version": "4.3.0"},
    ]}  # fmt: skip
    (root / "clicks" / "_control").mkdir()
    (root / "clicks" / "_control" / "v2.runs.json").write_text(json.dumps(history))
    result = cli("inspect", "clicks", "--output", "json", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert [(r["run-id"], r["started"], r["first-batch"], r["ended"]) for r in runs] == [
        ("run-a", "2026-11-25T09:00:00.000Z", 0, "stopped"),
        ("run-b", "2026-11-25T11:00:01.000Z", 4, "failed"),
        ("run-c", "2026-11-25T12:00:00.000Z", 6, None),
    ]
    shutil.rmtree(state / "logs")  # a cluster target's: no logs here at all
    result = cli("inspect", "clicks", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("  run ")] == [
        "  run         run-b started 2026-11-25T11:00:01Z, first batch 4, failed",
        "  run         run-c started 2026-11-25T12:00:00Z, first batch 6",
    ]


def test_a_run_history_not_the_runners_is_a_note(tmp_path: Path) -> None:
    state, root = given(tmp_path)
    (root / "clicks" / "_control").mkdir()
    history = root / "clicks" / "_control" / "v2.runs.json"
    history.write_text('{"runs": [{"run-id": 7}]}')
    result = cli("inspect", "clicks", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"  note: the run history {history} is not one the runner writes: not shown" in lines
    assert [line.split()[1] for line in lines if line.startswith("  run ")] == ["run-a", "run-b"]


def test_a_migrated_job_not_deployed_yet_has_no_checkpoint_of_ours(tmp_path: Path) -> None:
    """Issue 40, item 2: a manifest `migrate` converted names no checkpoint root (no deploy of
    this tool has run it): `inspect` ended in KeyError: 'checkpoint-root'."""
    state = tmp_path / "state"
    migrated_store(state)
    text = cli("inspect", "late-shipments", "--state-dir", str(state))
    assert (text.returncode, text.stderr) == (1, "")
    assert text.stdout.splitlines()[:3] == [
        "late-shipments v1 (the stored version)",
        "  checkpoint  none: converted by `migrate`, not deployed by this tool yet",
        "  no checkpoint yet: the next deploy starts it clean, as v2",
    ]
    as_json = cli("inspect", "late-shipments", "--state-dir", str(state), "--output", "json")
    assert (as_json.returncode, as_json.stderr) == (1, "")
    assert json.loads(as_json.stdout)["checkpoint"] == {"location": None, "exists": False}


@pytest.mark.s3
@pytest.mark.spark
def test_state_on_s3_without_s3a_says_so_in_one_line(
    tmp_path: Path, s3_env: dict[str, str], s3_client: Any, s3_bucket: str
) -> None:
    """`--state` on a checkpoint in S3: the deployer reads the checkpoint and the bytes its
    state takes through boto3; Spark's state sources need S3A (hadoop-aws), which pyspark does
    not bring: one line says so, no traceback, and the rest is shown."""
    pyspark = pytest.importorskip("pyspark")
    state = tmp_path / "state"
    props = {"spark.hadoop.fs.s3a.endpoint": s3_env["AWS_ENDPOINT_URL"],
             "spark.hadoop.fs.s3a.path.style.access": "true"}  # fmt: skip
    job = {"name": "clicks", "target-table": "t", "sql": "SELECT 1",
           "checkpoint-root": f"s3a://{s3_bucket}/ck", "sparkProperties": props}  # fmt: skip
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta(1, "q", "t")), None)
    files = {
        "metadata": '{"id":"5d0c"}',
        "offsets/0": offsets({"clicks": {"0": 3}}, watermark=0, at=1_795_600_000_000),
        "commits/0": 'v1\n{"nextBatchWatermarkMs":0}',
        "state/0/_metadata/metadata": 'v1\n{"operatorInfo": {"operatorName": "dedupe"}}',
        "state/0/0/1.delta": "x" * 10,
        "state/0/1/1.delta": "y" * 3,
    }
    for rel, text in files.items():
        s3_client.put_object(Bucket=s3_bucket, Key=f"ck/clicks/1/{rel}", Body=text.encode())
    result = cli("inspect", "clicks", "--state", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rows = [line for line in lines if line.startswith("  state rows")]
    assert "  source 0    kafka: committed clicks[0:3]" in lines
    assert "  state disk  operator 0: 13 B (per partition 0:10 B 1:3 B)" in lines
    if int(pyspark.__version__.split(".")[0]) < 4:
        assert len(rows) == 1 and "Spark 4.0" in rows[0]
        return
    location = f"s3a://{s3_bucket}/ck/clicks/1"
    assert rows == [
        f"  state rows  not read: Spark cannot open {location}: "
        "java.lang.RuntimeException: java.lang.ClassNotFoundException: "
        "Class org.apache.hadoop.fs.s3a.S3AFileSystem not found; "
        "S3A needs hadoop-aws and the AWS SDK, which this Spark does not have: --state starts "
        "its Spark with the job's spark.jars and spark.jars.packages (docs/how-to/s3.md)"
    ]


#: Epoch microseconds of 2026-01-01 read as milliseconds: a watermark near year 58000.
FAR = 1_767_225_600_000_000


def test_a_watermark_past_year_9999_is_shown_as_the_number_with_a_note(tmp_path: Path) -> None:
    """Spark's times go to year 294247 (an event-time column of epoch microseconds read as
    seconds puts the watermark near year 58000): `inspect` shows it, exit 0, never a
    traceback; text: the number with a note; JSON: `null`, the number beside it under
    `watermark-as-written`."""
    state, root = given(tmp_path)
    (root / "clicks" / "2" / "commits" / "5").write_text(f'v1\n{{"nextBatchWatermarkMs":{FAR}}}')
    text = cli("inspect", "clicks", "--state-dir", str(state), cwd=tmp_path)
    assert (text.returncode, text.stderr) == (0, "")
    (line,) = [line for line in text.stdout.splitlines() if line.strip().startswith("watermark")]
    assert f"{FAR} (milliseconds since 1970: outside years 1 to 9999)" in line
    doc = cli("inspect", "clicks", "--state-dir", str(state), "--output", "json", cwd=tmp_path)
    assert (doc.returncode, doc.stderr) == (0, "")
    checkpoint = json.loads(doc.stdout)["checkpoint"]
    assert (checkpoint["watermark"], checkpoint["watermark-as-written"]) == (None, FAR)
