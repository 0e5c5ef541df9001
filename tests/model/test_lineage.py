"""Lineage: which job feeds which, by catalog name or by where the data lands; order, cycles."""

from __future__ import annotations

import random
from typing import Any

import pytest

from flink_sql_runner.model import lineage as lineage_module
from flink_sql_runner.model.lineage import build_lineage
from tests.support.graphs import catalog, chain, folder, job, stored


def kafka(servers: str, **options: Any) -> dict[str, Any]:
    return {"format": "kafka", "options": {"kafka.bootstrap.servers": servers, **options}}


def linked(writer_sink: dict[str, Any], reader_source: dict[str, Any]) -> str | None:
    """The `via` of the link between a job writing `writer_sink` (as table `w`) and one
    reading `reader_source` (as table `r`), or None when they are not linked."""
    writer = job("writer", {"src": {"format": "rate"}}, "w", writer_sink)
    reader = job("reader", {"r": reader_source}, "r_out", folder("/elsewhere/r_out"))
    links = build_lineage([writer, reader]).links
    assert len(links) <= 1
    return links[0].via if links else None


@pytest.mark.parametrize(
    ("sink", "source", "via"),
    [
        # Folders: the same, one holding the other, a glob; never a mere prefix of a name.
        (folder("/data/t"), folder("/data/t", "json"), "same folder"),
        (folder("/data/t/"), folder("/data/./t"), "same folder"),
        (folder("s3a://bucket/t"), folder("s3://bucket/t"), "same folder"),
        (folder("s3n://bucket/t"), folder("S3://bucket/t"), "same folder"),
        (folder("file:///data/t"), folder("/data/t"), "same folder"),
        (folder("/data/t"), folder("/data"), "parent folder"),
        (folder("/data/t"), folder("/data/t/date=2026-11-01"), "subfolder"),
        (folder("/data/t"), folder("/data/*"), "path pattern"),
        (folder("/data/t"), folder("/data/{s,t}"), "path pattern"),
        (folder("/data/t/part=1"), folder("/data/[st]/part=?"), "path pattern"),
        (folder("/data/t"), folder("/data/tt"), None),
        (folder("/data/tt"), folder("/data/t"), None),
        (folder("/data/t"), folder("/data/{s,u}"), None),
        (folder("s3://one/t"), folder("s3://two/t"), None),
        # Placeholders: {job_name} is each job's own; {query_version} and ${ENV} stay as written.
        (folder("/out/{job_name}"), folder("/out/writer"), "same folder"),
        (folder("/out/{job_name}"), folder("/out/{job_name}"), None),
        (folder("/out/t/{query_version}"), folder("/out/t/{query_version}"), "same folder"),
        (folder("/out/t/{query_version}"), folder("/out/t"), "parent folder"),
        (folder("${OUT}/t"), folder("${OUT}/t"), "same folder"),
        # Catalog tables: Spark's names, in spark_catalog.default unless qualified.
        ({"table": "db.events"}, {"table": "DB.Events"}, "same catalog table"),
        ({"table": "events"}, {"table": "spark_catalog.default.events"}, "same catalog table"),
        ({"table": "db.events"}, {"table": "other.events"}, None),
        ({"table": "db.events"}, folder("/db/events"), None),
        # Kafka: a topic on the same servers (in any order); subscribe, assign, a pattern.
        (
            kafka("b:9092,a:9092", topic="orders"),
            kafka("a:9092, b:9092", subscribe="payments, orders"),
            "same topic",
        ),
        (
            kafka("a:9092", topic="orders"),
            kafka("a:9092", assign='{"orders": [0, 1]}'),
            "same topic",
        ),
        (
            kafka("a:9092", topic="orders"),
            kafka("a:9092", subscribePattern="ord.*"),
            "topic pattern",
        ),
        (kafka("a:9092", topic="orders"), kafka("a:9092", subscribePattern="ord"), None),
        (kafka("a:9092", topic="orders"), kafka("a:9092", subscribePattern="(bad"), None),
        (kafka("a:9092", topic="orders"), kafka("c:9092", subscribe="orders"), None),
        (kafka("a:9092", topic="orders"), kafka("a:9092", subscribe="payments"), None),
        # Sources whose data lands nowhere a sink writes.
        (folder("/data/t"), {"format": "rate", "options": {"rowsPerSecond": 5}}, None),
        ({"format": "console"}, {"format": "rate"}, None),
    ],
)
def test_two_tables_hold_the_same_data_when_they_land_in_one_place(sink, source, via) -> None:
    assert linked(sink, source) == via


