"""The copy of a checkpoint a new version continues from (act/state_copy.py). Found by review:
on a local checkpoint a symlink was listed as a file and read through, so whatever it points at
(another job's state, a credentials file the deployer can read) was written, as content, into
the new version's checkpoint; a linked folder was skipped without a word. A checkpoint holds
only what Spark wrote; a link in it is forged (a code job's driver can write there)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flink_sql_runner.act.state_copy import CopyFailed, copy_state
from flink_sql_runner.stores.storage import FileStorage


def test_a_symlink_in_the_old_checkpoint_is_not_copied_as_its_target(tmp_path: Path):
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = hunter2\n")
    old, new = tmp_path / "ckpt" / "orders" / "1", tmp_path / "ckpt" / "orders" / "2"
    (old / "offsets").mkdir(parents=True)
    (old / "metadata").write_text('{"id": "x"}')
    (old / "offsets" / "0").write_text("v1\n{}\n{}")
    os.symlink(secret, old / "offsets" / "leak")
    with pytest.raises(CopyFailed, match="is a symbolic link"):
        copy_state(FileStorage(), str(old), str(new), lambda: None, lambda s: None)
    assert not (new / "offsets" / "leak").exists()


def test_a_linked_folder_in_the_old_checkpoint_is_refused_not_skipped(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "0").mkdir(parents=True)
    old, new = tmp_path / "ckpt" / "orders" / "1", tmp_path / "ckpt" / "orders" / "2"
    old.mkdir(parents=True)
    (old / "metadata").write_text('{"id": "x"}')
    os.symlink(elsewhere, old / "state")
    with pytest.raises(CopyFailed, match="is a symbolic link"):
        copy_state(FileStorage(), str(old), str(new), lambda: None, lambda s: None)


def test_a_file_that_fails_stops_the_copy_of_the_rest():
    """Found by review: after a file failed for good, every other file of the checkpoint was
    still copied (each asked again with its pauses) before the copy failed: on S3, with ten
    thousand state files and a SlowDown, the job stayed down long after the copy was known to
    fail, and a lease that ran out meanwhile left it down instead of rolled back."""
    import threading

    from flink_sql_runner.stores.storage import StorageError
    from tests.support.fakes import FakeStorage

    old, new = "/ckpt/orders/1", "/ckpt/orders/2"
    storage = FakeStorage()
    storage.add_checkpoint(old, 7)
    for i in range(400):
        storage.files[f"{old}/state/0/{i % 4}/{i}.delta"] = b"x"
    read = storage.read_bytes
    tried, lock = [], threading.Lock()

    def failing(location):
        with lock:
            tried.append(location)
        if location == f"{old}/commits/0":  # the first file in the copy's order
            raise StorageError(f"cannot read {location}: SlowDown (HTTP 503)")
        return read(location)

    storage.read_bytes = failing
    with pytest.raises(CopyFailed, match="commits/0"):
        copy_state(storage, old, new, lambda: None, lambda _: None, workers=4)
    assert len(tried) <= 4 * 4 + 4, f"{len(tried)} files read after the copy was known to fail"
