"""`inspect --state`: a checkpoint's stateful operators read through Spark's own state sources
(Spark 4.0+): `state-metadata` for the operators and their stores, `statestore` for the rows of
each store at the last committed batch. One local SparkSession that only reads the checkpoint.

Run by the deployer as `job_runner.py --probe state_probe --input IN.json --output OUT.json`
under spark-submit, the job's settings that reach its storage in spark-submit's properties file
(runner/probe_session.py). Input: `{"checkpoint": location as Spark reads it, "keys": how many
keys to sample per store}`. Output: `{"spark": version, "operators": [{"id", "name",
"store", "partitions", "min-batch", "max-batch", "rows": {partition: rows}, "sample":
[{"key", "value", "partition"}]} | {"id", "store", "error"}]}`, or `{"spark", "unavailable":
why}` on a Spark without the state sources (3.5) or whose Hadoop cannot open the checkpoint's
file system (s3a: without hadoop-aws), or `{"spark", "error"}` when the checkpoint's operators
cannot be read. Exit codes: 0 answered, 2 the input cannot be read.

Needs pyspark and the standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .probe_session import probe_session, read_request, write_answer


def probe(spark: Any, checkpoint: str, keys: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    answer: dict[str, Any] = {"spark": spark.version}
    if int(spark.version.split(".")[0]) < 4:
        answer["unavailable"] = (
            f"Spark {spark.version} has no state sources (state-metadata and statestore come "
            "with Spark 4.0)"
        )
        return answer
    unreachable = cannot_open(spark, checkpoint)
    if unreachable is not None:
        answer["unavailable"] = unreachable
        return answer
    try:
        stores = spark.read.format("state-metadata").load(checkpoint).collect()
    except Exception as exc:  # noqa: BLE001 - Spark's reason is the answer
        answer["error"] = _reason(exc)
        return answer
    operators = []
    for row in sorted(stores, key=lambda r: (r.operatorId, r.stateStoreName)):
        found: dict[str, Any] = {"id": row.operatorId, "name": row.operatorName,
                                 "store": row.stateStoreName}  # fmt: skip
        try:
            frame = (
                spark.read.format("statestore")
                .option("operatorId", row.operatorId)
                .option("storeName", row.stateStoreName)
                .load(checkpoint)
            )
            counts = frame.groupBy("partition_id").count().collect()
            sample = []
            if keys > 0:
                picked = (
                    frame.select(
                        F.to_json("key").alias("key"),
                        F.to_json("value").alias("value"),
                        "partition_id",
                    )
                    .orderBy("key", "partition_id")
                    .limit(keys)
                    .collect()
                )
                sample = [
                    {"key": _json(r.key), "value": _json(r.value), "partition": r.partition_id}
                    for r in picked
                ]
        except Exception as exc:  # noqa: BLE001 - one store's failure is its answer
            found["error"] = _reason(exc)
            operators.append(found)
            continue
        rows = {str(p): 0 for p in range(row.numPartitions or 0)}
        rows.update({str(r.partition_id): r["count"] for r in counts})
        found.update({
            "partitions": row.numPartitions,
            "min-batch": row.minBatchId,
            "max-batch": row.maxBatchId,
            "rows": rows,
            "sample": sample,
        })  # fmt: skip
        operators.append(found)
    answer["operators"] = operators
    return answer


#: What S3A needs that a Spark does not bring: said when its Hadoop has no file system for s3a.
S3A_JARS = (
    "S3A needs hadoop-aws and the AWS SDK, which this Spark does not have: --state starts its "
    "Spark with the job's spark.jars and spark.jars.packages (docs/how-to/s3.md)"
)


def cannot_open(spark: Any, checkpoint: str) -> str | None:
    """Why Spark's Hadoop cannot open the checkpoint's file system (one line), or None."""
    try:
        path = spark._jvm.org.apache.hadoop.fs.Path(checkpoint)
        path.getFileSystem(spark._jsc.hadoopConfiguration())
    except Exception as exc:  # noqa: BLE001 - Hadoop's reason is the answer
        scheme = checkpoint.split("://", 1)[0] if "://" in checkpoint else "the default"
        why = f"Spark cannot open {checkpoint}: {_reason(exc)}"
        return f"{why}; {S3A_JARS}" if scheme in ("s3a", "s3", "s3n") else why
    return None


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _reason(exc: Exception) -> str:
    """The first line of Spark's message; of a Java exception (py4j's), the exception's own
    (`class: message`), not py4j's `An error occurred while calling ...`."""
    java = getattr(exc, "java_exception", None)
    try:
        text = str(java.toString() if java is not None else exc).strip().splitlines()
    except Exception:  # noqa: BLE001 - the gateway may be gone
        text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="state_probe")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        request = read_request(args.input)
        checkpoint = str(request["checkpoint"])
        keys = int(request.get("keys") or 0)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"state_probe: cannot read {args.input}: {exc}", file=sys.stderr)
        return 2
    spark = probe_session("state-probe", 1, {"spark.sql.shuffle.partitions": "1"})
    try:
        answer = probe(spark, checkpoint, keys)
    finally:
        spark.stop()
    write_answer(args.output, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
