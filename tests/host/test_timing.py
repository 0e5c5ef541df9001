"""The opt-in timing log: silent unless FLINK_SQL_RUNNER_TIMING_LOG names a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flink_sql_runner.host import timing


def test_marks_nothing_without_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv(timing.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    timing.mark("loaded", jobs=3)
    assert list(tmp_path.iterdir()) == []


def test_appends_one_json_line_per_mark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    log = tmp_path / "timing.jsonl"
    monkeypatch.setenv(timing.ENV, str(log))
    timing.mark("command", name="plan")
    timing.mark("loaded", jobs=3)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(d["event"], d.get("jobs")) for d in lines] == [("command", None), ("loaded", 3)]
    assert lines[0]["at"] <= lines[1]["at"]