def test_one_catalog_entry_links_its_writer_and_readers_whatever_its_options() -> None:
    writer = job("a", {"src": folder("/in")}, "t", folder("/out/{job_name}"))
    # The reader resolves {job_name} to its own name: another folder, but the same table.
    reader = job("b", {"T": folder("/out/{job_name}")}, "u", folder("/out/u"))
    (link,) = build_lineage([writer, reader]).links
    assert (link.producer, link.consumer, link.table, link.read_as, link.via) == (
        "a",
        "b",
        "t",
        "T",
        "same table",
    )


def test_a_source_on_another_jobs_sink_folder_links_them_and_shows_both_tables() -> None:
    writer = job("writer", {"src": folder("/in")}, "expensive", folder("/out/expensive"))
    reader = job("reader", {"expensive_in": folder("/out/expensive")}, "big", folder("/out/big"))
    lineage = build_lineage([reader, writer])
    (link,) = lineage.links
    assert (link.table, link.read_as, link.via) == ("expensive", "expensive_in", "same folder")
    assert lineage.tables["expensive"].written_by == ("writer",)
    assert lineage.tables["expensive"].read_by == ()
    assert lineage.tables["expensive_in"].read_by == ("reader",)
    assert str(lineage.tables["expensive_in"].places[0]) == "folder /out/expensive"
    assert lineage.downstream("writer") == ["reader"]
    assert lineage.upstream("reader") == ["writer"]


def test_order_is_producers_first_level_by_level_then_by_name() -> None:
    # z -> y -> x, and a on its own: names alone would put them the other way round.
    jobs = [*chain("z", "y", "x"), *chain("a")]
    lineage = build_lineage(jobs)
    assert lineage.order() == ["a", "z", "y", "x"]
    assert list(lineage.jobs) == lineage.order()
    assert lineage.downstream("z") == ["y", "x"]
    assert lineage.upstream("x") == ["z", "y"]
    assert lineage.downstream("a") == [] and lineage.upstream("a") == []
    assert lineage.downstream("unknown") == [] and lineage.upstream("unknown") == []
    assert lineage.cycles == ()


def test_a_diamond_orders_each_job_after_everything_it_reads() -> None:
    top = job("top", {"src": folder("/in")}, "t", folder("/out/t"))
    left = job("left", {"t": folder("/out/t")}, "l", folder("/out/l"))
    right = job("right", {"t": folder("/out/t")}, "r", folder("/out/r"))
    # bottom reads both sides; a shortcut from top too.
    reads = {"l": folder("/out/l"), "r": folder("/out/r"), "t": folder("/out/t")}
    bottom = job("bottom", reads, "b", folder("/out/b"))
    lineage = build_lineage([bottom, right, left, top])
    assert lineage.order() == ["top", "left", "right", "bottom"]
    assert lineage.downstream("top") == ["left", "right", "bottom"]
    assert lineage.upstream("bottom") == ["top", "left", "right"]
    assert [(lk.producer, lk.consumer) for lk in lineage.links] == [
        ("left", "bottom"),
        ("right", "bottom"),
        ("top", "bottom"),
        ("top", "left"),
        ("top", "right"),
    ]


