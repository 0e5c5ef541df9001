-- expect: line 6: table clicks: column 'proc_time' is computed (Flink's `name AS expression`): compute it in the job's query
-- expect: line 7: table clicks: column 'kafka_ts' is a Flink metadata column: Spark's sources give their metadata as fixed columns (the Kafka source's key, topic, partition, offset, timestamp)
-- expect: line 8: table clicks: column 'payload': Flink's ROW: write STRUCT<name: TYPE, ...>
CREATE TABLE clicks (
  url STRING,
  proc_time AS PROCTIME(),
  kafka_ts TIMESTAMP_LTZ METADATA FROM 'timestamp',
  payload ROW<a INT, b STRING>
) USING json LOCATION 'data/clicks'
