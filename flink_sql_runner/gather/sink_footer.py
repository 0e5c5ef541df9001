"""What a file sink's readers read today, told by the plan itself where it can, so that a plan
of a changed job starts no Spark to read a sink.

The same walk as the runner's (runner/sink_walk.py's `history_of`: the sink's claims, Spark's
file-sink log, the newest file it committed), on the deployer's storage; the newest file's
schema is read from its footer's last bytes (runner/parquet_footer.py). Only where that answer
is Spark's own: a parquet file Spark wrote, directly in the sink's folder (a file in a partition
folder has columns its path gives). Anything else, and any failure, returns None: the probe
reads the sink with Spark, as before, and says what it finds.
"""

from __future__ import annotations

import posixpath
from typing import Any

from flink_sql_runner._runner.parquet_footer import (
    MAGIC,
    MAX_FOOTER,
    footer_length,
    spark_read_fields,
)
from flink_sql_runner._runner.schema_rules import Field
from flink_sql_runner._runner.sink_walk import NotReadHere, history_of
from flink_sql_runner.errors import FsrError
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.stores.s3uri import is_s3_uri
from flink_sql_runner.stores.storage import Storage, local_path

#: The bytes read from a file's end first: a footer of a streaming batch's file fits (one row
#: group, a few dozen columns: a few KB); a longer one is read again at its length.
FIRST_READ = 64 * 1024
#: The largest claim or log file the plan reads itself: a compact log of a sink of a few
#: hundred thousand files. A larger one is Spark's to read, in the probe's process.
MAX_TEXT = 32 * 1024 * 1024


class _AsRunnerStorage:
    """The deployer's storage with the two calls the runner's walk makes; a file is read up to
    MAX_TEXT bytes, and only a regular one (`read_tail`)."""

    def __init__(self, storage: Storage):
        self.storage = storage

    def names(self, location: str) -> list[str]:
        return self.storage.file_names(location) + self.storage.dir_names(location)

    def read(self, location: str) -> str | None:
        data = self.storage.read_tail(location, MAX_TEXT + 1)
        if data is None:
            return None
        if len(data) > MAX_TEXT:
            raise NotReadHere(location)
        return data.decode("utf-8")


def sink_history_here(storage: Storage, fmt: str | None, path: str) -> dict[str, Any] | None:
    """The runner's `sink_history` of a file sink whose format is given by its short name, or
    None: Spark must read it. A parquet file's schema is read from its footer; json, csv and
    text files keep none (their claims say it); orc and avro files are read by Spark. Any
    failure here is None too: the probe reads the sink, and says what it finds."""
    if fmt not in FILE_FORMATS:
        return None
    try:
        return history_of(
            _AsRunnerStorage(storage), fmt, path, lambda at: _footer_fields(storage, fmt, at, path)
        )
    except Exception:  # noqa: BLE001 - NotReadHere, and any failure: Spark's read says why
        return None


def _footer_fields(storage: Storage, fmt: str, location: str, base: str) -> list[Field]:
    if fmt != "parquet" or not _directly_in(location, base):
        raise NotReadHere(location)
    try:
        fields = _read_footer(storage, location)
    except Exception:  # noqa: BLE001 - a failed read is Spark's to try, and to tell
        fields = None
    if fields is None:
        raise NotReadHere(location)
    return fields


def _read_footer(storage: Storage, location: str) -> list[Field] | None:
    """The file's fields from its footer; None when it is no whole parquet file (its header
    magic, its footer and the two between) or its footer says nothing Spark's reader takes."""
    tail = storage.read_tail(location, FIRST_READ)
    length = None if tail is None else footer_length(tail)
    if tail is None or length is None or length > MAX_FOOTER:
        return None
    if len(tail) == FIRST_READ and length + 12 > FIRST_READ:
        tail = storage.read_tail(location, length + 12)
        if tail is None:
            return None
    if len(tail) < length + 12:
        return None  # shorter than `PAR1`, the footer, its length and `PAR1`
    if len(tail) < FIRST_READ and tail[:4] != MAGIC:
        return None  # the whole file was read: it begins with `PAR1`, as parquet-mr checks
    return spark_read_fields(tail)


def _directly_in(location: str, folder: str) -> bool:
    """Whether the file at `location` (as Spark's log names it, decoded) is one Spark reads
    directly in `folder`: a name that is not hidden (`_`, `.`), no `.` or `..` step (which the
    system would follow through a link where Hadoop drops it), and a local path, `file:/` or
    `file:///` (another host's is no file Spark reads here), or S3."""
    name = location.rstrip("/").rsplit("/", 1)[-1]
    if not name or name.startswith(("_", ".")) or location == folder:
        return False
    steps = location.split("://", 1)[-1].split("/")
    if "." in steps or ".." in steps:
        return False
    if is_s3_uri(location) and is_s3_uri(folder):
        return _s3_key_path(location) == _s3_key_path(folder.rstrip("/") + "/x")
    if is_s3_uri(location) or is_s3_uri(folder) or "://" in location.replace("file:///", ""):
        return False
    try:
        file, home = local_path(location), local_path(folder)
    except FsrError:
        return False
    return file.is_absolute() and posixpath.normpath(str(file.parent)) == posixpath.normpath(
        str(home)
    )


def _s3_key_path(uri: str) -> str:
    """A file's folder on S3, the same for s3:// and s3a://."""
    rest = uri.split("://", 1)[1]
    return rest.rsplit("/", 1)[0]
