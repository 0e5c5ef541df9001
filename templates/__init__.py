# Makes the top-level templates/ folder installable as flink_sql_runner._templates.
