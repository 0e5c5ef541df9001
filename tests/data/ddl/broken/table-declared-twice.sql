-- expect: line 4: table 'ORDERS' is already defined in {case}
CREATE TABLE orders (id BIGINT) USING json LOCATION 'data/orders';

CREATE TABLE `ORDERS` (id BIGINT) USING json LOCATION 'data/orders2';