def test_the_lineage_does_not_depend_on_the_order_jobs_are_given_in() -> None:
    jobs = [*chain("a", "b", "c", "d"), *chain("p", "q"), *chain("x")]
    first = build_lineage(jobs).to_dict()
    for seed in range(5):
        shuffled = list(jobs)
        random.Random(seed).shuffle(shuffled)
        assert build_lineage(shuffled).to_dict() == first


def test_cycles_are_reported_and_every_job_is_still_ordered() -> None:
    # a -> b -> c -> a, c feeds d; e reads d.
    jobs = [
        job("a", {"c_out": folder("/out/c")}, "a_out", folder("/out/a")),
        job("b", {"a_out": folder("/out/a")}, "b_out", folder("/out/b")),
        job("c", {"b_out": folder("/out/b")}, "c_out", folder("/out/c")),
        job("d", {"c_out": folder("/out/c")}, "d_out", folder("/out/d")),
        job("e", {"d_out": folder("/out/d")}, "e_out", folder("/out/e")),
        *chain("solo"),
    ]
    lineage = build_lineage(jobs)
    assert lineage.cycles == (("a", "b", "c"),)
    assert lineage.order() == ["a", "b", "c", "solo", "d", "e"]
    assert lineage.downstream("b") == ["a", "c", "d", "e"]
    assert lineage.upstream("d") == ["a", "b", "c"]
    assert lineage.in_cycle("a") and not lineage.in_cycle("d")


def test_a_job_reading_its_own_sink_folder_under_another_name_is_a_cycle_of_one() -> None:
    loop = job("loop", {"again": folder("/out/loop/part=1")}, "loop_out", folder("/out/loop"))
    lineage = build_lineage([loop])
    assert lineage.cycles == (("loop",),)
    assert lineage.links[0].via == "subfolder"
    assert lineage.order() == ["loop"] and lineage.downstream("loop") == []


def test_two_cycles_are_each_reported_from_their_first_job() -> None:
    jobs = [
        job("y", {"x_out": folder("/out/x")}, "y_out", folder("/out/y")),
        job("x", {"y_out": folder("/out/y")}, "x_out", folder("/out/x")),
        job("n", {"m_out": folder("/out/m")}, "n_out", folder("/out/n")),
        job("m", {"n_out": folder("/out/n")}, "m_out", folder("/out/m")),
    ]
    assert build_lineage(jobs).cycles == (("m", "n"), ("x", "y"))


def test_stored_jobs_that_left_git_still_feed_the_jobs_reading_their_tables() -> None:
    orphan = job("old-writer", {"src": folder("/in")}, "t", folder("/out/t"))
    reader = job("reader", {"t_in": folder("/out/t")}, "u", folder("/out/u"))
    lineage = build_lineage([reader], stored=[stored(orphan)])
    assert lineage.jobs["old-writer"].stored_only
    assert not lineage.jobs["reader"].stored_only
    assert lineage.jobs["old-writer"].reads == ("src",)
    assert lineage.downstream("old-writer") == ["reader"]
    # A mapping of stored manifests by name does the same.
    assert build_lineage([reader], stored={"old-writer": stored(orphan)}) == lineage


def test_a_job_both_desired_and_stored_is_taken_as_desired() -> None:
    before = job("writer", {"src": folder("/in")}, "t", folder("/out/old"))
    after = job("writer", {"src": folder("/in")}, "t2", folder("/out/new"))
    reader = job("reader", {"old_in": folder("/out/old")}, "u", folder("/out/u"))
    lineage = build_lineage([after, reader], stored=[stored(before), stored(reader)])
    assert lineage.links == ()
    assert lineage.jobs["writer"].writes == "t2" and not lineage.jobs["writer"].stored_only


