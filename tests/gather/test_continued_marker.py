"""The marker of a checkpoint the deployer copied to continue from an older version's state,
as `inspect` reads it. Found by review: it was read with none of the care the other files of a
checkpoint get: no size cap; a file that is not UTF-8, or a folder in its place, failed the
whole read with a storage error instead of CheckpointUnreadable naming the file; its value was
rendered as it is (newlines, terminal escapes could forge `inspect`'s lines)."""

import json

import pytest

from flink_sql_runner.gather.checkpoint_reader import CheckpointUnreadable, read_checkpoint
from flink_sql_runner.model.checkpoint_report import CONTINUED_FILE
from flink_sql_runner.render.inspect import _checkpoint_lines
from flink_sql_runner.stores.storage import FileStorage


def _checkpoint(tmp_path):
    ck = tmp_path / "orders" / "2"
    (ck / "offsets").mkdir(parents=True)
    (ck / "commits").mkdir()
    (ck / "metadata").write_text(json.dumps({"id": "q"}))
    (ck / "offsets" / "0").write_text(
        'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n{}'
    )
    (ck / "commits" / "0").write_text("v1\n{}")
    return ck


@pytest.mark.parametrize("bad", ["not utf-8", "a folder"])
def test_a_marker_that_is_none_is_named_not_a_storage_failure(tmp_path, bad):
    ck = _checkpoint(tmp_path)
    if bad == "a folder":
        (ck / CONTINUED_FILE).mkdir()
    else:
        (ck / CONTINUED_FILE).write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(CheckpointUnreadable, match=CONTINUED_FILE):
        read_checkpoint(FileStorage(), str(ck))


def test_a_forged_continued_from_cannot_forge_inspect_lines(tmp_path):
    ck = _checkpoint(tmp_path)
    forged = "/ckpt/orders/1\n  batches     0 to 999 committed\x1b[2K"
    (ck / CONTINUED_FILE).write_text(json.dumps({"continued-from": forged}))
    lines = _checkpoint_lines(read_checkpoint(FileStorage(), str(ck)))
    text = "\n".join(lines)
    assert not any(line.startswith("  batches     0 to 999") for line in text.splitlines())
    assert "\x1b" not in text, text
