"""Input of the runner benchmark: ROWS rows of orders as FILES parquet files (spark-submit).

spark-submit generate_input.py --rows 4000000 --files 8 --out DIR
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    spark = SparkSession.builder.getOrCreate()
    frame = spark.range(0, args.rows, 1, args.files).select(
        F.col("id"),
        ((F.col("id") * 7919) % 100_000 / 100.0).alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"),
        F.timestamp_seconds(F.lit(1_767_225_600) + F.col("id")).alias("ts"),
    )
    frame.write.mode("overwrite").parquet(args.out)
    spark.stop()


if __name__ == "__main__":
    main()
