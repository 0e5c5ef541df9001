"""`watch`'s Prometheus metrics (prometheus-client), one series per job, served at `/metrics` on
`--metrics-port` beside the pages (cli/watch.py).

flink_sql_runner_job_up{job}                         1 when its one run is up
flink_sql_runner_job_state{job,state}                1 for the job's current state
flink_sql_runner_job_restarts{job}                   restarts by watch, in all
flink_sql_runner_job_last_batch_id{job}              the last completed micro-batch
flink_sql_runner_job_last_batch_timestamp_seconds{job}
flink_sql_runner_job_input_rows_per_second{job}
flink_sql_runner_job_processed_rows_per_second{job}
flink_sql_runner_job_batch_duration_seconds{job}
flink_sql_runner_job_offsets_behind_latest{job}      Kafka sources: the largest lag
flink_sql_runner_watch_leader                        1 while this watcher acts
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

from flink_sql_runner.watch.health import Health, State

PREFIX = "flink_sql_runner"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        job = ["job"]

        def gauge(name: str, text: str, labels: list[str] = job) -> Gauge:
            return Gauge(f"{PREFIX}_{name}", text, labels, registry=self.registry)

        self.up = gauge("job_up", "1 when the job's one run is up")
        self.state = gauge("job_state", "1 for the job's current state", ["job", "state"])
        self.restarts = gauge("job_restarts", "Restarts by watch, in all")
        self.batch_id = gauge("job_last_batch_id", "The last completed micro-batch")
        self.batch_time = gauge(
            "job_last_batch_timestamp_seconds", "When the last completed micro-batch started"
        )
        self.input_rate = gauge("job_input_rows_per_second", "Spark's input rate")
        self.process_rate = gauge("job_processed_rows_per_second", "Spark's processing rate")
        self.duration = gauge("job_batch_duration_seconds", "The last trigger's duration")
        self.lag = gauge("job_offsets_behind_latest", "Kafka: offsets behind the latest")
        self.leader = Gauge(
            f"{PREFIX}_watch_leader", "1 while this watcher acts", registry=self.registry
        )
        self._jobs: set[str] = set()

    #: The exposition's content type (Prometheus' text format).
    content_type = CONTENT_TYPE_LATEST

    def exposition(self) -> bytes:
        """Every series in Prometheus' text format: what `/metrics` answers (`watch` serves it
        beside the pages, cli/watch.py)."""
        return bytes(generate_latest(self.registry))

    def observe(self, name: str, health: Health, restarts: int) -> None:
        self._jobs.add(name)
        self.up.labels(name).set(1 if health.run is not None else 0)
        for state in State:
            self.state.labels(name, state.value).set(1 if health.state is state else 0)
        self.restarts.labels(name).set(restarts)
        batch = health.last_batch or {}
        for gauge, value in (
            (self.batch_id, batch.get("id")),
            (self.input_rate, batch.get("input-rows-per-second")),
            (self.process_rate, batch.get("processed-rows-per-second")),
            (self.duration, _seconds(batch.get("duration-ms"))),
            (self.lag, batch.get("offsets-behind-latest")),
            (self.batch_time, _timestamp(batch.get("timestamp"))),
        ):
            if isinstance(value, (int, float)):
                gauge.labels(name).set(value)

    def forget(self, keep: set[str]) -> None:
        """Drop the series of jobs no longer in the store."""
        for name in self._jobs - keep:
            for gauge in (self.up, self.restarts, self.batch_id, self.batch_time,
                          self.input_rate, self.process_rate, self.duration, self.lag):  # fmt: skip
                try:
                    gauge.remove(name)
                except KeyError:
                    pass
            for state in State:
                try:
                    self.state.remove(name, state.value)
                except KeyError:
                    pass
        self._jobs &= keep


def _seconds(millis: Any) -> float | None:
    return millis / 1000 if isinstance(millis, (int, float)) else None


def _timestamp(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
