-- expect: line 6: table orders: Flink's WITH ('connector' = ...) clause: write USING kafka OPTIONS (key 'value', ...) with the Spark source's or sink's own options (docs/how-to/flink-sql-to-spark-sql.md)
-- expect: line 4: table orders: column 'order_time': Spark's TIMESTAMP takes no precision (Flink's TIMESTAMP(p)): write TIMESTAMP
CREATE TABLE orders (
  order_id BIGINT, price DOUBLE, order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json'
)
