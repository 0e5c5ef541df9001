"""A checkpoint copied to continue from another version's state (act/state_copy.py) claims its
file sink (runner/file_sink.py). Found by review: it claimed from its last *committed* batch +
1, not past what the old version's sink already holds. When v1 was stopped (killed) between its
file sink's commit of batch 8 and its checkpoint's commit, v2's copy claimed sink id 8 (a batch
v1 wrote); v2 failed without a new batch and was rolled back to v1, whose restart saw the claim
at 8 and moved its re-run batch 8 to sink id 9: batch 8's rows landed twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from runner import file_sink
from runner.storage import Storage


def _doc(ckpt: Path, version: int) -> dict:
    return {
        "checkpoint-location": str(ckpt),
        "name": "orders",
        "meta": {"query-version": version},
        "run-id": f"run-{version}",
    }


def test_rollback_after_continue_does_not_write_a_held_batch_twice(tmp_path: Path):
    storage = Storage(None)
    out = tmp_path / "out"
    v1, v2 = tmp_path / "ckpt" / "1", tmp_path / "ckpt" / "2"
    # v1: a new sink (segments [[0, 0]]), claimed from 0 by its first run.
    (v1 / "offsets").mkdir(parents=True)
    (v1 / "commits").mkdir()
    (v1 / "metadata").write_text('{"id": "x"}')
    segments = file_sink.sink_batch_segments(storage, _doc(v1, 1), str(out))
    assert segments == [[0, 0]]
    # v1 ran batches 0..8; its sink committed 8, its checkpoint was killed before commits/8.
    (out / "_spark_metadata").mkdir(parents=True)
    for b in range(9):
        (v1 / "offsets" / str(b)).write_text("v1\n{}\n{}")
        (out / "_spark_metadata" / str(b)).write_text("v1\n")
    for b in range(8):
        (v1 / "commits" / str(b)).write_text("v1\n{}")
    # The deployer's copy (act/state_copy.py): every file, then the marker.
    shutil.copytree(v1, v2)
    (v2 / file_sink.CONTINUED_FILE).write_text(json.dumps({"continued-from": str(v1)}))
    # v2's first run: claims the sink; re-runs batch 8, which Spark's sink skips (held).
    v2_segments = file_sink.sink_batch_segments(storage, _doc(v2, 2), str(out))
    assert file_sink.sink_batch_id(v2_segments)(8) == 8
    # v2 fails without a new batch: the rollback restarts v1 on its own checkpoint.
    v1_segments = file_sink.sink_batch_segments(storage, _doc(v1, 1), str(out))
    # v1 re-runs batch 8: it must keep sink id 8 (already held: skipped), not write it as 9.
    assert file_sink.sink_batch_id(v1_segments)(8) == 8, v1_segments
