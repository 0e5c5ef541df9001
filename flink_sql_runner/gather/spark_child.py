"""A local Spark in a child process: one of the runner's probes (`runner/schema_probe.py`,
`runner/state_probe.py`, `runner/preview_probe.py`) run as
`python -m flink_sql_runner._runner.<probe>` on a request written to a private temporary
folder, its answer read back. The deployer never imports
pyspark; a probe that hangs is killed with its process group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RUNNER_PACKAGE = "flink_sql_runner._runner"


def run_child(
    probe: str, request: dict[str, Any], timeout: float
) -> tuple[dict[str, Any], str | None]:
    """The answer of runner probe `probe` to `request`, and why there is none (None when it
    answered)."""
    with tempfile.TemporaryDirectory(prefix=f"fsr-{probe}-") as folder:
        given, taken = Path(folder, "in.json"), Path(folder, "out.json")
        given.touch(mode=0o600)  # a job's settings may hold a secret
        given.write_text(json.dumps(request))
        command = [sys.executable, "-m", f"{RUNNER_PACKAGE}.{probe}", "--input", str(given),
                   "--output", str(taken)]  # fmt: skip
        env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=folder,
            env=env,
            start_new_session=True,
        )
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {}, f"it took over {timeout:.0f} s"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        try:
            return json.loads(taken.read_text()), None
        except (OSError, ValueError):
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            return {}, f"it exited {process.returncode}: {tail[0][:300]}"
