-- expect: declares no tables (CREATE TABLE ...)
-- Nothing here but comments.
;
