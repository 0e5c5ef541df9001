"""The generic runner that `spark-submit` starts for every job (job_runner.py is the entry).

It needs only pyspark and the standard library, and imports nothing from the deployer: it runs
on cluster nodes. It reads the runtime manifest (docs/reference/runtime-manifest.md), registers
each source
table as a streaming temporary view, runs the SQL or the PySpark code, appends the `__query_*`
metadata columns as typed literals, and writes to the target with the job's checkpoint, trigger
and output mode.

Its modules, in the order a run meets them: job_runner.py (the entry: finds the rest),
lifecycle.py (one run: start, follow, stop, exit code), manifest.py, storage.py, query.py,
file_sink.py (exactly once into file sinks across versions), sink_schema.py (what a sink's readers
read, checked before the first write), schema_rules.py (what a schema change does to them; the
deployer's plan imports it too), spark_internals.py (the one adapter to Spark's internals, chosen
by what the running Spark offers: 3.5 and 4.0 to 4.3), status.py, query_look.py (what the loop
reads of the running query), failures.py, log.py. Beside the
run: schema_probe.py, the plan's schema analysis (`python -m ...schema_probe`), state_probe.py
(`inspect --state`) and preview_probe.py (`preview`: a query change run on a slice of its input).
"""
