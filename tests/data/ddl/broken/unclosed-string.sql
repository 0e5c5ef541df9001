-- expect: line 5: the string opened with ' is not closed
CREATE TABLE ok_before (id BIGINT) USING json LOCATION 'data/ok';

CREATE TABLE orders (id BIGINT) USING json
OPTIONS (path 'data/orders)
