"""Rows, and a checksum of the query's own columns, of parquet folders (spark-submit).

spark-submit count_rows.py DIR [DIR ...]   -> one JSON line {"DIR": [rows, checksum], ...}
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
        row = spark.read.parquet(path).agg(F.count("*"), F.sum("id"), F.sum("gross")).first()
        found[path] = [int(row[0]), int(row[1] or 0), float(row[2] or 0.0)]
    print(json.dumps(found))
    spark.stop()


if __name__ == "__main__":
    main()
