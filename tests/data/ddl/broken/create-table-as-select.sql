-- expect: line 3: table big_orders: CREATE TABLE ... AS SELECT runs a query; a job's query belongs in its manifest
CREATE TABLE big_orders USING parquet LOCATION 'out/big'
AS SELECT * FROM orders WHERE price > 9000
