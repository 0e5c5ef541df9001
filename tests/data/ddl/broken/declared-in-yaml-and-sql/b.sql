-- expect: line 3: table 'orders' is already defined in {case}/a.yaml
-- Spark reads `orders` and `Orders` as one table.
CREATE TABLE orders (id BIGINT) USING json LOCATION 'data/orders';
