"""The simulation's ledger of records on its own (tests/simulation/ledger.py): which version wrote
each Kafka record, the records written twice or never, declared re-reads and skips, and an older
version writing after a newer one."""

from __future__ import annotations

import pytest

from tests.simulation.ledger import Ledger

pytestmark = pytest.mark.fast


def both(lo, hi, third=None):
    """A batch's ranges on partitions 0 and 1 (and 2, when given)."""
    found = {"0": (lo, hi), "1": (lo, hi)}
    if third is not None:
        found["2"] = third
    return found


def commit(ledger, version, batch, ranges, run="run r1 by deploy-3", declared=""):
    return ledger.commit("b", version, batch, run, "/out/b", batch, ("orders", ranges), declared)


def kinds(found):
    return [kind for kind, _ in found[0]]


def test_a_version_that_goes_on_where_the_previous_one_finished_keeps_the_ledger():
    ledger = Ledger()
    assert commit(ledger, 1, 0, both(10, 20)) == ([], [])
    assert commit(ledger, 1, 1, both(20, 30)) == ([], [])
    assert commit(ledger, 2, 0, both(30, 40), run="run r2 by deploy-4") == ([], [])
    records = ledger.records["b"]
    assert [(w.version, w.first, w.last) for w in records.holders("0", 25)] == [(1, 0, 1)]
    assert [w.version for w in records.holders("1", 35)] == [2]
    assert records.holders("0", 45) == []  # arrived, not read yet: fine
    assert ledger.final() == []


def test_a_rollback_over_a_version_that_wrote_writes_its_records_again():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 30))
    commit(ledger, 2, 0, both(30, 40), run="run r2 by deploy-4")
    found = commit(ledger, 1, 1, both(30, 45), run="run r3 by deploy-4")
    assert kinds(found) == ["rolled-back-over", "ledger-repeat"]
    text = found[0][1][1]
    assert text == (
        "b v1 batch 1 (run r3 by deploy-4) wrote orders/0 30..39, orders/1 30..39 (20 records) "
        "again: v2 batch 0 (run r2 by deploy-4) had written them"
    )
    assert "after v2 had committed batch 0 (run r2 by deploy-4" in found[0][0][1]
    assert ledger.final() == []  # named once, when it happened
    # the older version goes on: its next batches repeat nothing, and it was told once
    assert kinds(commit(ledger, 1, 2, both(45, 50), run="run r3 by deploy-4")) == []


def test_two_runs_of_one_version_writing_a_batch_twice_is_a_repeat():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20))
    found = commit(ledger, 1, 0, both(10, 20), run="run r2 by watch-1")
    assert kinds(found) == ["ledger-repeat"]


def test_a_start_past_where_the_job_had_read_skips_records():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 30))
    found = commit(ledger, 2, 0, both(50, 60), run="run r2 by deploy-8")
    assert kinds(found) == ["ledger-gap"]
    assert found[0][0][1] == (
        "b v2 batch 0 (run r2 by deploy-8) began past orders/0 30..49, orders/1 30..49 "
        "(40 records), which no version wrote (the job had read up to there: v1 batch 0 "
        "(run r1 by deploy-3))"
    )


def test_records_before_the_job_wrote_anything_are_nobody_s():
    """A first version that only committed empty batches (a start at latest) wrote nothing: a
    later start at latest skips nothing of it."""
    ledger = Ledger()
    assert commit(ledger, 1, 0, both(10, 10)) == ([], [])
    assert commit(ledger, 2, 0, both(50, 55), run="run r2 by deploy-8") == ([], [])
    assert kinds(commit(ledger, 2, 1, both(60, 65), run="run r2 by deploy-8")) == ["ledger-gap"]


def test_a_declared_start_re_reads_or_skips_as_declared():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 30))
    found = commit(ledger, 2, 0, both(0, 40), run="run r2 by deploy-5", declared="earliest")
    assert found[0] == []
    assert found[1] == [
        "ledger: b v2 batch 0 (run r2 by deploy-5) re-reads orders/0 10..29, orders/1 10..29 "
        "(40 records) as declared (earliest), written before by v1 batch 0 (run r1 by deploy-3)"
    ]
    found = commit(ledger, 3, 0, both(70, 80), run="run r3 by deploy-6", declared="latest")
    assert found[0] == [] and "skips orders/0 40..69, orders/1 40..69" in found[1][0]
    assert ledger.final() == []
    # only the declared version's first batch: its next ones are held to the rule
    assert kinds(commit(ledger, 3, 1, both(75, 90), run="run r3 by deploy-6")) == ["ledger-repeat"]


def test_a_partition_the_topic_gained_is_the_job_s_from_its_earliest_offset():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20))
    # found while running: from its earliest offset
    assert commit(ledger, 1, 1, both(20, 30, third=(0, 4))) == ([], [])
    # a carried start that names partitions 0 and 1 only: the runner starts 2 at its earliest
    found = commit(ledger, 2, 0, both(30, 40, third=(0, 8)), run="run r2 by deploy-5")
    assert kinds(found) == ["ledger-repeat"] and "orders/2 0..3 (4 records)" in found[0][0][1]
    # a partition none read yet, begun past its earliest offset: a gap
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20))
    found = commit(ledger, 2, 0, both(20, 30, third=(5, 9)), run="run r2 by deploy-5")
    assert kinds(found) == ["ledger-gap"] and "orders/2 0..4 (5 records)" in found[0][0][1]


def test_a_partition_read_from_the_job_s_first_write_starts_where_it_began():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20, third=(3, 6)))  # a partition that existed: as began
    assert commit(ledger, 2, 0, both(20, 30, third=(6, 9))) == ([], [])
    assert ledger.final() == []


def test_a_gap_filled_later_is_named_once():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20))
    assert kinds(commit(ledger, 2, 0, both(30, 40), run="run r2 by deploy-4")) == ["ledger-gap"]
    found = commit(ledger, 1, 1, both(20, 30), run="run r3 by deploy-5")  # a pending batch re-run
    assert kinds(found) == ["rolled-back-over"]
    assert ledger.final() == []


def test_an_older_version_committing_after_a_newer_one_of_any_job():
    ledger = Ledger()
    for version, batch in ((1, 0), (1, 1), (2, 0)):
        assert ledger.commit("a", version, batch, "run r by deploy-3", "/out/a", 1) == ([], [])
    found, _ = ledger.commit("a", 1, 2, "run r9 by watch-1", "/out/a", 7)
    assert found == [
        (
            "rolled-back-over",
            "a v1 batch 2 (run r9 by watch-1) committed into /out/a after v2 had committed "
            "batch 0 (run r by deploy-3, step 1): an older version writes again over a newer "
            "one's output",
        )
    ]
    assert ledger.commit("a", 1, 3, "run r9 by watch-1", "/out/a", 8) == ([], [])  # told once
    assert [r[0] for r in ledger.batches[("a", 1, 2)].runs] == ["run r9 by watch-1"]


def test_the_final_check_names_what_no_commit_named():
    ledger = Ledger()
    commit(ledger, 1, 0, both(10, 20))
    records = ledger.records["b"]
    records.segments["0"][0].lo = 12  # as if two records had been lost without a commit
    records.began = {"0": 10, "1": 10}
    assert ledger.final() == [
        (
            "ledger-gap",
            "at the end, no version of b wrote orders/0 10..11 (2 records), though later ones "
            "of those partitions were written",
        )
    ]
