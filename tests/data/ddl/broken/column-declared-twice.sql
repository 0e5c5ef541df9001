-- expect: line 4: table orders: column 'ID' is declared twice
CREATE TABLE orders (
  id BIGINT,
  ID STRING
) USING json LOCATION 'data/orders'
