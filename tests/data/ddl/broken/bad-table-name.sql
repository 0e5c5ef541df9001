-- expect: line 2: table name 'kafka.`some table`' is not allowed: read as table `some table` in database `kafka`; part 'some table' may hold letters, digits, '_' and '-' (between backticks), not a '-' first
CREATE TABLE `kafka`.`some table` (id BIGINT) USING json LOCATION 'data/x'
