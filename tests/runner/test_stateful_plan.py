"""The corpus of query changes (tests/support/state_corpus.py): each pair of an old and a new
query analysed by Spark's own analyser (runner/spark_internals.py, runner/stateful_plan.py), in
one shared session, and the verdict per stateful operator the plan would give (decide/state.py).
A verdict is never *kept* where the state's meaning changed, including the changes Spark itself
accepts on restart (a window's size, `count(*)` changed to `sum(k)` under the same name: SPEC;
what Spark does on each line: tests/runner/test_state_restart.py)."""

from __future__ import annotations

import pytest

from flink_sql_runner.decide.state import KEPT, REBUILT, verdicts
from flink_sql_runner.model.state import Analysed
from runner.schema_probe import job_state
from runner.spark_internals import analysed_plan
from runner.stateful_plan import stateful_operators
from tests.support.runner_jobs import manifest
from tests.support.state_corpus import (
    ACCEPTED_WRONGLY,
    CORPUS,
    COUNTS,
    LATE,
    W20,
    create_views,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def views(spark, tmp_path_factory: pytest.TempPathFactory):
    """Two sessions with the corpus's views (streams from an empty folder, analysed, never run)
    and a Python function registered as `fsr_tag`: orders' watermark is 10 s in the first,
    20 s in the second (a query marked LATE)."""
    empty = str(tmp_path_factory.mktemp("corpus"))  # pytest's own, not left in /tmp
    sessions = []
    for delay in ("10 seconds", "20 seconds"):
        session = spark.newSession()
        create_views(session, empty, empty, delay)
        sessions.append(session)
    return sessions


def analysed(sessions, sql: str) -> Analysed:
    session = sessions[1] if sql.startswith(LATE) else sessions[0]
    plan, delays = analysed_plan(session.sql(sql))
    return Analysed.from_dict({"operators": stateful_operators(plan, delays)})


@pytest.mark.parametrize(
    ("old", "new", "expected", "words"),
    [(case.old, case.new, case.verdicts, case.words) for case in CORPUS],
    ids=[case.name for case in CORPUS],
)
def test_each_change_gets_the_verdict_its_meaning_calls_for(views, old, new, expected, words):
    found = verdicts(analysed(views, old), analysed(views, new))
    assert [v.verdict for v in found] == expected, [v.line() for v in found]
    if words is not None:
        said = " ".join(" ".join([*v.reasons, *v.mixes]) for v in found)
        assert words in said, [v.line() for v in found]


def test_the_corpus_holds_thirty_changes_and_none_spark_accepts_wrongly_is_kept():
    assert len(CORPUS) >= 30
    assert all(case.verdicts != [KEPT] for case in CORPUS if case.name in ACCEPTED_WRONGLY)


def test_a_stateless_new_query_has_nothing_to_judge(views):
    assert (
        verdicts(analysed(views, COUNTS.format(w=W20)), analysed(views, "SELECT k FROM orders"))
        == ()
    )


def test_a_window_s_start_is_not_shown_as_a_slide(views):
    """`window(ts, '1 hour', '1 hour', '30 minutes')`: tumbling, starting 30 minutes in."""
    (op,) = analysed(views, "SELECT k, count(*) FROM orders GROUP BY k, "
                     "window(ts, '1 hour', '1 hour', '30 minutes')").operators  # fmt: skip
    assert op.key_text[1] == "window(ts, 1 hour, starting 30 minutes in)"
    (sliding,) = analysed(views, "SELECT k, count(*) FROM orders GROUP BY k, "
                          "window(ts, '1 hour', '15 minutes')").operators  # fmt: skip
    assert sliding.key_text[1] == "window(ts, 1 hour, 15 minutes)"


def test_a_source_that_reads_another_path_or_topic_under_the_same_name_is_another(spark, tmp_path):
    """The probe labels each source column with what its table reads (found by review: by its
    view's name alone, a source moved to another path kept its state's verdict)."""
    sql = COUNTS.format(w=W20).replace("orders", "people")

    def state_of(path: str) -> Analysed:
        doc = manifest(tmp_path, sql=sql)
        doc["tables"]["people"].update(
            schema="k STRING, v BIGINT, ts TIMESTAMP",
            watermark={"column": "ts", "delay": "10 seconds"},
        )
        doc["tables"]["people"]["options"]["path"] = path  # fmt: skip
        return Analysed.from_dict(job_state(spark, {"manifest": doc}, str(tmp_path)))

    (same,) = verdicts(state_of("/in/a"), state_of("/in/a"))
    (moved,) = verdicts(state_of("/in/a"), state_of("/in/b"))
    assert (same.verdict, moved.verdict) == (KEPT, REBUILT)


def test_the_probe_reads_a_job_s_state_as_its_run_builds_it(spark, tmp_path):
    """Through the probe's own door (`job_state`): the runtime manifest's sources, their
    watermark from the table, the SQL; a code job is unknown."""
    sql = COUNTS.format(w=W20).replace("orders", "people")
    doc = manifest(tmp_path, sql=sql)
    doc["tables"]["people"].update(schema="k STRING, v BIGINT, ts TIMESTAMP",
                                   watermark={"column": "ts", "delay": "10 seconds"})  # fmt: skip
    job = {"manifest": doc}
    answer = job_state(spark, job, str(tmp_path))
    (op,) = Analysed.from_dict(answer).operators
    assert op.describe() == "aggregation by k, window(ts, 20 seconds): count(*)"
    assert op.watermarks[0][1:] == ("ts", "10 seconds")
    code = {"manifest": {**doc, "sql": None, "code": "execution_output = None"}}
    assert "code job" in job_state(spark, code, str(tmp_path))["unknown"]
