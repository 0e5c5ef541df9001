"""The runner benchmark's reference: the same query on the same input, written by hand.

    spark-submit handwritten.py --input DIR --output DIR --checkpoint DIR --sql SQL \
        --name N --description D --query-id ID --query-version V --query-create-timestamp TS

The same parquet source (schema, maxFilesPerTrigger) as a temporary view, the same SQL, the same
six metadata columns as typed literals, Spark's own parquet sink, an availableNow trigger.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> None:
    parser = argparse.ArgumentParser()
    for option in ("input", "output", "checkpoint", "schema", "sql", "name", "description"):
        parser.add_argument(f"--{option}", required=True)
    parser.add_argument("--max-files-per-trigger", required=True)
    parser.add_argument("--query-id", required=True)
    parser.add_argument("--query-version", type=int, required=True)
    parser.add_argument("--query-create-timestamp", required=True)
    args = parser.parse_args()

    spark = SparkSession.builder.getOrCreate()
    (
        spark.readStream.format("parquet")
        .schema(args.schema)
        .option("maxFilesPerTrigger", args.max_files_per_trigger)
        .load(args.input)
        .createOrReplaceTempView("orders")
    )
    created = datetime.fromisoformat(args.query_create_timestamp.replace("Z", "+00:00"))
    frame = spark.sql(args.sql).select(
        "*",
        F.current_timestamp().alias("__create_timestamp"),
        F.lit(args.name).cast("string").alias("__query_name"),
        F.lit(args.description).cast("string").alias("__query_description"),
        F.lit(args.query_id).cast("string").alias("__query_id"),
        F.lit(args.query_version).cast("int").alias("__query_version"),
        F.lit(created).cast("timestamp").alias("__query_create_timestamp"),
    )
    query = (
        frame.writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
