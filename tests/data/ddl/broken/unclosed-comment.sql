-- expect: line 3: a comment /* is not closed
CREATE TABLE orders (id BIGINT) USING json LOCATION 'data/orders';
/* the sinks
CREATE TABLE sink (id BIGINT) USING parquet LOCATION 'out/sink';
