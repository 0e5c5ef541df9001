"""Progress lines: plain in CI logs, one live line on a terminal."""

from __future__ import annotations

import io

from flink_sql_runner.act.progress import Progress


def test_plain_lines_for_ci_logs():
    out = io.StringIO()
    progress = Progress(2, out, live=False)
    progress.started("a", "start-clean")
    progress.started("b", "restart-from-checkpoint")
    progress.finished("b", ok=False)
    progress.finished("a", ok=True)
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["[0/2] a: start-clean ...", "[0/2] b: restart-from-checkpoint ..."]
    assert lines[2].startswith("[1/2] b: FAILED (") and lines[3].startswith("[2/2] a: ok (")
    assert "\r" not in out.getvalue()


def test_a_live_line_on_a_terminal_names_what_is_in_flight():
    out = io.StringIO()
    progress = Progress(2, out, live=True)
    progress.started("a", "start-clean")
    progress.started("b", "start-clean")
    assert out.getvalue().endswith("\r\033[K[0/2] in progress: a, b")
    progress.finished("a", ok=True)
    assert out.getvalue().endswith("[1/2] a: ok (0.0 s)\n\r\033[K[1/2] in progress: b")


def test_a_job_held_back_is_skipped_not_failed():
    out = io.StringIO()
    progress = Progress(2, out, live=False)
    progress.started("producer", "start-clean")
    progress.finished("producer", ok=False)
    progress.finished("consumer", ok=False, skipped=True)
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("[1/2] producer: FAILED (")
    assert lines[2] == "[2/2] consumer: skipped"
