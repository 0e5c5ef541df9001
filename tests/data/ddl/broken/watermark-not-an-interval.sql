-- expect: line 5: table orders: write WATERMARK FOR column AS column - INTERVAL 'n' UNIT (Spark's withWatermark(column, delay))
CREATE TABLE orders (
  id BIGINT,
  order_time TIMESTAMP,
  WATERMARK FOR order_time AS order_time - 5
) USING json LOCATION 'data/orders'
