"""Reading the newest committed file from Spark's file-sink log (`_spark_metadata`) on local
files, without Spark: the newest log files first, never past a compact file."""

from __future__ import annotations

import json
from pathlib import Path

from runner.sink_walk import metadata_log, newest_file
from runner.storage import Storage


def write_log(sink: Path, name: str, *entries: tuple[str, str]) -> None:
    folder = sink / "_spark_metadata"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["v1"] + [json.dumps({"path": path, "action": action}) for path, action in entries]
    (folder / name).write_text("\n".join(lines) + "\n")


def test_the_newest_added_file_is_found_past_batches_that_added_none(tmp_path: Path) -> None:
    write_log(tmp_path, "8", ("file:/s/a.parquet", "add"))
    write_log(tmp_path, "9.compact", ("file:/s/a.parquet", "add"), ("file:/s/b.parquet", "add"))
    write_log(tmp_path, "10")
    write_log(tmp_path, "11", ("file:/s/b.parquet", "delete"))
    (tmp_path / "_spark_metadata" / ".11.crc").write_text("")
    storage = Storage(None)
    logs = metadata_log(storage, str(tmp_path))
    assert logs == [(8, "8"), (9, "9.compact"), (10, "10"), (11, "11")]
    assert newest_file(storage, str(tmp_path), logs) == (9, "file:/s/a.parquet"), "b deleted"
    write_log(tmp_path, "12", ("file:/s/c.parquet", "add"), ("file:/s/d.parquet", "add"))
    logs = metadata_log(storage, str(tmp_path))
    assert newest_file(storage, str(tmp_path), logs) == (12, "file:/s/d.parquet")


def test_a_compact_file_lists_every_file_still_there_so_the_walk_stops_at_it(
    tmp_path: Path,
) -> None:
    write_log(tmp_path, "8", ("file:/s/a.parquet", "add"))
    write_log(tmp_path, "9.compact")
    storage = Storage(None)
    assert newest_file(storage, str(tmp_path), metadata_log(storage, str(tmp_path))) is None
    assert metadata_log(storage, str(tmp_path / "missing")) == []
