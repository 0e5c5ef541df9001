"""Lineage: which job writes what another reads, from the job manifests and the table catalog.

Each job reads tables and writes one. A job feeds another when the table it writes holds data
the other reads, that is when the two tables

- are one entry of the table catalog (the same name, as Spark resolves names), or
- land in one place, by the identity `read/sinks.py` gives a sink: the same folder (or one inside
  the other, or a source's path pattern that matches it; `s3://` and `s3a://` are one), the
  same catalog table (`table:`), the same Kafka topic (or a `subscribePattern` matching it) on
  the same bootstrap servers.

So a source table declared on the folder another job's sink writes links the two jobs even
though the catalog names them differently.

Nothing here reads a file or asks anything: `build_lineage` takes loaded jobs (and stored
manifests, for jobs that left git but may still run) and returns a value.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.catalog import Catalog
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.names import BadName, parse_name
from flink_sql_runner.read.schemas import field_path, shape_problem, shape_validator
from flink_sql_runner.read.sinks import SinkId, catalog_name, normalise_path, sink_of

#: How the table a consumer reads holds what a producer writes (JSON's `via`, the diagrams'
#: edge labels).
SAME_TABLE = "same table"
SAME_FOLDER = "same folder"
PARENT_FOLDER = "parent folder"  # the consumer reads a folder that holds the sink's
SUBFOLDER = "subfolder"  # the consumer reads a folder inside the sink's
PATH_PATTERN = "path pattern"  # the consumer's path has a glob that matches the sink's
SAME_CATALOG_TABLE = "same catalog table"
SAME_TOPIC = "same topic"
TOPIC_PATTERN = "topic pattern"  # the consumer's subscribePattern matches the sink's topic

FOLDER, CATALOG_TABLE, KAFKA_TOPIC = "folder", "catalog table", "kafka topic"
KAFKA_PATTERN = "kafka topic pattern"


@dataclass(frozen=True)
class JobNode:
    name: str
    reads: tuple[str, ...]  # table names, as declared
    writes: str
    #: Known only from the store: its manifest left --path, but it may still run.
    stored_only: bool = False


@dataclass(frozen=True)
class TableNode:
    name: str
    format: str | None  # None for a catalog table (`table:`)
    #: Where its data is: as its writer sees it, else as its first reader does (a path may
    #: hold `{job_name}`). Empty when the definition does not say (rate, socket, console...),
    #: and for tables no job uses (their `{state_dir}` is resolved per job).
    places: tuple[SinkId, ...]
    written_by: tuple[str, ...]
    read_by: tuple[str, ...]


@dataclass(frozen=True)
class Link:
    """`producer` writes `table`; `consumer` reads it as `read_as` (the same name, or another
    catalog entry holding the same data)."""

    producer: str
    consumer: str
    table: str
    read_as: str
    via: str


@dataclass(frozen=True)
class Lineage:
    jobs: dict[str, JobNode]  # by name, producers first (`order()`)
    tables: dict[str, TableNode]  # by name, sorted
    links: tuple[Link, ...]
    #: Each cycle as the jobs along it, from its first job by name; the last feeds the first.
    cycles: tuple[tuple[str, ...], ...]
    #: Catalog tables no job reads or writes (only when the catalog was given).
    unused_tables: tuple[str, ...]
    _order: tuple[str, ...] = field(repr=False)
    _succ: dict[str, tuple[str, ...]] = field(repr=False)
    _pred: dict[str, tuple[str, ...]] = field(repr=False)
    #: Indexes, so that no question about one job looks at every job or link: each job's
    #: place in `order()`, its strongly connected component, its cycle, the links into it and
    #: out of it.
    _rank: dict[str, int] = field(repr=False, compare=False)
    _component: dict[str, int] = field(repr=False, compare=False)
    _cycle_of: dict[str, tuple[str, ...]] = field(repr=False, compare=False)
    _into: dict[str, tuple[Link, ...]] = field(repr=False, compare=False)
    _from: dict[str, tuple[Link, ...]] = field(repr=False, compare=False)

    def order(self) -> list[str]:
        """Every job, producers before consumers: level by level (a job comes after every job
        it reads from), by name within a level. Jobs in a cycle share a level, by name."""
        return list(self._order)

    def links_into(self, consumer: str) -> tuple[Link, ...]:
        """The links whose consumer is `consumer`, in `links`' order."""
        return self._into.get(consumer, ())

    def links_from(self, producer: str) -> tuple[Link, ...]:
        """The links whose producer is `producer`, in `links`' order."""
        return self._from.get(producer, ())

    def cycle_of(self, name: str) -> tuple[str, ...] | None:
        """The cycle in `cycles` that holds `name`, if one does."""
        return self._cycle_of.get(name)

    def feed_each_other(self, one: str, other: str) -> bool:
        """Whether each of two jobs reads, directly or not, what the other writes (one is
        upstream of the other and the other upstream of the one: they are in one cycle)."""
        if one == other:
            return one in self._succ.get(one, ())
        component = self._component.get(one)
        return component is not None and component == self._component.get(other)

    def downstream(self, name: str) -> list[str]:
        """Every job that reads, directly or not, what `name` writes, in `order()`; [] for a
        job the lineage does not know."""
        return self._reach(name, self._succ)

    def upstream(self, name: str) -> list[str]:
        """Every job whose output `name` reads, directly or not, in `order()`."""
        return self._reach(name, self._pred)

    def _reach(self, name: str, edges: dict[str, tuple[str, ...]]) -> list[str]:
        seen: set[str] = set()
        todo = list(edges.get(name, ()))
        while todo:
            job = todo.pop()
            if job not in seen:
                seen.add(job)
                todo.extend(edges[job])
        seen.discard(name)
        return sorted(seen, key=self._rank.__getitem__)

    def in_cycle(self, name: str) -> bool:
        return name in self._cycle_of

    def to_dict(self) -> dict[str, Any]:
        """For `--output json`: keys lower-case with hyphens, as the rest of the CLI."""
        return {
            "jobs": [
                {
                    "name": job.name,
                    "reads": list(job.reads),
                    "writes": job.writes,
                    "upstream": self.upstream(job.name),
                    "downstream": self.downstream(job.name),
                    "stored-only": job.stored_only,
                }
                for job in self.jobs.values()
            ],
            "tables": [
                {
                    "name": table.name,
                    "format": table.format,
                    "location": [{"kind": p.kind, "where": p.where} for p in table.places],
                    "written-by": list(table.written_by),
                    "read-by": list(table.read_by),
                }
                for table in self.tables.values()
            ],
            "links": [
                {
                    "producer": link.producer,
                    "consumer": link.consumer,
                    "table": link.table,
                    "read-as": link.read_as,
                    "via": link.via,
                }
                for link in self.links
            ],
            "order": self.order(),
            "cycles": [list(cycle) for cycle in self.cycles],
            "unused-tables": list(self.unused_tables),
        }


