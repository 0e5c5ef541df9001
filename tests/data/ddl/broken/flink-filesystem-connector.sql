-- expect: line 4: table archive: Flink's WITH ('connector' = ...) clause: write USING parquet LOCATION '<path>' OPTIONS (key 'value', ...) with the Spark source's or sink's own options (docs/how-to/flink-sql-to-spark-sql.md)
CREATE TABLE archive (id BIGINT, name STRING)
-- a Flink filesystem sink
WITH ('connector' = 'filesystem', 'path' = 's3://bucket/archive', 'format' = 'parquet');
