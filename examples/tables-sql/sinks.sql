-- The example sink tables as Spark SQL DDL: the same tables as ../tables/sinks.yaml.
-- {state_dir} is the deploy's --state-dir; {job_name}, {query_version} and ${ENV_VAR} work too.

CREATE TABLE expensive_orders USING parquet LOCATION '{state_dir}/output/expensive_orders';
CREATE TABLE order_stats      USING json    LOCATION '{state_dir}/output/order_stats';
CREATE TABLE tick_log         USING parquet LOCATION '{state_dir}/output/tick_log';
CREATE TABLE buyer_orders     USING parquet LOCATION '{state_dir}/output/buyer_orders';
