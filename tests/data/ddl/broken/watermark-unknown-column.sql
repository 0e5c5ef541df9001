-- expect: line 5: table orders: WATERMARK FOR 'event_time': no such column
CREATE TABLE orders (
  id BIGINT,
  order_time TIMESTAMP,
  WATERMARK FOR event_time AS event_time - INTERVAL '1' MINUTE
) USING json LOCATION 'data/orders'
