"""Rows per query version, and checksums of the query's own columns, of parquet folders
(spark-submit).

    spark-submit count_rows.py DIR [DIR ...]
    -> one JSON line {"DIR": {"VERSION": [rows, sum of id, sum of gross]}, ...}
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> None:
    spark = SparkSession.builder.getOrCreate()
    found = {}
    for path in sys.argv[1:]:
        rows = (
            spark.read.parquet(path)
            .groupBy("__query_version")
            .agg(F.count("*"), F.sum("id"), F.sum("gross"))
            .collect()
        )
        found[path] = {
            str(r[0]): [int(r[1]), int(r[2] or 0), round(float(r[3] or 0), 2)] for r in rows
        }
    print(json.dumps(found))
    spark.stop()


if __name__ == "__main__":
    main()
