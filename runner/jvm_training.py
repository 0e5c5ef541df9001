"""What a job's Spark driver does, done once so that a class-data-sharing archive holds the
classes it loads: spark-submitted by `flink-sql-runner jvm-archive`
(flink_sql_runner/targets/jvm_archive.py) with `-XX:ArchiveClassesAtExit`.

    jvm_training.py WORK_DIR

A session; a rate stream through the SQL the runner runs into parquet, and a windowed count
with a watermark into json (a state store), each to its first committed batch; the outputs read
back as batch queries; a clean stop (the archive is written at the JVM's exit).
"""

import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql.functions import window

work = sys.argv[1]
spark = SparkSession.builder.getOrCreate()
ticks = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
ticks.createOrReplaceTempView("ticks")
rows = spark.sql("SELECT value, timestamp FROM ticks WHERE value >= 0")
counts = (
    rows.withWatermark("timestamp", "1 second").groupBy(window("timestamp", "1 second")).count()
)
queries = [
    rows.writeStream.format("parquet")
    .option("path", os.path.join(work, "rows"))
    .option("checkpointLocation", os.path.join(work, "rows-checkpoint"))
    .trigger(processingTime="1 second")
    .start(),
    counts.writeStream.format("json")
    .outputMode("append")
    .option("path", os.path.join(work, "counts"))
    .option("checkpointLocation", os.path.join(work, "counts-checkpoint"))
    .trigger(processingTime="1 second")
    .start(),
]
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not all(
    os.path.exists(os.path.join(work, f"{name}-checkpoint", "commits", "0"))
    for name in ("rows", "counts")
):
    time.sleep(0.1)
for query in queries:
    query.stop()
spark.read.parquet(os.path.join(work, "rows")).count()
spark.stop()
