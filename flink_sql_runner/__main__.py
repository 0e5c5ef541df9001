from flink_sql_runner.cli.main import main

main()