# -- reading the jobs -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Use:
    """One job's tables, as it uses them (definitions resolved for it)."""

    name: str
    reads: dict[str, dict[str, Any]]
    target: str
    target_definition: dict[str, Any]
    stored_only: bool


def _from_job(job: Job) -> _Use:
    target = str(job.spec["target-table"])
    reads = {name: _mapping(job.tables.get(name)) for name in job.source_tables}
    return _Use(job.name, reads, target, _mapping(job.tables.get(target)), False)


def _from_stored(manifest: StoredManifest) -> _Use:
    target = str(manifest.job.get("target-table"))
    reads = {str(n): _mapping(d) for n, d in manifest.tables.items() if str(n) != target}
    return _Use(manifest.name, reads, target, _mapping(manifest.tables.get(target)), True)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@functools.lru_cache(maxsize=1 << 16)
def _key(name: str) -> tuple[str, ...]:
    """Two names of one catalog entry share this (Spark's resolution, ignoring case). Kept per
    name: every job's lineage asks it of the same few names (a source read by thousands)."""
    try:
        return parse_name(name).key
    except BadName:
        return (name.lower(),)


# -- where a table's data is ------------------------------------------------------------------


def _options(definition: dict[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in _mapping(definition.get("options")).items()}


def _servers(options: dict[str, Any]) -> str:
    found = {s.strip() for s in str(options.get("kafka.bootstrap.servers", "")).split(",")}
    return ",".join(sorted(s for s in found if s))


def _split_topic(where: str) -> tuple[str, str]:
    """`sinks.sink_of`'s "<topic> on <servers>", with the servers as `_servers` writes them."""
    topic, _, servers = where.partition(" on ")
    return topic, _servers({"kafka.bootstrap.servers": servers})


def read_places(job_name: str, definition: dict[str, Any]) -> tuple[SinkId, ...]:
    """Where a job reading `definition` reads from: a folder (or path pattern), a catalog
    table, Kafka topics (or a topic pattern); () when the definition does not say."""
    if "table" in definition:
        return (SinkId(CATALOG_TABLE, catalog_name(str(definition["table"]))),)
    options = _options(definition)
    if definition.get("format") == "kafka":
        servers = _servers(options)
        topics = [t.strip() for t in str(options.get("subscribe", "")).split(",") if t.strip()]
        assign = options.get("assign")
        if isinstance(assign, str):
            try:
                assigned = json.loads(assign)
            except ValueError:
                assigned = {}
            topics += [str(t) for t in assigned] if isinstance(assigned, dict) else []
        places = [SinkId(KAFKA_TOPIC, f"{topic} on {servers}") for topic in sorted(set(topics))]
        if options.get("subscribepattern"):
            places.append(SinkId(KAFKA_PATTERN, f"{options['subscribepattern']} on {servers}"))
        return tuple(places)
    if options.get("path"):
        return (SinkId(FOLDER, normalise_path(str(options["path"]), job_name)),)
    return ()


def write_place(job_name: str, definition: dict[str, Any]) -> SinkId | None:
    """Where a job writing `definition` lands (the identity that keeps one writer per sink)."""
    sink = sink_of(job_name, definition)
    if sink is not None and sink.kind == KAFKA_TOPIC:
        topic, servers = _split_topic(sink.where)
        return SinkId(KAFKA_TOPIC, f"{topic} on {servers}")
    return sink


_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _is_glob(path: str) -> bool:
    """Hadoop's glob characters, as Spark's file source reads them; `{a,b}` needs a comma
    (`{query_version}` is a placeholder, not an alternation)."""
    return bool(re.search(r"[*?\[]", path) or _BRACES.search(path))


def _alternatives(segment: str, limit: int = 64) -> list[str]:
    """`{a,b}` alternations spelled out (at most `limit`)."""
    parts = _BRACES.split(segment)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.islice(itertools.product(*choices), limit)]


