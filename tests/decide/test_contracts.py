"""Schema contracts as decisions: a start whose new output would break its sink's readers is
refused before anything stops, under each policy; what is additive, new, unknown or allowed
deploys with its schema report; the plan's JSON, text and Markdown show it per sink."""

from __future__ import annotations

import json
from dataclasses import replace

from flink_sql_runner.decide.contracts import declared_conflicts, judge
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import StartRun, StopRun
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.contracts import ContractFacts, Known, Reader, SinkHolds
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.model.runs import Run
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.plan import plan_json, plan_text
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, QUERY, ROOT, make_job, stored_of


def f(name: str, kind: str) -> dict:
    return {"name": name, "type": kind, "nullable": True}


META = (f("__query_version", "int"),)
V1 = (f("value", "bigint"), f("tick_time", "timestamp"), *META)


def contract(output=V1, history=(V1,), policy="additive", **kw) -> ContractFacts:
    return ContractFacts(
        sink="/out",
        format=kw.pop("format", "parquet"),
        policy=policy,
        policy_from=kw.pop("policy_from", "the default"),
        output=output if isinstance(output, Known) else Known(tuple(output)),
        holds=kw.pop("holds", SinkHolds(tuple(history), ("v1 of job orders",))),
        spark="4.3.0",
        **kw,
    )


def plan_with(contract_facts: ContractFacts | None, desired: Job = QUERY, running=True):
    """The plan of a query change of a running job, with the contract facts gathered for it."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE))
    if running:
        target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage.add_checkpoint(f"{ROOT}/orders/1", 3)
    facts = gather([desired], store, target, storage, workers=1)
    return build_plan(
        [replace(x, contracts=(contract_facts,) if contract_facts else ()) for x in facts]
    )


def test_a_type_change_is_refused_and_nothing_is_stopped_or_started() -> None:
    retyped = (f("value", "string"), f("tick_time", "timestamp"), *META)
    plan = plan_with(contract(output=retyped))
    (decision,) = plan.decisions
    assert decision.action is Action.REFUSED
    assert decision.steps == () and decision.rollback == ()
    assert decision.version == 1
    assert "value bigint -> string" in decision.reason
    assert "on-schema-change: additive" in decision.reason
    assert plan.errors == (decision,) and not plan.pending


def test_a_dropped_and_a_renamed_column_are_refused_naming_them() -> None:
    renamed = (f("v", "bigint"), *META)  # value renamed v, tick_time dropped
    report = judge(contract(output=renamed))
    assert report.refused and report.verdict == "breaking"
    assert report.change["renamed"] == [{"from": "value", "to": "v", "type": "bigint"}]
    assert [c["name"] for c in report.change["dropped"]] == ["tick_time"]


def test_an_added_column_deploys_with_its_report() -> None:
    added = (*V1, f("tag", "string"))
    (decision,) = plan_with(contract(output=added)).decisions
    assert decision.action is Action.STOP_AND_START_CLEAN
    kinds = [type(s) for s in decision.steps]
    assert kinds.index(StopRun) < kinds.index(StartRun)
    assert decision.schema.verdict == "additive" and not decision.schema.refused
    assert decision.schema.change["added"] == [f("tag", "string")]


def test_fail_refuses_even_an_added_column_and_allow_deploys_a_break() -> None:
    added = (*V1, f("tag", "string"))
    assert judge(contract(output=added, policy="fail")).refused
    retyped = (f("value", "string"), f("tick_time", "timestamp"), *META)
    (decision,) = plan_with(contract(output=retyped, policy="allow")).decisions
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.schema.verdict == "breaking" and not decision.schema.refused


def test_a_type_an_older_version_wrote_counts_when_a_column_returns() -> None:
    """v1 wrote value bigint, v2 dropped it (allowed), v3 brings it back as string: the v1
    files still hold bigint."""
    v2 = (f("tick_time", "timestamp"), *META)
    back = (f("tick_time", "timestamp"), *META, f("value", "string"))
    report = judge(contract(output=back, history=(V1, v2)))
    assert report.refused
    assert report.change["retyped"] == [{"name": "value", "from": "bigint", "to": "string"}]


def test_a_column_an_older_version_wrote_returning_not_null_is_refused() -> None:
    """Issue 40, item 3: v1 wrote value, v2 dropped it (allowed), v3 brings it back NOT NULL:
    v2's parquet files lack it, and reading them fails as for any new NOT NULL column."""
    v2 = (f("tick_time", "timestamp"), *META)
    back = (*v2, {"name": "value", "type": "bigint", "nullable": False})
    report = judge(contract(output=back, history=(V1, v2)))
    assert report.refused and report.verdict == "breaking"
    assert report.change["required"] == ["value"]


def test_a_new_location_holds_nothing_and_says_where_readers_must_move() -> None:
    retyped = (f("value", "string"), *META)
    report = judge(contract(output=retyped, history=(), moved_from="/out/v1"))
    assert not report.refused and report.verdict == "new-location"
    assert "readers of /out/v1 must move to it" in report.summary()


