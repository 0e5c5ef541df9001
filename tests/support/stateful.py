"""A stateful job's query change on fakes: its decision, with the stateful operators Spark's
analysis would give standing in for the probe (decide/state.py's tests and docs/concepts/state.md's
sample)."""

from __future__ import annotations

import json
from dataclasses import replace

from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.state import Analysed, StateFacts
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import ROOT, make_job, stored_of

CKPT = f"{ROOT}/orders/1"
KAFKA = {
    "format": "kafka",
    "options": {"kafka.bootstrap.servers": "b1:9092", "subscribe": "orders"},
}
RATE = {"format": "rate", "options": {"rowsPerSecond": "5"}}
COUNT = "SELECT id, count(*) AS c FROM src GROUP BY id, window(ts, '20 seconds')"
SUMS = "SELECT id, sum(id) AS c FROM src GROUP BY id, window(ts, '20 seconds')"


def op(window="20 seconds", value="count(*)", before=()):
    """An aggregation as the probe answers it: by id and a window, one aggregate `c`."""
    return {
        "kind": "aggregation",
        "keys": ["src.id:long", f"window[{window}](src.ts)"],
        "key-text": ["id", f"window(ts, {window})"],
        "values": [f"agg[{value}]"],
        "value-text": [value],
        "value-names": ["c"],
        "watermarks": [["src.ts", "ts", "10 seconds"]],
        "before": [f"Filter:{b}" for b in before],
        "before-text": list(before),
    }


def analysed(*ops) -> Analysed:
    return Analysed.from_dict({"operators": list(ops)})


def decide_change(
    new,
    old_ops=None,
    new_ops=None,
    running=True,
    declared=None,
    old=None,
    on_state_change=None,
    spark=None,
    stored_spark=None,
):
    """The decision for `new` against v1 (`old`, a windowed count of `new`'s source), running or
    not, its checkpoint at batch 7 of topic orders, with the state facts the probe would give;
    `spark`: the target's Spark, `stored_spark`: the one v1 last ran on."""
    old = old or make_job(sql=COUNT, tables={"src": new.tables["src"]})
    old_ops = (op(),) if old_ops is None else old_ops
    new_ops = (op(window="30 seconds"),) if new_ops is None else new_ops
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    stored = stored_of(old, 1)
    store.put(replace(stored, meta=replace(stored.meta, spark_version=stored_spark)))
    if running:
        target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    offsets = json.dumps({"orders": {"0": 5}})
    for batch in range(8):
        storage.files[f"{CKPT}/offsets/{batch}"] = f"v1\n{{}}\n{offsets}"
        storage.files[f"{CKPT}/commits/{batch}"] = "v1\n{}"
    (facts,) = gather([new], store, target, storage, workers=1)
    new_state = new_ops if isinstance(new_ops, Analysed) else analysed(*new_ops)
    sizes = storage.tree(CKPT)  # as gather/schemas.py reads it: what continuing copies
    checkpoint = (len(sizes), sum(size for _, size in sizes))
    facts = replace(facts, state=StateFacts(analysed(*old_ops), new_state, checkpoint=checkpoint))
    plan = build_plan([facts], kafka_start=declared, on_state_change=on_state_change, spark=spark)
    return plan.decisions[0]


def kafka_job(sql=SUMS, **spec):
    return make_job(sql=sql, tables={"src": json.loads(json.dumps(KAFKA))}, **spec)
