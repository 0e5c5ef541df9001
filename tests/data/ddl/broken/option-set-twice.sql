-- expect: line 5: table orders: OPTIONS 'maxfilespertrigger' is set twice (first on line 4)
CREATE TABLE orders (id BIGINT) USING json LOCATION 'data/orders'
OPTIONS (
  maxFilesPerTrigger 10,
  maxfilespertrigger 20
)
