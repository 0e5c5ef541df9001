from flink_sql_runner.cli import main

main()