def _segment_matches(pattern: str, text: str) -> bool:
    if not _is_glob(pattern):
        return pattern == text
    return any(fnmatch.fnmatchcase(text, p) for p in _alternatives(pattern))


def _folder_relation(written: str, read: str) -> str | None:
    """How a folder read relates to a folder written, or None when the reader does not see
    the writer's files."""
    if _is_glob(read):
        w, r = written.split("/"), read.split("/")
        if all(_segment_matches(p, t) for p, t in zip(r, w, strict=False)):
            return PATH_PATTERN
        return None
    if read == written:
        return SAME_FOLDER
    if written.startswith(read.rstrip("/") + "/"):
        return PARENT_FOLDER
    if read.startswith(written.rstrip("/") + "/"):
        return SUBFOLDER
    return None


def relation(written: SinkId, read: SinkId) -> str | None:
    """How a place read holds what is written at `written`: a `via` text, or None."""
    if written.kind == FOLDER and read.kind == FOLDER:
        return _folder_relation(written.where, read.where)
    if written.kind == CATALOG_TABLE and read.kind == CATALOG_TABLE:
        return SAME_CATALOG_TABLE if written.where == read.where else None
    if written.kind == KAFKA_TOPIC and read.kind == KAFKA_TOPIC:
        return SAME_TOPIC if written == read else None
    if written.kind == KAFKA_TOPIC and read.kind == KAFKA_PATTERN:
        topic, servers = _split_topic(written.where)
        pattern, theirs = read.where.rsplit(" on ", 1)
        try:
            matches = re.fullmatch(pattern, topic) is not None
        except re.error:
            return None
        return TOPIC_PATTERN if matches and servers == theirs else None
    return None


