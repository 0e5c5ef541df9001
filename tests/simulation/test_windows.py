"""The simulation's stateful job on its own (tests/simulation/windows.py): its windowed count
and watermark, its state as the checkpoint keeps it, the truth of a window, the checks of the
windows written, and the probe's answers read from the query's text."""

from __future__ import annotations

import pytest

from flink_sql_runner.model.state import Analysed
from tests.simulation.windows import (
    Began,
    Query,
    State,
    Windows,
    key_of,
    probe,
    sql,
    truth,
)

pytestmark = pytest.mark.fast

TABLE = {"format": "kafka", "watermark": {"column": "timestamp", "delay": "10 seconds"}}
COUNT = Query(20, 10.0)


def records(lo, hi, partitions=(0, 1)):
    """The records of offsets [lo, hi) of each partition, produced a second apart from 0."""
    return [(key_of(p, o), float(o)) for p in partitions for o in range(lo, hi)]


def test_a_window_is_written_once_the_watermark_passes_its_end_with_its_count():
    state = State()
    assert state.add(COUNT, iter(records(0, 25))) == ([], 0)  # watermark 14: none closed
    written, late = state.add(COUNT, iter(records(25, 31)))  # watermark 20: [0, 20) closes
    assert late == 0
    assert written == [(("0", 0, 20), 13), (("1", 0, 20), 14), (("2", 0, 20), 13)]
    assert sum(n for _, n in written) == 40  # 20 s of two partitions
    assert ("0", 0, 20) not in state.open and state.watermark == 20.0


def test_a_record_older_than_the_watermark_is_late_and_dropped():
    state = State()
    state.add(COUNT, iter(records(0, 40)))
    written, late = state.add(COUNT, iter([("0", 5.0), ("0", 35.0)]))
    assert (written, late) == ([], 1)


def test_the_state_the_checkpoint_keeps_reads_back_as_it_was():
    state = State()
    state.add(COUNT, iter(records(0, 33)))
    batch, again = State.read(state.text(7).encode())
    assert batch == 7 and again == state


def test_the_truth_of_a_window_counts_every_record_produced_or_from_where_the_job_began():
    created = [0.0, 0.0, 50.0]  # partition 2 from 50 s
    assert truth(created, 1.0, COUNT, ("0", 40, 60)) == sum(
        1 for p, at in enumerate(created) for o in range(60) if 40 <= at + o < 60 and
        key_of(p, o) == "0"
    )  # fmt: skip
    began = {"0": 45, "1": 45}  # the job began there; partition 2 is its from its earliest
    assert truth(created, 1.0, COUNT, ("0", 40, 60), began) < truth(
        created, 1.0, COUNT, ("0", 40, 60)
    )
    assert truth(created, 1.0, Query(20, 10.0, "key IS NOT NULL"), ("1", 0, 20)) == 14


def check(book, version, emitted, began, batch=3):
    created = [0.0, 0.0]
    return book.commit(
        version, batch, f"run r{version}", COUNT, emitted,
        lambda w: (truth(created, 1.0, COUNT, w), truth(created, 1.0, COUNT, w)), began,
    )  # fmt: skip


def test_a_window_written_with_less_than_its_truth_is_wrong_unless_declared_partial():
    began = Began("continued", {"0": 10, "1": 10}, 10.0)
    found, _ = check(Windows("b", "orders"), 2, [(("0", 0, 20), 9)], began)
    assert found == [(
        "window-wrong",
        "b v2 batch 3 (run r2) wrote key 0 window [0, 20) as 9, not its truth 13: v2 began with "
        "empty state at orders/0 10, orders/1 10 (its plan said: continued)",
    )]  # fmt: skip
    partial = Began("partial", {"0": 10, "1": 10}, 10.0)
    found, notes = check(Windows("b", "orders"), 2, [(("0", 0, 20), 9)], partial)
    assert found == [] and notes == [
        "windows: b v2 batch 3 (run r2) wrote partial, as its plan declared: key 0 window "
        "[0, 20) 9 of 13"
    ]
    # declared partial, but the window opened after the change: it must be true
    found, _ = check(Windows("b", "orders"), 2, [(("0", 20, 40), 9)], partial)
    assert [k for k, _ in found] == ["window-wrong"]
    # continued from a version whose plan declared it partial: still so
    inherited = Began("continued from v2", before=partial)
    assert check(Windows("b", "orders"), 3, [(("0", 0, 20), 9)], inherited)[0] == []
    # a window of the state it continued from, not of its own query
    found, _ = check(Windows("b", "orders"), 2, [(("0", 30, 60), 20)], Began("continued from v1"))
    assert found == [(
        "window-wrong",
        "b v2 batch 3 (run r2) wrote key 0 window [30, 60) as 20, which is no window of v2's "
        "query (a count per key in 20 s windows): v2 began on a checkpoint copied from another "
        "version's (its plan said: continued from v1)",
    )]  # fmt: skip


def test_a_window_written_again_is_wrong_unless_its_version_rebuilt_from_a_declared_start():
    book = Windows("b", "orders")
    assert check(book, 1, [(("0", 0, 20), 13)], Began("", {"0": 0, "1": 0}, 0.0)) == ([], [])
    found, _ = check(book, 2, [(("0", 0, 20), 13)], Began("continued"))
    assert found == [(
        "window-twice",
        "b v2 batch 3 (run r2) wrote key 0 window [0, 20) again (13): v1 batch 3 (run r1) as 13 "
        "had written it",
    )]  # fmt: skip
    rebuilt = Began("rebuilt", {"0": 0, "1": 0}, 0.0, declared=True)
    assert check(book, 3, [(("0", 0, 20), 13)], rebuilt) == ([], [])
    found, _ = check(book, 3, [(("0", 0, 20), 13)], rebuilt, batch=4)
    assert [k for k, _ in found] == ["window-twice"]  # twice by one version: never


def test_the_probe_answers_what_the_query_s_text_computes():
    def ask(*texts):
        request = {"state": [{"key": str(i), "manifest": {"sql": t, "tables": {"src": TABLE}}}
                             for i, t in enumerate(texts)]}  # fmt: skip
        answers, _ = probe(request)
        return [Analysed.from_dict(answers["state"][str(i)]) for i in range(len(texts))]

    base, kept, resized, other = ask(
        sql(20), sql(20, "key IS NOT NULL"), sql(30), "SELECT id, ts FROM src WHERE id > 98"
    )
    assert [o.describe() for o in base.operators] == [
        "aggregation by key, window(timestamp, 20 seconds): count(*)"
    ]
    assert base.operators[0].keys == kept.operators[0].keys != resized.operators[0].keys
    assert kept.operators[0].before_text == ("key IS NOT NULL",)
    assert other.operators == () and other.unknown is None
    assert Query.of(sql(30), TABLE) == Query(30, 10.0)
