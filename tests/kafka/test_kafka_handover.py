"""Kafka -> parquet while records keep arriving (tests/support/kafka_handover.py): a restart from
the checkpoint (a config change) and a new version (a query change) carried out by `deploy`,
a producer producing throughout. Every record produced is read exactly once across the runs
and versions; the new version's source starts at the offsets v1 committed last, as the plan
said it would."""

from __future__ import annotations

import re

import pytest

from tests.support.kafka_handover import Scenario
from tests.support.kafka_jobs import sink_rows, use_connector

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.spark]


def test_a_restart_and_a_new_version_read_every_record_once_while_records_arrive(
    kafka_workspace, kafka_broker, kafka_spark, spark
):
    use_connector(kafka_workspace, kafka_spark)
    scenario = Scenario(kafka_workspace, kafka_broker, lambda path: sink_rows(spark, path))
    result = scenario.run()
    restart, clean = result.handovers
    print(result)

    assert restart.action == "stop-and-restart-from-checkpoint"
    assert clean.action == "stop-and-start-clean"
    assert clean.reason.endswith("stop, start clean as version 2; src at v1's committed offsets")
    # the deploy read them after v1 stopped, and says where v2 starts
    assert re.search(r"src starts at v1's batch \d+: handover\[0:\d+,1:\d+,2:\d+\]",
                     clean.deploy_output), clean.deploy_output  # fmt: skip

    # records arrived while each deploy ran, and every run read some
    assert restart.produced_during > 0 and clean.produced_during > 0
    assert all(count > 0 for count in result.runs.values()), result.runs
    assert set(result.runs) == {"v1 first run", "v1 second run", "v2"}
    # none lost, none repeated: at either handover, and over everything
    assert (restart.lost, restart.repeated) == (0, 0)
    assert (clean.lost, clean.repeated) == (0, 0)
    assert result.overall == {
        "produced": result.produced,
        "read": result.produced,
        "lost": 0,
        "repeated": 0,
        "unexpected": 0,
    }
    assert sum(result.versions.values()) == result.produced
    assert set(result.versions) == {1, 2}
