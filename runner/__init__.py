# Makes the top-level runner/ folder installable as flink_sql_runner._runner.
# The runner itself (job_runner.py) imports nothing from the deployer.
