-- expect: line 4: table orders: LOCATION and OPTIONS (path ...) both set a path
CREATE TABLE orders (id BIGINT) USING json
OPTIONS (path 'data/a')
LOCATION 'data/b'
