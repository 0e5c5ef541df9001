CREATE TABLE expensive_orders (
  order_id BIGINT, price DECIMAL(10, 2), buyer_id STRING, order_time TIMESTAMP,
  `__create_timestamp` TIMESTAMP, `__query_name` STRING, `__query_description` STRING,
  `__query_id` STRING, `__query_version` INT, `__query_create_timestamp` TIMESTAMP
) USING parquet
LOCATION '{state_dir}/output/expensive_orders';

CREATE TABLE kafka.`expensive-orders` USING kafka OPTIONS (
  kafka.bootstrap.servers '${KAFKA_BROKERS}',
  topic 'expensive-orders-v{query_version}',
  `kafka.client.id` "{job_name}"
);

CREATE TABLE lake.expensive_orders USING delta LOCATION 's3a://lake/expensive_orders'
