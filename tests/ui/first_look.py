"""The page as a new user first opens it, after the README's first command (the four example
jobs deployed into ./.flink-sql-runner/): `flink-sql-runner ui` shows them running, and a job's
page shows its version, its checkpoint and its log. `.ci/run` runs it in its stage 1, on the
jobs real Spark runs there:

    python -m tests.ui.first_look
"""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import urllib.request
from html import unescape

EXAMPLES = ("buyer-orders-code", "expensive-orders", "order-stats", "tick-log")


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return str(answer.read().decode())


def main() -> int:
    server = subprocess.Popen(
        [sys.executable, "-m", "flink_sql_runner", "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 60)
        line = server.stdout.readline() if ready else ""
        found = re.search(r" on (http://127\.0\.0\.1:\d+/)$", line.strip())
        assert found, f"ui did not say where it serves: {line!r}"
        url = found.group(1)
        fleet = _get(url)
        for name in EXAMPLES:
            row = re.search(rf'<tr data-job="{name}">(.*?)</tr>', fleet, re.S)
            assert row, f"{name} is not on the fleet page"
            cells = [_text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.group(1), re.S)]
            assert cells[2].startswith("healthy") and cells[3].startswith("yes"), (name, cells)
            assert cells[4] == "v1", (name, cells)
        page = _text(_get(f"{url}jobs/order-stats"))
        for said in (
            "Stored version v1",
            "checkpoints/order-stats/1",
            "[flink-sql-runner] job order-stats v1 run",
        ):
            assert said in page, f"the job's page does not show {said!r}"
        print(
            f"ui: the {len(EXAMPLES)} example jobs running on {url}; order-stats' page shows "
            "its version, checkpoint and log"
        )
        return 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