class _Writers:
    """Who writes where, indexed so that finding a reader's writers does not scan every job:
    by table key, by exact place, and by every folder above a written folder."""

    def __init__(self, uses: list[_Use]):
        self.by_key: dict[tuple[str, ...], list[_Use]] = {}
        self.by_place: dict[SinkId, list[_Use]] = {}
        self.below: dict[str, list[_Use]] = {}  # folder -> writers of folders inside it
        self.others: list[tuple[SinkId, _Use]] = []  # every written place, for patterns
        self.place: dict[str, SinkId | None] = {}
        #: `_at`'s answers, by place: thousands of jobs read the same few sources.
        self._found: dict[SinkId, list[tuple[_Use, str]]] = {}
        for use in uses:
            self.by_key.setdefault(_key(use.target), []).append(use)
            place = write_place(use.name, use.target_definition)
            self.place[use.name] = place
            if place is None:
                continue
            self.by_place.setdefault(place, []).append(use)
            self.others.append((place, use))
            if place.kind == FOLDER:
                for parent in _parents(place.where):
                    self.below.setdefault(parent, []).append(use)

    def of(self, reader: str, table: str, definition: dict[str, Any]) -> list[tuple[_Use, str]]:
        """Every writer of what `reader` reads as `table`, with how."""
        found: dict[str, tuple[_Use, str]] = {}
        for use in self.by_key.get(_key(table), []):
            found.setdefault(use.name, (use, SAME_TABLE))
        for place in read_places(reader, definition):
            for use, via in self._at(place):
                found.setdefault(use.name, (use, via))
        return [found[name] for name in sorted(found)]

    def _at(self, place: SinkId) -> list[tuple[_Use, str]]:
        found = self._found.get(place)
        if found is None:
            found = self._found[place] = self._writers_at(place)
        return found

    def _writers_at(self, place: SinkId) -> list[tuple[_Use, str]]:
        if place.kind == KAFKA_PATTERN or (place.kind == FOLDER and _is_glob(place.where)):
            hits = [(use, relation(written, place)) for written, use in self.others]
            return [(use, via) for use, via in hits if via]
        # The very place: the same folder, catalog table or topic.
        same = relation(place, place) or ""
        hits = [(use, same) for use in self.by_place.get(place, [])]
        if place.kind == FOLDER:
            hits += [(use, PARENT_FOLDER) for use in self.below.get(place.where, [])]
            for parent in _parents(place.where):
                hits += [(use, SUBFOLDER) for use in self.by_place.get(SinkId(FOLDER, parent), [])]
        return hits


def _parents(path: str) -> list[str]:
    """Every folder above `path`: `/a/b/c` -> `/a/b`, `/a`, `/`; `s3://b/a/c` -> `s3://b/a`,
    `s3://b`."""
    prefix = ""
    if "://" in path:
        scheme, _, path = path.partition("://")
        prefix = scheme + "://"
    # Cut at each slash, from the last: every written folder is cut so when the lineage is
    # built, and joining the parts again for each cut cost a plan of 10,000 jobs 0.06 s.
    parents, at = [], path.rfind("/")
    while at >= 0:
        parents.append(prefix + (path[:at] or "/"))
        at = path.rfind("/", 0, at)
    return parents


