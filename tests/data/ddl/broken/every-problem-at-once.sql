-- expect: line 4: table a: a csv table needs LOCATION '...' or OPTIONS (path '...'); a table of Spark's catalog is declared without USING
-- expect: line 5: table b: expected ',' or ')' in the column list, found 'name'
-- expect: line 6: table c: column 'ts': Spark's TIMESTAMP takes no precision (Flink's TIMESTAMP(p)): write TIMESTAMP
CREATE TABLE a (id BIGINT) USING csv;
CREATE TABLE b (id BIGINT name STRING) USING json LOCATION 'x';
CREATE TABLE c (ts TIMESTAMP(6)) USING json LOCATION 'y';
CREATE TABLE d (id BIGINT) USING json LOCATION 'z'
