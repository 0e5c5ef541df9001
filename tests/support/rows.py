"""Reading a sink back with Spark: the rows of each version, and whether each came exactly once."""

from __future__ import annotations


def rows_by_version(spark, path):
    """{version: sorted values} of the target, and the metadata seen per version."""
    try:
        df = spark.read.parquet(str(path))
    except Exception:  # noqa: BLE001 - no committed output yet
        return {}, {}
    values, meta = {}, {}
    for row in df.collect():
        version = row["__query_version"]
        values.setdefault(version, []).append(row["value"])
        meta.setdefault(version, set()).add(
            (row["__query_name"], row["__query_description"], row["__query_id"])
        )
    return {v: sorted(vals) for v, vals in values.items()}, meta


def assert_exactly_once(values_by_version):
    for version, values in values_by_version.items():
        assert values == list(range(len(values))), (
            f"version {version}: gaps or duplicates in {values[:20]}... ({len(values)} rows)"
        )
