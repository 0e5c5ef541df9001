-- expect: line 6: table events: TBLPROPERTIES is not used: the deployer never creates tables, and the runner reads and writes with USING and OPTIONS only
-- expect: line 5: table events: PARTITIONED BY is not used: the deployer never creates tables, and the runner reads and writes with USING and OPTIONS only
-- expect: line 4: table events: keys and constraints are not used by Spark's stream readers and writers; drop them
CREATE TABLE events (id BIGINT, day DATE, PRIMARY KEY (id) NOT ENFORCED) USING parquet LOCATION 'out/events'
PARTITIONED BY (day)
TBLPROPERTIES ('retention' = '7d')