def test_what_cannot_be_known_is_said_and_deploys() -> None:
    code = Known(unknown="a code job's output is known only when it runs")
    report = judge(contract(output=code))
    assert not report.refused and report.verdict == "unknown"
    assert "its run checks the sink" in report.notes[0]
    holds = SinkHolds(unknown="the json sink /out holds files written without a recorded schema")
    report = judge(contract(holds=holds, format="json"))
    assert not report.refused and "without a recorded schema" in report.notes[0]


def test_a_query_that_does_not_analyse_is_refused_with_sparks_reason() -> None:
    error = Known(
        error="[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column ... `nope` cannot be resolved"
    )
    (decision,) = plan_with(contract(output=error)).decisions
    assert decision.action is Action.REFUSED
    assert "does not analyse on Spark 4.3.0: [UNRESOLVED_COLUMN" in decision.reason


def test_readers_are_named_and_their_declared_schema_is_checked() -> None:
    readers = (
        Reader("big-buyers", "orders_stream", Known((f("value", "bigint"),))),
        Reader("audit", "orders_raw", None),
    )
    added = (*V1, f("tag", "string"))
    report = judge(contract(output=added, readers=readers))
    assert not report.refused and report.readers == ("big-buyers", "audit")
    retyped = (f("value", "string"), f("tick_time", "timestamp"), *META)
    report = judge(contract(output=retyped, history=(), readers=readers))
    assert report.refused
    assert report.conflicts == (
        "big-buyers reads it as orders_stream: value is written as string, declared bigint",
    )


def test_a_declared_sink_schema_and_kafkas_contract_are_checked() -> None:
    declared = Known((f("value", "bigint"), f("price", "double")))
    report = judge(contract(declared=declared))
    assert report.refused
    assert report.conflicts == ("the table's declared schema: price (double) is not written",)
    kafka = judge(contract(output=(f("value", "bigint"),), format="kafka", policy="allow"))
    assert kafka.refused  # Spark's Kafka sink cannot write it under any policy
    assert "Kafka's sink takes string or binary" in kafka.conflicts[0]


def test_the_plan_shows_the_schema_per_sink_in_json_text_and_markdown() -> None:
    retyped = (f("value", "string"), f("tick_time", "timestamp"), *META, f("tag", "string"))
    plan = plan_with(contract(output=retyped, readers=(Reader("audit", "raw"),)))
    doc = json.loads(plan_json(plan))["jobs"][0]
    assert doc["action"] == "refused"
    schema = doc["schema"]
    assert (schema["sink"], schema["verdict"], schema["refused"]) == ("/out", "breaking", True)
    assert schema["retyped"] == [{"name": "value", "from": "bigint", "to": "string"}]
    assert schema["added"] == [f("tag", "string")] and schema["readers"] == ["audit"]
    text = plan_text(plan)
    assert "schema of /out: breaking, refused (on-schema-change: additive)" in text
    assert "~ value bigint -> string" in text and "+ tag string" in text
    assert "Jobs marked `refused` would break their sink's readers" in text
    markdown = plan_markdown(plan)
    assert "Schema of `/out`: **breaking, refused**" in markdown
    assert "| `value` | bigint -\\> string |" in markdown


def test_validate_finds_a_reader_declaring_what_the_writer_does_not_declare() -> None:
    writer = make_job(
        name="writer",
        tables={"out": {"format": "parquet", "options": {"path": "/data/out"},
                        "schema": "value BIGINT, tick_time TIMESTAMP"}},
    )  # fmt: skip
    reader = Job(
        spec={**make_job().spec, "name": "reader", "sql": "SELECT value FROM out_stream"},
        tables={
            "out_stream": {
                "format": "parquet",
                "options": {"path": "/data/out"},
                "schema": "value STRING, tick_time TIMESTAMP, __query_version INT",
            },
            "out": {"format": "parquet", "options": {"path": "/data/other"}},
        },  # fmt: skip
        source_tables=("out_stream",),
        file="queries/reader.yaml",
    )
    found = declared_conflicts([writer, reader], build_lineage([writer, reader]))
    assert found == [
        (
            "queries/reader.yaml",
            "tables.out_stream.schema",
            "value is written as bigint, declared string by writer, whose table out declares "
            "`value BIGINT, tick_time TIMESTAMP`",
        )
    ]


def test_a_new_not_null_column_is_refused_and_said_so() -> None:
    """Spark writes a NOT NULL column as required in parquet; readers fail on older files."""
    added = (*V1, {"name": "tag", "type": "string", "nullable": False})
    plan = plan_with(contract(output=added))
    (decision,) = plan.decisions
    assert decision.action is Action.REFUSED
    assert "+ tag string NOT NULL (older files lack it: readers fail)" in plan_text(plan)
    assert json.loads(plan_json(plan))["jobs"][0]["schema"]["required"] == ["tag"]
