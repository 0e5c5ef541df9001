"""The read-only web pages (`flink-sql-runner ui`, and `watch --metrics-port`): the fleet, a
job's history, the lineage and given plans, served on 127.0.0.1 by the standard library's HTTP
server from the templates and the style sheet of this folder."""
