-- expect: line 3: table orders: option 'path': expected a string, a number, true or false, found 'data'
CREATE TABLE orders (id BIGINT) USING json
OPTIONS (path data/orders)
