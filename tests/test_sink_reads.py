"""The scenarios' sink reads (tests/support/rows.py): a local file sink is read with Spark again
only once its log (`_spark_metadata/`) lists other files; what a read gave is never shared."""

from __future__ import annotations

from pathlib import Path

from tests.support.rows import read_sink


def test_a_sink_is_read_again_only_when_its_log_changes(tmp_path: Path) -> None:
    sink, reads = tmp_path / "out", []
    (sink / "_spark_metadata").mkdir(parents=True)
    (sink / "_spark_metadata" / "0").write_text("v1\n")

    def read() -> dict[int, list[int]]:
        reads.append(1)
        return {1: [0, 1]}

    first = read_sink(sink, "values", read)
    first[1].append(2)  # a caller's change stays its own
    assert read_sink(sink, "values", read) == {1: [0, 1]} and len(reads) == 1
    assert read_sink(sink, "rows", read) and len(reads) == 2  # another reader reads itself
    (sink / "_spark_metadata" / "1").write_text("v1\n")  # a batch committed
    read_sink(sink, "values", read)
    assert len(reads) == 3


def test_a_sink_without_a_log_here_is_read_every_time(tmp_path: Path) -> None:
    reads = []
    for _ in range(2):
        read_sink(tmp_path / "nothing-yet", "values", lambda: reads.append(1) or {})
    read_sink("s3a://bucket/out", "values", lambda: reads.append(1) or {})
    assert len(reads) == 3
