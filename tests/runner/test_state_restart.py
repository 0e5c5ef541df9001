"""Each change of the corpus (tests/support/state_corpus.py) started on the old query's
checkpoint, as Spark does it, in the one shared session, the cases one after the other.

The old query reads part 1 of the input and stops with a window open. The new query starts on
its checkpoint and reads part 2 (records of that window among them) and a last record far ahead,
which closes every window. Spark's answer (it accepts, or the error it refuses with) must be the
one the corpus records for this Spark line. Where the verdict is all kept and Spark accepts, what
both queries wrote must be the truth, computed from the input as a batch. Where Spark accepts a
change whose meaning changed, what they wrote must not be: the verdict guards against it."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyspark
import pytest

from flink_sql_runner.decide.state import KEPT
from tests.support.state_corpus import (
    ACCEPTED_WRONGLY,
    ACCEPTS,
    CORPUS,
    Case,
    create_views,
    delay_of,
    outcome,
)

pytestmark = pytest.mark.spark

#: The Spark line this runs on.
LINE = ".".join(pyspark.__version__.split(".")[:2])


def at(second: int) -> str:
    """An event time `second` seconds after 2020-01-01 00:00:00 UTC."""
    return f"2020-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


#: What the old query reads: records of the window [0 s, 20 s), none late enough to close it
#: (orders' watermark ends at 15 - 10 = 5 s). For the joins, orders of `a` that a pay matches
#: after the change, and a pay of `c` that an order matches after it: both wait in the state.
PART_1 = {
    "orders": [("a", 1, at(1)), ("a", 2, at(5)), ("b", 0, at(12)), ("b", 0, at(14)),
               ("a", 3, at(15))],
    "pays": [("c", 10, at(9))],
}  # fmt: skip
#: What the new query reads: more of the window open at the change (none late), the next ones.
PART_2 = {
    "orders": [("a", 1, at(8)), ("b", 4, at(12)), ("b", 1, at(18)), ("c", 4, at(7)),
               ("a", 0, at(25)), ("b", 3, at(33))],
    "pays": [("a", 20, at(30)), ("b", 5, at(40))],
}  # fmt: skip
#: Read with part 2, in the same batch: the watermark a batch filters by is the one the batch
#: before left, so part 2 is not late, and the batch after, with no data, closes every window.
#: It passes the corpus's filters: Spark pushes a filter below the watermark, so a record the
#: filter drops does not move it.
CLOSER = {"orders": [("z", 9, "2020-01-03T00:00:00Z")], "pays": []}

#: The input's parts but the closer: what a batch query's truth is computed from.
ALL = ["part-1", "part-2"]

#: The changes whose new query no append mode allows: it runs in update mode.
UPDATE = {"a second aggregation on top"}


def sum_counts(before: list[tuple], after: list[tuple]) -> list[tuple]:
    """(k, window, count) rows of the old query before the change and of the new one after it,
    the counts of one window added: what a window open at the change holds."""
    total: Counter = Counter()
    for k, window, c in [*before, *after]:
        total[(k, window)] += c
    return [(k, window, c) for (k, window), c in total.items()]


def union(before: list[tuple], after: list[tuple]) -> list[tuple]:
    """Distinct rows of the old query before the change and of the new one after it, once."""
    return list(set(before) | set(after))


#: A kept state that mixes (a filter before the operator changed): the truth of a window open at
#: the change is the old query's over part 1 merged with the new query's over part 2.
MIXED: dict[str, Callable[[list[tuple], list[tuple]], list[tuple]]] = {
    "filter added before": sum_counts,
    "distinct with a filter added": union,
}


class Ran:
    """What one streaming run wrote (its batches' rows) or the error it stopped with."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.error: Exception | None = None

    def write(self, batch, _batch_id: int) -> None:  # noqa: ANN001 - a DataFrame
        try:
            self.rows.extend(tuple(row) for row in batch.collect())
        except Exception as exc:  # kept whole: the query's own error has it only as text
            self.error = exc
            raise


def run(session, sql: str, checkpoint: Path, mode: str) -> Ran:  # noqa: ANN001 - a SparkSession
    """`sql` as a streaming query on `checkpoint`, availableNow, to its end."""
    ran = Ran()
    try:
        query = (
            session.sql(sql)
            .writeStream.outputMode(mode)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(checkpoint))
            .foreachBatch(ran.write)
            .start()
        )
        query.awaitTermination()
    except Exception as exc:
        ran.error = ran.error or exc
    return ran


#: Error classes that only wrap the one that says why.
WRAPPERS = {"STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR"}