# -- the graph ----------------------------------------------------------------------------------


def build_lineage(
    jobs: Iterable[Job],
    stored: Iterable[StoredManifest] | Mapping[str, StoredManifest] | None = None,
    catalog: Catalog | None = None,
) -> Lineage:
    """The lineage of the desired `jobs`, plus the stored manifests of jobs not among them
    (they left --path but may still run); a job both desired and stored is taken as desired.
    With the `catalog`, the tables no job uses are listed too."""
    uses = {job.name: _from_job(job) for job in jobs}
    manifests = stored.values() if isinstance(stored, Mapping) else (stored or ())
    for manifest in manifests:
        if manifest.name not in uses:
            uses[manifest.name] = _from_stored(manifest)
    ordered = [uses[name] for name in sorted(uses)]
    writers = _Writers(ordered)

    links: list[Link] = []
    for reader in ordered:
        for table, definition in sorted(reader.reads.items()):
            for writer, via in writers.of(reader.name, table, definition):
                links.append(Link(writer.name, reader.name, writer.target, table, via))
    nodes = {
        use.name: JobNode(use.name, tuple(use.reads), use.target, use.stored_only)
        for use in ordered
    }
    return _assembled(nodes, _tables(ordered, writers, catalog), links, _unused(ordered, catalog))


def _assembled(
    nodes: dict[str, JobNode],
    tables: dict[str, TableNode],
    links: list[Link],
    unused: tuple[str, ...],
) -> Lineage:
    """The lineage of jobs `nodes` (by name, sorted) and their `links`: their order, cycles and
    indexes worked out."""
    links.sort(key=lambda link: (link.producer, link.consumer, link.table, link.read_as))
    names = list(nodes)
    succ: dict[str, set[str]] = {}
    pred: dict[str, set[str]] = {}
    for link in links:
        succ.setdefault(link.producer, set()).add(link.consumer)
        pred.setdefault(link.consumer, set()).add(link.producer)
    # Most jobs of a plan read sources no job writes, and write what no job reads: no set is
    # made or sorted for them.
    succ_t = {n: tuple(sorted(succ[n])) if n in succ else () for n in names}
    pred_t = {n: tuple(sorted(pred[n])) if n in pred else () for n in names}
    order, cycles, component = _order(names, succ_t, pred_t)
    into: dict[str, list[Link]] = {}
    out: dict[str, list[Link]] = {}
    for link in links:
        into.setdefault(link.consumer, []).append(link)
        out.setdefault(link.producer, []).append(link)

    return Lineage(
        jobs={name: nodes[name] for name in order},
        tables=tables,
        links=tuple(links),
        cycles=cycles,
        unused_tables=unused,
        _order=tuple(order),
        _succ=succ_t,
        _pred=pred_t,
        _rank={name: rank for rank, name in enumerate(order)},
        _component=component,
        _cycle_of={name: cycle for cycle in reversed(cycles) for name in cycle},
        _into={name: tuple(found) for name, found in into.items()},
        _from={name: tuple(found) for name, found in out.items()},
    )


_TEXT = {"type": "string"}
_NAMES = {"type": "array", "items": _TEXT}


