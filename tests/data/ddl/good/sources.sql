-- Source tables, as Spark SQL DDL. Parsed by the deployer, never run.
CREATE TABLE orders (
  order_id   BIGINT,
  price      DECIMAL(10, 2) NOT NULL COMMENT 'in EUR',
  buyer_id   STRING,
  order_time TIMESTAMP,
  WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE
) USING json
OPTIONS (path 'data/orders', maxFilesPerTrigger 10, multiLine false)
COMMENT 'Orders as JSON lines';

/* A Kafka topic: the source's columns are Spark's own (key, value, ...), so none are
   declared; the watermark is on the source's `timestamp` column. */
create table if not exists `kafka`.`click-events` (
  WATERMARK FOR `timestamp` AS `timestamp` - INTERVAL '30 seconds'
) using kafka options (
  'kafka.bootstrap.servers' = '${KAFKA_BROKERS}',
  subscribe = 'clicks',
  startingOffsets 'earliest',
  maxOffsetsPerTrigger 5000
);

CREATE TABLE ticks USING rate OPTIONS (rowsPerSecond 5);

-- A table of Spark's catalog (a Delta table there): no USING, or a table format without
-- a location. Read with readStream.table, written with writeStream.toTable.
CREATE TABLE lake.customers (id BIGINT, name STRING) USING delta;
CREATE TABLE analytics.events;
