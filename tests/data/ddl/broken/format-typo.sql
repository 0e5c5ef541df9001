-- expect: line 3: table orders: USING: unknown format 'parqet'; did you mean 'parquet'? (another data source: give its fully qualified class name)
CREATE TABLE orders (id BIGINT)
USING parqet
LOCATION 'data/orders'
