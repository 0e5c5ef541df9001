-- The example source tables as Spark SQL DDL: the same tables as ../tables/sources.yaml.
-- Pass this folder instead: --table-definition-path examples/tables-sql
-- The deployer parses these statements and never runs them.

CREATE TABLE orders (
  order_id   BIGINT,
  price      DOUBLE,
  buyer_id   STRING,
  order_time TIMESTAMP,
  WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE
) USING json
OPTIONS (path 'examples/data/orders', maxFilesPerTrigger 10)
COMMENT 'Orders as JSON lines, one file per drop';

-- Spark's rate source: its columns (timestamp, value) are Spark's own.
CREATE TABLE ticks USING rate OPTIONS (rowsPerSecond 5)
COMMENT 'A steady synthetic stream (Spark\'s rate source)';
