"""Small file operations on the checkpoint's storage: local files directly, anything else (s3a:,
hdfs:, ...) through Spark's Hadoop file system."""

from __future__ import annotations

import os
import tempfile
from typing import Any


def is_local(location: str) -> bool:
    """Whether `location` is on this machine's disk when the default file system is local."""
    return "://" not in location or location.startswith("file:")


def local_path(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :] or "/"
    return location.removeprefix("file:")


class Storage:
    """Small file operations on local paths and Hadoop URIs (s3a:, hdfs:, ...)."""

    def __init__(self, spark: Any):
        self.spark = spark
        self._default_is_local: bool | None = None

    def is_local(self, location: str) -> bool:
        """A path without a scheme is where Spark puts it: on Hadoop's default file system
        (`fs.defaultFS`), which is HDFS on most YARN clusters, not the driver's disk."""
        if location.startswith("file:"):
            return True
        if "://" in location:
            return False
        if self.spark is None:
            return True
        if self._default_is_local is None:
            default = self.spark._jsc.hadoopConfiguration().get("fs.defaultFS")
            self._default_is_local = str(default or "file:///").startswith("file:")
        return self._default_is_local

    def _fs(self, location: str) -> tuple[Any, Any]:
        jvm = self.spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        return path.getFileSystem(self.spark._jsc.hadoopConfiguration()), path

    def exists(self, location: str) -> bool:
        if self.is_local(location):
            return os.path.exists(local_path(location))
        fs, path = self._fs(location)
        return bool(fs.exists(path))

    def read(self, location: str) -> str | None:
        if self.is_local(location):
            try:
                with open(local_path(location), encoding="utf-8") as handle:
                    return handle.read()
            except FileNotFoundError:
                return None
        fs, path = self._fs(location)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            reader = self.spark._jvm.java.io.BufferedReader(
                self.spark._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            lines = []
            line = reader.readLine()
            while line is not None:
                lines.append(line)
                line = reader.readLine()
            return "\n".join(lines)
        finally:
            stream.close()

    def write(self, location: str, text: str) -> None:
        """Replace the file: atomically on local disks; one object PUT on S3."""
        if self.is_local(location):
            target = local_path(location)
            folder = os.path.dirname(target) or "."
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fsr-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
            return
        fs, path = self._fs(location)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def names(self, location: str) -> list[str]:
        """File and folder names directly under `location`; [] if it does not exist."""
        if self.is_local(location):
            try:
                return os.listdir(local_path(location))
            except (FileNotFoundError, NotADirectoryError):
                return []
        fs, path = self._fs(location)
        if not fs.exists(path):
            return []
        return [status.getPath().getName() for status in fs.listStatus(path)]