def test_unused_tables_are_the_catalogs_tables_no_job_reads_or_writes() -> None:
    jobs = chain("a", "b")
    tables = catalog("src", "a_out", "b_out", "spare", "archive")
    lineage = build_lineage(jobs, catalog=tables)
    assert lineage.unused_tables == ("archive", "spare")
    assert lineage.tables["spare"].written_by == () and lineage.tables["spare"].read_by == ()
    assert build_lineage(jobs).unused_tables == ()  # no catalog, nothing to tell


@pytest.mark.parametrize(
    "names",
    [("src", "a_out", "b_out", "spare", "archive"), ("SRC", "A_Out", "b_out"), (), ("x",)],
)
def test_the_plans_lineage_with_the_unused_tables_is_the_one_built_with_the_catalog(
    names: tuple[str, ...],
) -> None:
    """`plan` shows the lineage of its jobs with the catalog's unused tables: made from the
    lineage the plan followed, it is the one `build_lineage` makes given the catalog, in
    every field and in its document's order."""
    jobs = chain("a", "b") + [job("c", {"src": folder("/in")}, "spare_too", folder("/o/c"))]
    tables = catalog(*names)
    built = build_lineage(jobs, catalog=tables)
    made = lineage_module.with_unused_tables(build_lineage(jobs), tables)
    assert made == built and made.to_dict() == built.to_dict()
    assert list(made.to_dict()["tables"]) == list(built.to_dict()["tables"])


def test_a_table_a_stored_manifest_names_in_another_case_is_used() -> None:
    orphan = job("old", {"SRC": folder("/in")}, "Old_Out", folder("/out/old"))
    lineage = build_lineage([], stored=[stored(orphan)], catalog=catalog("src", "old_out", "x"))
    assert lineage.unused_tables == ("x",)


def test_a_long_chain_is_ordered_without_recursion() -> None:
    names = [f"job-{i:04d}" for i in range(3000)]
    lineage = build_lineage(chain(*reversed(names)))
    assert lineage.order() == list(reversed(names))
    assert len(lineage.downstream(names[-1])) == 2999
    assert lineage.cycles == ()


def test_no_jobs_no_lineage() -> None:
    lineage = build_lineage([])
    assert lineage.order() == [] and lineage.links == () and lineage.cycles == ()
    assert lineage.to_dict() == {
        "jobs": [],
        "tables": [],
        "links": [],
        "order": [],
        "cycles": [],
        "unused-tables": [],
    }


def test_the_writers_of_a_place_many_jobs_read_are_looked_for_once(monkeypatch) -> None:
    from flink_sql_runner.model import lineage as lineage_module

    looked: list[Any] = []
    writers_at = lineage_module._Writers._writers_at

    def counted(self, place):
        looked.append(place)
        return writers_at(self, place)

    monkeypatch.setattr(lineage_module._Writers, "_writers_at", counted)
    producer = job("producer", {"src": folder("/in")}, "shared", folder("/data/shared"))
    readers = [
        job(f"reader-{i}", {"r": folder("/data/shared")}, f"out_{i}", folder(f"/data/out/{i}"))
        for i in range(50)
    ]
    lineage = build_lineage([producer, *readers])
    assert sorted(link.consumer for link in lineage.links) == sorted(r.name for r in readers)
    assert len(looked) == len(set(looked)) == 2  # /in and /data/shared


@pytest.mark.parametrize(
    "path, parents",
    [
        ("/a/b/c", ["/a/b", "/a", "/"]),
        ("/a", ["/"]),
        ("/", ["/"]),
        ("/a/b/", ["/a/b", "/a", "/"]),
        ("a//b", ["a/", "a"]),
        ("s3://bucket/a/c", ["s3://bucket/a", "s3://bucket"]),
        ("s3://bucket", []),
        ("hdfs://nn:8020/a/b", ["hdfs://nn:8020/a", "hdfs://nn:8020"]),
    ],
)
def test_the_folders_above_a_written_folder(path: str, parents: list[str]) -> None:
    """The folders a reader of which sees a written folder's files (as its parent folder)."""
    assert lineage_module._parents(path) == parents