def refusal(error: Exception) -> str:
    """What Spark refused with: the innermost error class among the Java causes (wrappers
    aside), else the innermost Java exception's class name (Spark 3.5's state errors have no
    class)."""
    java = getattr(error, "_origin", None) or getattr(error, "java_exception", None)
    if java is None:
        return type(error).__name__
    classes, names = [], []
    while java is not None:
        names.append(java.getClass().getSimpleName())
        condition = _condition(java)
        if condition and condition not in WRAPPERS:
            classes.append(condition)
        java = java.getCause()
    return classes[-1] if classes else names[-1]


def _condition(java) -> str | None:  # noqa: ANN001 - a py4j Java object
    for method in ("getCondition", "getErrorClass"):  # 4.x, 3.5
        try:
            return getattr(java, method)()
        except Exception:  # not a SparkThrowable, or a line without the method
            continue
    return None


def write_part(folder: Path, part: dict[str, list[tuple]], name: str, mtime: int) -> None:
    """The part's records as one JSON file per view, modified at `mtime` (the file source reads
    in that order)."""
    for view, records in part.items():
        columns = ("k", "v", "ts") if view == "orders" else ("k", "amount", "ts")
        path = folder / view / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(json.dumps(dict(zip(columns, r, strict=True))) + "\n" for r in records)
        )
        os.utime(path, (mtime, mtime))


def batch(spark, sql: str, folder: Path, parts: list[str]) -> list[tuple]:  # noqa: ANN001
    """`sql` as a batch query over the named parts' files: the truth."""
    session = spark.newSession()
    files = {view: [str(folder / view / f"{p}.json") for p in parts] for view in ("orders", "pays")}
    create_views(session, files["orders"], files["pays"], delay_of(sql), stream=False)
    return [tuple(row) for row in session.sql(sql).collect()]


def streams(spark, sql: str, folder: Path, closing: bool):  # noqa: ANN001, ANN201 - sessions
    """A session of the shared one with the views as streams over `folder`, for `sql`. One
    shuffle partition: one state partition, so that Spark 3.5's answer is its schema check's
    (only the first partition's task checks it; with more, another task may fail first, on a
    row it cannot read: InvalidUnsafeRowException). A batch without data, which closes the
    windows the watermark passed, only where `closing` (the old query's run saves it)."""
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "1")
    session.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", str(closing).lower())
    create_views(session, str(folder / "orders"), str(folder / "pays"), delay_of(sql))
    return session


def restart(spark, case: Case, folder: Path) -> tuple[str, list[tuple]]:  # noqa: ANN001
    """The old query over part 1, then the new query on its checkpoint over part 2 and the
    closer: Spark's answer and what both wrote."""
    checkpoint = folder / "checkpoint"
    write_part(folder, PART_1, "part-1", 1_000_000)
    old = run(streams(spark, case.old, folder, closing=False), case.old, checkpoint, "append")
    assert old.error is None, f"the old query failed: {old.error}"
    write_part(folder, PART_2, "part-2", 2_000_000)
    write_part(folder, CLOSER, "closer", 3_000_000)
    mode = "update" if case.name in UPDATE else "append"
    session = streams(spark, case.new, folder, closing=checked(case))
    new = run(session, case.new, checkpoint, mode)
    answer = ACCEPTS if new.error is None else refusal(new.error)
    return answer, old.rows + new.rows


def checked(case: Case) -> bool:
    """Whether what the queries write is checked, should Spark accept: where the verdict is all
    kept, or the meaning changed under a schema Spark may take. Only then does the new query's
    run close its windows, in a batch without data."""
    return case.name in ACCEPTED_WRONGLY or all(verdict == KEPT for verdict in case.verdicts)


def truth(spark, case: Case, folder: Path) -> list[tuple]:  # noqa: ANN001
    """What the new query should have written across the change, from the input."""
    if case.name in MIXED:
        before = batch(spark, case.old, folder, ["part-1"])
        after = batch(spark, case.new, folder, ["part-2"])
        return MIXED[case.name](before, after)
    return batch(spark, case.new, folder, ALL)


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_each_change_started_on_the_old_checkpoint(spark, tmp_path: Path, case: Case) -> None:
    answer, wrote = restart(spark, case, tmp_path)
    assert answer == outcome(case, LINE), f"Spark {LINE} on the old checkpoint: {answer}"
    if answer != ACCEPTS:
        return
    if case.name in ACCEPTED_WRONGLY:  # what the verdict guards against
        assert Counter(wrote) != Counter(batch(spark, case.new, tmp_path, ALL))
    elif all(verdict == KEPT for verdict in case.verdicts):
        assert Counter(wrote) == Counter(truth(spark, case, tmp_path))
        if case.name in MIXED:  # the parts chosen tell the mixed truth from the new query's alone
            assert Counter(wrote) != Counter(batch(spark, case.new, tmp_path, ALL))
