"""A streaming job's start, timed from inside: spark-submitted by tests/benchmarks/jvm_start.py.

    first_batch.py OUT_DIR STARTED_AT

Starts a session, a `rate-micro-batch` stream into parquet (the shape of the suite's jobs), waits
for its first committed batch, stops, and prints one JSON line: seconds from STARTED_AT (the
parent's wall clock just before it spawned spark-submit) to the session, to the query started,
to the first committed batch, and to the end of the stop.
"""

import json
import os
import sys
import time

out, started_at = sys.argv[1], float(sys.argv[2])
marks = {"python": time.time() - started_at}

from pyspark.sql import SparkSession  # noqa: E402 - timed from here

spark = SparkSession.builder.getOrCreate()
marks["session"] = time.time() - started_at
stream = (
    spark.readStream.format("rate-micro-batch")
    .option("rowsPerBatch", 7)
    .option("numPartitions", 2)
    .load()
)
spark.sql("SELECT 1")  # the runner's own SQL before its query
query = (
    stream.selectExpr("value", "current_timestamp() AS __create_timestamp")
    .writeStream.format("parquet")
    .option("path", os.path.join(out, "sink"))
    .option("checkpointLocation", os.path.join(out, "checkpoint"))
    .trigger(processingTime="1 second")
    .start()
)
marks["query"] = time.time() - started_at
while not os.path.exists(os.path.join(out, "checkpoint", "commits", "0")):
    time.sleep(0.02)
marks["first-batch"] = time.time() - started_at
query.stop()
spark.stop()
marks["stopped"] = time.time() - started_at
print("FIRST-BATCH " + json.dumps(marks), flush=True)
