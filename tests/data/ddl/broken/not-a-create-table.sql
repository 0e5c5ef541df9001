-- expect: line 4: only CREATE TABLE statements declare tables here, found INSERT
-- expect: line 5: only CREATE TABLE declares a table here, found VIEW
CREATE TABLE orders (id BIGINT) USING json LOCATION 'data/orders';
INSERT INTO orders VALUES (1);
CREATE VIEW big AS SELECT * FROM orders WHERE id > 10;
