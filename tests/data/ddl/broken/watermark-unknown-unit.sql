-- expect: line 4: table orders: unknown interval unit 'WEEK'; use one of MILLISECOND, SECOND, MINUTE, HOUR, DAY (write WATERMARK FOR column AS column - INTERVAL 'n' UNIT (Spark's withWatermark(column, delay)))
CREATE TABLE orders (
  order_time TIMESTAMP,
  WATERMARK FOR order_time AS order_time - INTERVAL '1' WEEK
) USING json LOCATION 'data/orders'
