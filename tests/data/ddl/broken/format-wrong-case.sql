-- expect: line 2: table orders: USING: write 'Parquet' as 'parquet'; the deployer matches names exactly
CREATE TABLE orders (id BIGINT) USING Parquet LOCATION 'data/orders'
