"""The lock on a local folder (stores/local_lock.py) across real processes: every create,
renewal, take-over and release is one atomic compare-and-swap, so no two holders ever believe they
hold it and no lock is lost; a folder that cannot hold the lock is one clear error."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import EXIT_INVALID, FsrError
from flink_sql_runner.stores.local_lock import FileLockBackend
from flink_sql_runner.stores.lock import Holder
from tests.support.cli import REPO, run_cli

PROCESSES = 4
ROUNDS = 400


def _holder(owner: str) -> Holder:
    return Holder(owner, "host", os.getpid(), "deploy", "2026-01-01T00:00:00Z", 60.0)


def _race(
    lock: str, log: str, me: int, rounds: int, start: multiprocessing.synchronize.Event
) -> None:
    """One process, many rounds: read the lock, then renew it when it is its own, take it
    over when it is another's, create it when absent, release it now and then; every write that
    succeeded is logged as (version it replaced, version it wrote)."""
    backend = FileLockBackend(Path(lock))
    start.wait()
    with open(log, "w") as out:
        for round_ in range(rounds):
            try:
                _one_round(backend, me, round_, out)
            except OSError as exc:  # a backend's call must never fail because of another's
                out.write(json.dumps(["error", repr(exc)]) + "\n")


def _one_round(backend: FileLockBackend, me: int, round_: int, out: Any) -> None:
    holder, token = backend.read()
    mine = _holder(f"{me}-{round_}")
    if token is None:
        if backend.create(mine) is not None:
            out.write(json.dumps([None, mine.owner]) + "\n")
        return
    seen = holder.owner if holder else None
    if holder is not None and holder.owner.startswith(f"{me}-") and round_ % 7 == 0:
        if backend.removed(token):
            out.write(json.dumps([seen, None]) + "\n")
        return
    if backend.replace(mine, token) is not None:
        out.write(json.dumps([seen, mine.owner]) + "\n")


def test_renewals_and_take_overs_racing_in_processes_never_make_two_holders(tmp_path: Path):
    """Four processes renew, take over, create and release one folder lock as fast as they
    can. Every version of the lock must be replaced or released by exactly one process, and
    every version but the last must be replaced or released: a version replaced twice is two
    holders that each believe they hold the lock, a version that went without anyone replacing
    it is a lock lost (before, renewal renamed the lock away, compared, unlinked and recreated
    it: a waiter's create won the gap, and the put-back rename overwrote a lock just made)."""
    lock = tmp_path / ".lock"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    logs = [tmp_path / f"race-{me}.jsonl" for me in range(PROCESSES)]
    workers = [
        context.Process(target=_race, args=(str(lock), str(logs[me]), me, ROUNDS, start))
        for me in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=300)
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join()
    assert [w.exitcode for w in workers] == [0] * PROCESSES
    lines = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    errors = [message for kind, message in lines if kind == "error"]
    writes = [tuple(line) for line in lines if line[0] != "error"]
    replaced = Counter(old for old, _ in writes if old is not None)
    twice = {version: n for version, n in replaced.items() if n > 1}
    assert not twice, f"versions replaced by more than one process: {twice}"
    written = {new for _, new in writes if new is not None}
    holder, _ = FileLockBackend(lock).read()
    last = {holder.owner} if holder else set()
    lost = written - set(replaced) - last
    assert not lost, f"{len(lost)} versions of the lock went without anyone replacing them"
    assert not errors, f"{len(errors)} calls failed, e.g. {errors[0]}"
    assert len(writes) > ROUNDS  # the race did happen


def test_a_state_folder_under_a_regular_file_is_one_clear_error(tmp_path: Path):
    (tmp_path / "afile").write_text("")
    backend = FileLockBackend(tmp_path / "afile" / "state" / "manifests" / ".lock")
    with pytest.raises(FsrError) as raised:
        backend.create(_holder("me"))
    assert raised.value.exit_code == EXIT_INVALID
    assert str(raised.value) == (
        f"the folder {tmp_path / 'afile' / 'state' / 'manifests'} cannot hold the manifest "
        f"store's lock: {tmp_path / 'afile'} is not a folder"
    )


def test_deploy_with_an_unusable_state_folder_exits_2_naming_it(tmp_path: Path):
    """Before, a traceback from the lock's mkdir."""
    (tmp_path / "afile").write_text("")
    state = tmp_path / "afile" / "state"
    result = run_cli(
        "deploy",
        "--path", str(REPO / "examples" / "queries" / "expensive-orders.yaml"),
        "--table-definition-path", str(REPO / "examples" / "tables"),
        "--state-dir", str(state),
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"error: the folder {state / 'manifests'} cannot hold the manifest store's lock: "
        f"{tmp_path / 'afile'} is not a folder"
    ]
