"""flink-sql-runner: a GitOps deployer for streaming SQL jobs on Apache Spark."""

__version__ = "0.1.0"