def _record(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


#: The shape of `Lineage.to_dict()`'s document as `lineage_from_dict` reads it: what it works
#: out again (`upstream`, `downstream`, `order`, `cycles`) is not read.
SHAPE: dict[str, Any] = _record(
    ["jobs", "tables", "links", "unused-tables"],
    jobs={"type": "array", "items": _record(
        ["name", "reads", "writes", "stored-only"],
        name=_TEXT, reads=_NAMES, writes=_TEXT, **{"stored-only": {"type": "boolean"}})},
    tables={"type": "array", "items": _record(
        ["name", "format", "location"],
        name=_TEXT, format={"type": ["string", "null"]},
        location={"type": "array", "items": _record(["kind", "where"], kind=_TEXT, where=_TEXT)},
        **{"written-by": _NAMES, "read-by": _NAMES})},
    links={"type": "array", "items": _record(
        ["producer", "consumer", "table", "read-as", "via"], producer=_TEXT, consumer=_TEXT,
        table=_TEXT, via=_TEXT, **{"read-as": _TEXT})},
    **{"unused-tables": _NAMES},
)  # fmt: skip


def lineage_from_dict(doc: Any) -> Lineage:
    """The lineage `Lineage.to_dict()` wrote, read back (a plan's document carries the one its
    Markdown draws); ValueError naming the field when `doc` is not one: not of its shape, or
    naming a job or table it does not hold."""
    found = shape_problem(doc, _shape_checker())
    if found is not None:
        raise ValueError(f"{found[0]}: {found[1]}")

    def wrong(path: list[Any], said: str) -> ValueError:
        return ValueError(f"{field_path(path)}: {said}")

    nodes: dict[str, JobNode] = {}
    for i, job in enumerate(doc["jobs"]):
        if job["name"] in nodes:
            raise wrong(["jobs", i, "name"], "a job listed twice")
        nodes[job["name"]] = JobNode(
            job["name"], tuple(job["reads"]), job["writes"], job["stored-only"]
        )
    tables: dict[str, TableNode] = {}
    for i, table in enumerate(doc["tables"]):
        if table["name"] in tables:
            raise wrong(["tables", i, "name"], "a table listed twice")
        places = tuple(SinkId(p["kind"], p["where"]) for p in table["location"])
        tables[table["name"]] = TableNode(
            table["name"], table["format"], places,
            tuple(table.get("written-by", ())), tuple(table.get("read-by", ())),
        )  # fmt: skip
    for i, job in enumerate(doc["jobs"]):
        for j, name in enumerate(job["reads"]):
            if name not in tables:
                raise wrong(["jobs", i, "reads", j], "not a table of the lineage")
        if job["writes"] not in tables:
            raise wrong(["jobs", i, "writes"], "not a table of the lineage")
    links = []
    for i, link in enumerate(doc["links"]):
        for key in ("producer", "consumer"):
            if link[key] not in nodes:
                raise wrong(["links", i, key], "not a job of the lineage")
        if link["table"] != nodes[link["producer"]].writes:
            raise wrong(["links", i, "table"], "not the table its producer writes")
        if link["read-as"] not in nodes[link["consumer"]].reads:
            raise wrong(["links", i, "read-as"], "not a table its consumer reads")
        links.append(
            Link(link["producer"], link["consumer"], link["table"], link["read-as"], link["via"])
        )
    for i, name in enumerate(doc["unused-tables"]):
        if name not in tables:
            raise wrong(["unused-tables", i], "not a table of the lineage")
    nodes = {name: nodes[name] for name in sorted(nodes)}
    tables = {name: tables[name] for name in sorted(tables)}
    return _assembled(nodes, tables, links, tuple(doc["unused-tables"]))


@functools.cache
def _shape_checker() -> Any:
    return shape_validator(SHAPE)


def plan_lineage(facts: list[JobFacts]) -> Lineage:
    """The lineage a plan follows: the desired jobs, and the stored manifests of the jobs no
    longer desired (they may still run). It depends on nothing else of the facts: built once
    per plan, before the sinks' contracts are gathered (their readers are its links) and
    handed to the plan (decide/plan.py)."""
    ordered = sorted(facts, key=lambda f: f.name)
    return build_lineage(
        [f.desired for f in ordered if f.desired is not None],
        stored={f.name: f.stored for f in ordered if f.stored is not None},
    )


def with_unused_tables(lineage: Lineage, catalog: Catalog) -> Lineage:
    """`lineage` (built without the catalog) with the `catalog`'s tables none of its jobs reads
    or writes, as `build_lineage` lists them when given the catalog: the plan's own lineage
    becomes the one it shows without being built again (a second of 10,000 jobs)."""
    used = {_key(name) for node in lineage.jobs.values() for name in (node.writes, *node.reads)}
    unused = tuple(sorted(name for name in catalog.tables if _key(name) not in used))
    if not unused:
        return replace(lineage, unused_tables=())
    tables = dict(lineage.tables)
    for name in unused:
        tables[name] = TableNode(name, catalog.tables[name].definition.get("format"), (), (), ())
    tables = {name: tables[name] for name in sorted(tables)}
    return replace(lineage, tables=tables, unused_tables=unused)


def _tables(uses: list[_Use], writers: _Writers, catalog: Catalog | None) -> dict[str, TableNode]:
    written: dict[str, list[str]] = {}
    read: dict[str, list[str]] = {}
    places: dict[str, tuple[SinkId, ...]] = {}
    formats: dict[str, str | None] = {}
    for use in uses:  # by name: the first writer's (else reader's) view of a table
        written.setdefault(use.target, []).append(use.name)
        place = writers.place[use.name]
        places.setdefault(use.target, (place,) if place is not None else ())
        formats.setdefault(use.target, use.target_definition.get("format"))
    for use in uses:
        for table, definition in use.reads.items():
            read.setdefault(table, []).append(use.name)
            if table not in places:  # the first reader's view, as for writers
                places[table] = read_places(use.name, definition)
                formats[table] = definition.get("format")
    for table in _unused(uses, catalog):
        definition = catalog.tables[table].definition if catalog is not None else {}
        places[table] = ()
        formats[table] = definition.get("format")
    return {
        name: TableNode(
            name,
            formats[name],
            places[name],
            tuple(written.get(name, ())),
            tuple(read.get(name, ())),
        )
        for name in sorted(places)
    }


def _unused(uses: list[_Use], catalog: Catalog | None) -> tuple[str, ...]:
    if catalog is None:
        return ()
    used = {_key(name) for use in uses for name in (use.target, *use.reads)}
    return tuple(sorted(name for name in catalog.tables if _key(name) not in used))


def _order(
    names: list[str], succ: dict[str, tuple[str, ...]], pred: dict[str, tuple[str, ...]]
) -> tuple[list[str], tuple[tuple[str, ...], ...], dict[str, int]]:
    """Producers first, level by level, and the cycles: the strongly connected components
    (Kosaraju's, without recursion) in the order of the graph they condense to; and each
    job's component."""
    visited: set[str] = set()
    finished: list[str] = []
    for root in names:
        if root in visited:
            continue
        visited.add(root)
        stack = [(root, iter(succ[root]))]
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if c not in visited), None)
            if child is None:
                stack.pop()
                finished.append(node)
            else:
                visited.add(child)
                stack.append((child, iter(succ[child])))
    component: dict[str, int] = {}
    components: list[list[str]] = []
    for root in reversed(finished):  # components come out producers first
        if root in component:
            continue
        component[root] = len(components)
        members, todo = [root], [root]
        while todo:
            for parent in pred[todo.pop()]:
                if parent not in component:
                    component[parent] = len(components)
                    members.append(parent)
                    todo.append(parent)
        components.append(sorted(members))
    level = [0] * len(components)
    for index, members in enumerate(components):
        feeding = {component[p] for m in members for p in pred[m]} - {index}
        level[index] = max((level[c] + 1 for c in feeding), default=0)
    ranked = sorted(range(len(components)), key=lambda i: (level[i], components[i][0]))
    order = [name for i in ranked for name in components[i]]
    cycles = [
        _cycle(members, succ)
        for members in components
        if len(members) > 1 or members[0] in succ[members[0]]
    ]
    return order, tuple(sorted(cycles)), component


def _cycle(members: list[str], succ: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """A shortest cycle through the first member, within its component."""
    start, inside = members[0], set(members)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in succ[node]:
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return tuple(reversed(path))
                if child in inside and child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return (start,)  # not reached: a component always has a cycle through each member
