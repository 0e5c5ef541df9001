"""What the deployer knows about Spark's data source formats."""

from __future__ import annotations

#: Formats Spark's file sink writes; the only output mode it supports is append. (`avro` needs
#: the spark-avro package on the cluster; it is a file format all the same.)
FILE_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text", "avro"})
#: Formats that can only be read.
SOURCE_ONLY_FORMATS = frozenset({"rate", "rate-micro-batch", "socket"})
#: Formats that can only be written.
SINK_ONLY_FORMATS = frozenset({"console", "memory", "noop", "foreach"})


def file_format(fmt: object) -> str | None:
    """The short name of the file format `fmt` names, or None when it names none. Spark also
    takes its older and class names for them (`org.apache.spark.sql.parquet`,
    `com.databricks.spark.csv`, `...datasources.parquet.ParquetFileFormat`, a
    `...ParquetDataSourceV2`), and writes each through its file sink all the same."""
    if not isinstance(fmt, str):
        return None
    if fmt in FILE_FORMATS:
        return fmt
    lower = fmt.lower()
    if not lower.startswith(("org.apache.spark.sql.", "com.databricks.spark.")):
        return None
    for segment in reversed(lower.split(".")):
        for short in FILE_FORMATS:
            if segment in (short, f"{short}fileformat", f"{short}datasourcev2"):
                return short
    return None


#: Format names Spark or a common connector knows; a near miss of one of them is a typo.
KNOWN_FORMATS = (
    FILE_FORMATS
    | SOURCE_ONLY_FORMATS
    | SINK_ONLY_FORMATS
    | {"kafka", "avro", "xml", "binaryFile", "delta", "iceberg", "hudi", "kinesis"}
)
KNOWN_BY_LOWER = {f.lower(): f for f in KNOWN_FORMATS}
#: Formats whose tables live in a catalog: without a location, Spark keeps such a table in its
#: own catalog (a `table:` entry), with one it reads and writes the files at that path.
TABLE_FORMATS = frozenset({"delta", "iceberg", "hudi"})
