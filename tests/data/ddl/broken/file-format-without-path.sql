-- expect: line 3: table orders: a json table needs LOCATION '...' or OPTIONS (path '...'); a table of Spark's catalog is declared without USING
CREATE TABLE orders (id BIGINT)
USING json
OPTIONS (multiLine true)
