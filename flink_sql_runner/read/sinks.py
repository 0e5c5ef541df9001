"""Which sink a job writes, so that no two jobs write one.

Two writers of one file sink lose rows: Spark's file sink skips every batch id its
`_spark_metadata` log already holds, so the slower writer's batches vanish (SPEC's file-sink
trap, across jobs). Two writers of one catalog table or Kafka topic break each job's promise of
exactly its own rows. A sink is identified by where the data lands:

- a folder (any format with `options.path`): the normalised path; `s3://`, `s3a://` and `s3n://`
  are one scheme, a relative path is taken from where the deployer runs (as the local runner is),
  `{job_name}` is resolved, `{query_version}` and `${ENV}` stay as written. A folder inside
  another job's sink folder is the same sink (its files would be read as part of it).
- a catalog table (`table:`): its name without case, in `spark_catalog.default` unless qualified.
- a Kafka topic: the bootstrap servers (as a set: order, spacing, repeats and the case of host
  names do not count) and the topic, `{job_name}` resolved (a table shared by jobs whose topic
  holds it is one topic per job). Two lists that share a broker reach one cluster: the same
  topic through both is one sink.

`SinkIndex` finds the sinks that overlap one without comparing it with every other: an exact
key per sink, and for folders every folder above them (at `/`), so a look costs the depth of a
path and the one-writer-per-sink check over n jobs about n looks, not n x n comparisons.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flink_sql_runner.errors import Problem


@dataclass(frozen=True, order=True)
class SinkId:
    kind: str  # "folder", "catalog table", "kafka topic"
    where: str

    def __str__(self) -> str:
        return f"{self.kind} {self.where}"

    def overlaps(self, other: SinkId) -> bool:
        if self.kind != other.kind:
            return False
        if self == other:
            return True
        if self.kind == "kafka topic":
            return bool(set(self.kafka_keys()) & set(other.kafka_keys()))
        if self.kind != "folder":
            return False
        return self.where.startswith(other.where + "/") or other.where.startswith(self.where + "/")

    def kafka_keys(self) -> list[str]:
        """A Kafka topic sink's topic on each of its brokers: two lists that share a broker
        reach one cluster (a client learns all of it from any broker it names), so one topic
        written through both is one sink."""
        topic, _, servers = self.where.rpartition(" on ")
        return [f"{topic} on {server}" for server in servers.split(",") if server]


T = TypeVar("T")


class SinkIndex(Generic[T]):
    """Sinks with what writes each (a job, a name), to find those that overlap a sink
    (`SinkId.overlaps`, exactly) by a few dictionary looks instead of a comparison with each.

    A folder `a` is inside a folder `b` when `a` starts with `b + "/"`: `b` is then `a` cut at
    one of its slashes, so `a`'s folders above are looked up by those cuts, and the folders
    inside `b` are listed under `b` (each folder is listed under each of its cuts when added).
    `probes` counts the dictionary looks, for tests that show the cost grows with n."""

    def __init__(self, entries: Iterable[tuple[SinkId, T]] = ()):
        # Keyed by (kind, where) tuples, not SinkIds: a look per folder above a sink would make
        # a SinkId each, and a frozen dataclass is made and hashed in Python.
        self._exact: dict[tuple[str, str], list[tuple[int, SinkId, T]]] = {}
        self._inside: dict[str, list[tuple[int, SinkId, T]]] = {}
        self._added = 0
        self.probes = 0
        for sink, item in entries:
            self.add(sink, item)

    def add(self, sink: SinkId, item: T) -> None:
        entry = (self._added, sink, item)
        self._added += 1
        self._exact.setdefault((sink.kind, sink.where), []).append(entry)
        if sink.kind == "folder":
            for above in _cuts(sink.where):
                self._inside.setdefault(above, []).append(entry)
        elif sink.kind == "kafka topic":
            for key in sink.kafka_keys():
                self._exact.setdefault(("kafka broker", key), []).append(entry)

    def overlapping(self, sink: SinkId) -> list[tuple[SinkId, T]]:
        """Every (sink, item) added whose sink overlaps `sink`, in the order they were added."""
        self.probes += 1
        exact = self._exact
        found = list(exact.get((sink.kind, sink.where), ()))
        if sink.kind == "kafka topic":
            keys = sink.kafka_keys()
            self.probes += len(keys)
            seen = {id(entry) for entry in found}
            for key in keys:
                for entry in exact.get(("kafka broker", key), ()):
                    if id(entry) not in seen:
                        seen.add(id(entry))
                        found.append(entry)
        if sink.kind == "folder":
            cuts = _cuts(sink.where)
            self.probes += 1 + len(cuts)
            found += self._inside.get(sink.where, ())
            for above in cuts:
                found += exact.get(("folder", above), ())
        if len(found) > 1:
            found.sort(key=_added)
        return [(theirs, item) for _, theirs, item in found]


def _added(entry: tuple[int, SinkId, Any]) -> int:
    return entry[0]


def _cuts(where: str) -> list[str]:
    """Every text that `where` starts with followed by a `/`: `/a/b` -> "", "/a"."""
    cuts, at = [], where.find("/")
    while at >= 0:
        cuts.append(where[:at])
        at = where.find("/", at + 1)
    return cuts


def normalise_path(path: str, job_name: str) -> str:
    path = path.replace("{job_name}", job_name)
    for scheme in ("s3a://", "s3n://"):
        if path.startswith(scheme):
            path = "s3://" + path[len(scheme) :]
    if path.startswith("file://"):
        path = path[len("file://") :] or "/"
    elif path.startswith("file:"):
        path = path[len("file:") :]
    if "://" in path:
        scheme, _, rest = path.partition("://")
        return f"{scheme.lower()}://{posixpath.normpath('/' + rest).lstrip('/')}"
    if path.startswith("/"):  # most are: `abspath` would only normalise it once more
        return posixpath.normpath(path)
    return posixpath.normpath(os.path.abspath(path))


def kafka_servers(servers: Any) -> str:
    """A `kafka.bootstrap.servers` list as one text per cluster: "b:9092, a:9092" and
    "a:9092,b:9092" name the same brokers (the client tries them in any order), and so do
    "Kafka-1:9092" and "kafka-1:9092" (host names are without case); a `${ENV_VAR}` is kept as
    written."""
    found = {_server(server) for server in str(servers).split(",")}
    return ",".join(sorted(server for server in found if server))


def _server(server: str) -> str:
    server = server.strip()
    return server if "${" in server else server.lower()


def same_cluster(one: str, other: str) -> bool:
    """Whether two `kafka.bootstrap.servers` lists (as `kafka_servers` writes them) name the
    same cluster as far as the deployer can tell: they share a broker. A client learns the whole
    cluster from any one broker of its list, so a broker added to or removed from a list leaves
    it the same cluster; lists that share none may be two clusters (a topic mirrored to another
    one keeps its name, not its offsets)."""
    return bool(set(one.split(",")) & set(other.split(","))) if one and other else one == other


def catalog_name(name: str) -> str:
    parts = name.lower().split(".")
    if len(parts) == 1:
        parts = ["default", *parts]
    if len(parts) == 2:
        parts = ["spark_catalog", *parts]
    return ".".join(parts)


def sink_of(job_name: str, definition: dict[str, Any]) -> SinkId | None:
    """Where a job's target table lands; None when the definition does not say (a sink whose
    identity the deployer cannot see, e.g. `foreach` or `console`)."""
    if "table" in definition:
        return SinkId("catalog table", catalog_name(str(definition["table"])))
    options = {str(k).lower(): v for k, v in (definition.get("options") or {}).items()}
    if definition.get("format") == "kafka":
        topic = options.get("topic")
        if topic is None:
            return None
        topic = str(topic).replace("{job_name}", job_name)
        servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
        return SinkId("kafka topic", f"{topic} on {servers}")
    if options.get("path"):
        return SinkId("folder", normalise_path(str(options["path"]), job_name))
    return None


def target_sink(name: str, spec: dict[str, Any], tables: dict[str, Any]) -> SinkId | None:
    definition = tables.get(str(spec.get("target-table")))
    return sink_of(name, definition) if isinstance(definition, dict) else None


def shared_sink_problems(jobs: list[Any]) -> list[Problem]:
    """Every desired job (`manifest.Job`) that would write a sink another one writes: one line
    per job, in its file, naming the others and their files."""
    sinks = [(job, target_sink(job.name, job.spec, job.tables)) for job in jobs]
    index = SinkIndex((sink, job) for job, sink in sinks if sink is not None)
    problems: list[Problem] = []
    for job, sink in sinks:
        if sink is None:
            continue
        others = [(other, theirs) for theirs, other in index.overlapping(sink) if other is not job]
        if not others:
            continue
        named = ", ".join(
            f"job {other.name!r} ({other.file}" + ("" if theirs == sink else f", {theirs}") + ")"
            for other, theirs in others
        )
        problems.append(
            Problem(
                job.file,
                "target-table",
                f"job {job.name!r} writes {sink}, as {named} also does: two jobs cannot write "
                "one sink",
            )
        )
    return problems


def schema_policy(spec: dict[str, Any], tables: dict[str, Any]) -> tuple[str, str]:
    """The job's `on-schema-change` and where it was set: the job's own, else its sink
    table's, else the default (`additive`)."""
    if spec.get("on-schema-change"):
        return str(spec["on-schema-change"]), "the job"
    target = str(spec.get("target-table"))
    definition = tables.get(target)
    if isinstance(definition, dict) and definition.get("on-schema-change"):
        return str(definition["on-schema-change"]), f"table {target}"
    return "additive", "the default"
