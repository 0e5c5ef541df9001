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
