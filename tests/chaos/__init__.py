"""A seeded fault soak on real Spark: `python -m tests.chaos --seed S --rounds N`.

Two rate-source jobs writing parquet, `watch` in the background, the real CLI in subprocesses,
a folder store or S3 on moto's server (127.0.0.1); each round the seeded RNG deploys a change, a
failing change that must roll back, stops a job or asks it back, or injects a fault (SIGKILL of a
driver, of a deployer mid-deploy, of a `stop` mid-way). A process-table monitor samples the
drivers every 0.2 s. At the end: every job runs what the store records, every version's rows
exactly once, no violation. docs/developers/soak.md has the figures.
"""
