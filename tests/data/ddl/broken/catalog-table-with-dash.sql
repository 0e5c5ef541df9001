-- expect: line 2: table lake.`click-events`: a table of Spark's catalog (no USING, or a table format without a location) is named with letters, digits and '_' only here
CREATE TABLE lake.`click-events` USING delta
