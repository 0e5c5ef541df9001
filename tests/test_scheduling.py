"""How the suite spreads over two processes (tests/support/scheduling.py): every test that uses a
server started once per run is in that server's group, and a group's tests run in one worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import scheduling
from tests.support.scheduling import group_ended, order, scope_of, until_group_ends


def test_every_test_that_uses_a_server_is_in_its_group(tmp_path: Path) -> None:
    out = tmp_path / "users.json"
    found = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p",
         "no:cacheprovider", "-p", "tests.support.scheduling", "tests",
         "--assert=plain"],  # nothing runs: rewriting every module's asserts was most of the time
        capture_output=True, text=True, timeout=300, check=False,
        cwd=Path(__file__).resolve().parents[1], env={**os.environ, "FSR_SERVER_USERS": str(out)},
    )  # fmt: skip
    assert found.returncode == 0, found.stdout[-2000:] + found.stderr[-2000:]
    users = json.loads(out.read_text())
    assert {group for _, group in users} == {"kafka", "hadoop"}, "the suite uses both servers"
    wrong = [nodeid for nodeid, group in users if scope_of(nodeid) != f"server:{group}"]
    assert not wrong, "add their files to SERVER_FILES: " + ", ".join(wrong)


def test_the_long_kinds_begin_first_and_a_files_tests_stay_together() -> None:
    nodeids = ["tests/a.py::x", "tests/kafka/test_k.py::y", "tests/a.py::z", "tests/e.py::w",
               "tests/yarn/test_y.py::v", "tests/a.py::u"]  # fmt: skip
    marks = [set(), {"kafka"}, {"spark"}, {"e2e"}, {"yarn"}, set()]
    got = [nodeids[i] for i in order(nodeids, marks)]
    assert got == [
        "tests/kafka/test_k.py::y",
        "tests/yarn/test_y.py::v",
        "tests/e.py::w",
        "tests/a.py::x",
        "tests/a.py::z",
        "tests/a.py::u",
    ]


def test_a_groups_server_stops_after_its_last_test_and_only_then(monkeypatch) -> None:
    monkeypatch.setattr(scheduling, "_STARTED", {})
    stopped: list[str] = []
    with until_group_ends("kafka") as stack:
        stack.callback(stopped.append, "broker")
        group_ended("tests/kafka/test_a.py::one", "tests/kafka/test_a.py::two")
        group_ended("tests/kafka/test_a.py::two", "tests/kafka/test_b.py::three")
        group_ended("tests/yarn/test_y.py::other", "tests/cli/test_c.py::four")
        assert stopped == [], "the group goes on: the broker stays"
        group_ended("tests/kafka/test_b.py::three", "tests/cli/test_c.py::four")
        assert stopped == ["broker"], "the group's last test: the broker stops"
    assert stopped == ["broker"], "stopped once, not again at the fixture's end"
    with until_group_ends("hadoop") as stack:
        stack.callback(stopped.append, "minicluster")
        group_ended("tests/yarn/test_y.py::last", None)
    assert stopped == ["broker", "minicluster"], "the run's last test ends its group too"


def test_a_groups_tests_run_in_one_worker(tmp_path: Path) -> None:
    """The scheduler, through pytest-xdist itself, on a small suite of its own."""
    (tmp_path / "tests" / "kafka").mkdir(parents=True)
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            """
            from tests.support.scheduling import make_scheduler

            def pytest_xdist_make_scheduler(config, log):
                return make_scheduler(config, log)
            """
        )
    )
    body = textwrap.dedent(
        """
        import json, os, time

        def record(name):
            time.sleep(0.3)
            with open(os.environ["RECORD"], "a") as out:
                out.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
        """
    )
    for name in ("one", "two"):
        tests = "".join(f"def test_{name}{i}():\n    record('{name}{i}')\n" for i in range(3))
        (tmp_path / "tests" / "kafka" / f"test_{name}.py").write_text(body + tests)
    tests = "".join(f"def test_other{i}():\n    record('other{i}')\n" for i in range(6))
    (tmp_path / "tests" / "test_other.py").write_text(body + tests)
    record = tmp_path / "record.jsonl"
    env = {"RECORD": str(record), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q",
         "--no-loadscope-reorder", "tests"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = [json.loads(line) for line in record.read_text().splitlines()]
    workers = {worker for name, worker in ran if not name.startswith("other")}
    assert len(ran) == 12 and len(workers) == 1, ran
    assert len({worker for _, worker in ran}) == 2, "both workers had work"
