"""Issue 55, item 4: one time format and one duration unit in every command's JSON output:
times as RFC 3339 UTC with milliseconds and a `Z`, durations in seconds under `-seconds` keys
(`inspect` gave epoch milliseconds, `status` seconds-only UTC strings, `duration-ms` stood
beside `probe-seconds`). Each command's JSON output that can be had cheaply, walked."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flink_sql_runner.model.intents import FailedStart
from flink_sql_runner.model.json_values import json_batch, json_status
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.watch.events import Event
from tests.support.cli import REPO, run_cli

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
#: What looks like a time: a date, then a T or a blank, then hours and minutes.
TIME_LIKE = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")
EXAMPLES = ["--path", str(REPO / "examples/queries"), "--table-definition-path",
            str(REPO / "examples/tables")]  # fmt: skip


def walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            found.append((f"{path}.{key}", inner))
            found += walk(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += walk(inner, f"{path}[{index}]")
    return found


def named_like_a_time(key: str) -> bool:
    """`timestamp`, `at`, `*-time`, `*-at`, `*-timestamp` (`started`, `updated`, ... are times
    too, but a number there is looked at by the assertions on them)."""
    return key in ("timestamp", "at", "time") or key.endswith(("-time", "-at", "-timestamp"))


def problems_of(doc: Any) -> list[str]:
    problems = []
    for path, value in walk(doc):
        key = path.rsplit(".", 1)[-1]
        if key.endswith(("-ms", "_ms")):
            problems.append(f"{path}: milliseconds")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and named_like_a_time(key):
            problems.append(f"{path}: {value!r}, a number where a time is named")
        if isinstance(value, str) and TIME_LIKE.match(value) and not TIME.match(value):
            problems.append(f"{path}: {value!r} is not RFC 3339 UTC with milliseconds")
    return problems


def a_stored_job_with_a_checkpoint(tmp_path: Path) -> Path:
    state, root = tmp_path / "state", tmp_path / "ck"
    job = {"name": "clicks", "target-table": "t", "sql": "SELECT 1", "checkpoint-root": str(root)}
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta(1, "q", "t")), None)
    meta = {"batchWatermarkMs": 1_767_225_600_000, "batchTimestampMs": 1_795_600_000_123}
    files = {
        "metadata": '{"id":"5d0c"}',
        "offsets/0": "\n".join(["v1", json.dumps(meta), json.dumps({"clicks": {"0": 1}})]),
        "commits/0": 'v1\n{"nextBatchWatermarkMs":1767225600000}',
        "../_control/v1.runs.json": json.dumps({"runs": [
            {"run-id": "r1", "started": "2026-11-25T11:00:01Z", "first-batch": 0,
             "ended": None, "spark-version": "4.0.1"}]}),
        "../_control/v1.status.json": json.dumps({
            "run-id": "r1", "state": "active", "updated": "2026-11-25T11:00:30Z",
            "batch-running-seconds": None, "last-batch": {
                "id": 0, "timestamp": "2026-11-25T11:00:20.456Z", "duration-ms": 2500}}),
    }  # fmt: skip
    for rel, text in files.items():
        path = root / "clicks" / "1" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return state


def test_a_number_under_a_key_named_like_a_time_is_a_problem() -> None:
    """The walk below would let an epoch-ms time through under `timestamp`, `at` or `*-time`."""
    doc = {"committed": {"offset": 100, "timestamp": 1_795_600_000_123}, "at": 1, "x": [
        {"end-time": 2.5}], "offsets": {"clicks": {"0": 1}}, "ok": True}  # fmt: skip
    assert problems_of(doc) == [
        ".committed.timestamp: 1795600000123, a number where a time is named",
        ".at: 1, a number where a time is named",
        ".x[0].end-time: 2.5, a number where a time is named",
    ]


def a_rate_micro_batch_source(tmp_path: Path) -> Path:
    """The stored job of `a_stored_job_with_a_checkpoint`, its one source a `rate-micro-batch`
    one, whose offset Spark writes `{"offset": N, "timestamp": epoch ms}`."""
    state = a_stored_job_with_a_checkpoint(tmp_path)
    offsets = tmp_path / "ck" / "clicks" / "1" / "offsets" / "0"
    lines = offsets.read_text().splitlines()
    lines[2] = json.dumps({"offset": 100, "timestamp": 1_795_600_000_123})
    offsets.write_text("\n".join(lines))
    return state


def test_inspect_gives_a_rate_micro_batch_sources_time_as_a_time(tmp_path: Path) -> None:
    """The reader knows a `rate-micro-batch` source's offset: its `timestamp` is a time
    (RFC 3339), its `offset` a position; a Kafka source's offsets stay numbers."""
    state = a_rate_micro_batch_source(tmp_path)
    result = run_cli("inspect", "clicks", "--state-dir", str(state), "--output", "json")
    assert result.returncode == 0, result.stderr
    (source,) = json.loads(result.stdout)["checkpoint"]["sources"]
    assert source["kind"] == "rate"
    assert source["committed"] == {"offset": 100, "timestamp": "2026-11-25T09:46:40.123Z"}


def test_no_json_output_gives_milliseconds_or_another_time_format(tmp_path: Path) -> None:
    state = a_stored_job_with_a_checkpoint(tmp_path)
    rate = a_rate_micro_batch_source(tmp_path / "rate")
    on = ["--state-dir", str(state), "--output", "json"]
    outputs = {
        "plan": run_cli("plan", *EXAMPLES, *on),
        "deploy --dry-run": run_cli("deploy", *EXAMPLES, *on, "--dry-run"),
        "status": run_cli("status", *on),
        "inspect": run_cli("inspect", "clicks", *on),
        "inspect of a rate-micro-batch source": run_cli(
            "inspect", "clicks", "--state-dir", str(rate), "--output", "json"
        ),
        "stop": run_cli("stop", "no-such-job", *on),
        "forget --dry-run": run_cli("forget", "clicks", "--dry-run", *on),
        "lineage": run_cli("lineage", *EXAMPLES, "--output", "json"),
        "validate": run_cli("validate", *EXAMPLES, "--output", "json"),
    }
    docs: dict[str, Any] = {what: json.loads(result.stdout) for what, result in outputs.items()}
    assert docs["inspect"]["checkpoint"]["batches"]["last-planned"] == "2026-11-25T09:46:40.123Z"
    assert docs["inspect"]["checkpoint"]["watermark"] == "2026-01-01T00:00:00.000Z"
    assert docs["inspect"]["runs"][0]["started"] == "2026-11-25T11:00:01.000Z"
    assert docs["inspect"]["last-status"]["last-batch"]["duration-seconds"] == 2.5
    at = datetime(2026, 11, 29, 16, 36, 17, 123_000, tzinfo=timezone.utc)
    batch = {"id": 3, "timestamp": "2026-11-29T16:36:17.123Z", "duration-ms": 1500}
    docs["status's last batch"] = json_batch(batch)
    assert docs["status's last batch"]["duration-seconds"] == 1.5
    docs["inspect's last status"] = json_status(
        {"updated": "2026-11-29T16:36:17Z", "last-batch": batch, "batch-running-seconds": 2.0}
    )
    docs["a failed start"] = FailedStart(1, "2026-11-25T02:27:45Z", "boom", "r1").to_dict()
    docs["a watch event"] = Event("restarted", "clicks").to_dict()
    docs["a watch event's time"] = {"at": Event("x", at=at.isoformat()).to_dict()["at"]}
    found = {what: problems_of(doc) for what, doc in docs.items()}
    assert {what: p for what, p in found.items() if p} == {}
