"""The facts of each checked sink contract (model/contracts.py): the schema a start would write,
analysed by Spark exactly as its run would build it, and what its sink holds.

The analysis is the runner's own (`runner/schema_probe.py`): one local Spark session per plan at
most, in a child process, building each query from its runtime manifest with its sources
standing in (an empty folder of the same format and schema, Kafka's fixed schema) and reading
what sinks with files hold (the runner's claims, a parquet or orc footer). Results that depend
only on their inputs (a query's output, a declared schema) are cached in the state folder by the
hash of those inputs, Spark's version and the runner's; a plan whose queries were analysed before
and whose sinks are empty starts no Spark at all.

They are gathered before anything is decided (`with_contracts`), for the jobs whose start could
change what they write (`changes_output`), from the job as read and its stored manifest: what a
query writes does not depend on its version's number or checkpoint. Where the sink is does,
when its path holds `{query_version}`: a restart writes the stored version's place, a new version
its own, so such a sink's facts are gathered for each version the job's start could take
(`start_versions`), and the plan judges the one its start has (decide/contracts.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from flink_sql_runner._runner.schema_rules import kafka_headers
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.sink_footer import sink_history_here
from flink_sql_runner.gather.spark_child import run_child
from flink_sql_runner.host.atomic import write_atomically
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.contracts import ContractFacts, Known, Reader, SinkHolds
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.model.runtime import (
    as_written,
    probe_manifest,
    resolved_table,
    source_tables,
)
from flink_sql_runner.model.same import unchanged
from flink_sql_runner.model.state import Analysed, StateFacts
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.cache_signing import env_cache_key, signed, unsigned
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.paths import holds_paths
from flink_sql_runner.read.sinks import normalise_path, schema_policy
from flink_sql_runner.stores.storage import Storage, StorageError
from flink_sql_runner.targets.runner_files import runner_zip

#: A probe that takes longer is stopped: its answers are unknown, not empty.
PROBE_TIMEOUT = 600.0
NOT_ANALYSED = "not analysed: a new location holds nothing it could break"
#: The creation time every analysed query is given: any time is cast to the same timestamp type.
_ANY_TIME = "2000-01-01T00:00:00Z"
#: Fields of a runtime manifest that say nothing about what its query writes (its version's
#: control files among them).
_RUN_FIELDS = ("run-id", "stop-marker", "status-file", "runs-file", "checkpoint-location",
               "on-schema-change", "beacon-file", "beat-file")  # fmt: skip
#: Fields of a job that shape what it writes: a change of any of them is checked.
OUTPUT_FIELDS = ("sql", "code", "source-tables", "target-table", "metadata-columns")
#: Fields of a source table that shape the columns it gives.
SOURCE_SHAPE = ("format", "table", "schema", "watermark")


@dataclass(frozen=True)
class Check:
    """One start to check: the manifest it would start with (the job as read, at a version its
    start could take), the one stored before (None for a new job), and the jobs of the deploy
    that read its sink."""

    manifest: StoredManifest
    previous: StoredManifest | None
    readers: tuple[tuple[str, str, str | None], ...] = ()  # (job, table, declared DDL)


#: Asks Spark: a request of jobs, DDLs and sinks -> (answers by key, why there are none).
Ask = Callable[[dict[str, Any]], tuple[dict[str, Any], str | None]]


def changes_output(facts: JobFacts) -> bool:
    """Whether a start for this job could write another schema than its sink holds: a new job,
    or a change of what shapes its output (the query, its tables, the metadata columns). Not a
    job that cannot be decided, or whose runs cannot be told (decide/tree.py starts neither).
    A job stored as git has it (`unchanged`, which gather found for most jobs of a plan) changes
    nothing: its paths were resolved at load, so resolving them again gives them back."""
    desired, stored = facts.desired, facts.stored
    if desired is None or desired.desired_state == "stopped" or facts.problem or facts.unknown:
        return False
    if stored is None:
        return True
    if unchanged(facts):
        return False
    spec = desired.spec
    old, tables = desired.resolved(stored.job, stored.tables)
    if any(spec.get(key) != old.get(key) for key in OUTPUT_FIELDS):
        return True
    target = str(spec.get("target-table"))
    if desired.tables.get(target) != tables.get(target):
        return True
    return any(
        _source_columns(desired.tables.get(name)) != _source_columns(tables.get(name))
        for name in {*desired.tables, *tables} - {target}
    )


def _source_columns(table: dict[str, Any] | None) -> tuple[Any, ...]:
    """What of a source table shapes the columns it gives. Its options (a rate limit, a path)
    do not, but for a Kafka source's `includeHeaders`: true adds a `headers` column, as in
    Spark (and in the plan's analysis, runner/schema_probe.py)."""
    table = table or {}
    kafka = str(table.get("format", "")).lower() == "kafka"
    headers = kafka and kafka_headers(table.get("options") or {})
    return (*(table.get(key) for key in SOURCE_SHAPE), headers)


def start_versions(facts: JobFacts) -> tuple[int, ...]:
    """Every version a start of this job could take, as decide/tree.py numbers them: a restart
    keeps the stored version, or the one an interrupted start recorded (once adopted); a clean
    start takes the next after the highest of those and of its checkpoint folders. Two for a
    job stored before (a restart's, a new version's), one for a new job."""
    known = [facts.stored.meta.query_version] if facts.stored is not None else []
    highest = [facts.checkpoint.highest_version if facts.checkpoint is not None else 0]
    if facts.intent is not None:
        known.append(facts.intent.intent.version)
        if facts.intent.checkpoint is not None:
            highest.append(facts.intent.checkpoint.highest_version)
    least = 0 if facts.stored is None else 1  # a stored job's next is after a version it has
    clean = {
        max((*versions, top)) + 1
        for top in highest
        for n in range(least, len(known) + 1)
        for versions in combinations(known, n)
    }
    return tuple(sorted({*known, *clean}))


def with_contracts(
    facts: list[JobFacts],
    lineage: Lineage,
    storage: Storage,
    cache_dir: Path | None,
    ask: Ask | None = None,
    state_for: Callable[[JobFacts], StoredManifest | None] | None = None,
) -> list[JobFacts]:
    """`facts`, each job whose start could change what it writes (`changes_output`) with the
    contract facts of its sink (`JobFacts.contracts`): one for a start of any version, or one
    per version of `start_versions` where the sink's place depends on it. Its readers are the
    desired jobs that read its sink in `lineage` (the plan's), with the schema they declare
    for it. And each job `state_for` gives a manifest for (a query change: the manifest whose
    state its new version would start without) with what the state of that manifest's query
    and of the desired one means (`JobFacts.state`, model/state.py). One probe for them all
    (`gather_contracts`)."""
    desired = {f.name: f.desired for f in facts if f.desired is not None}
    checks: list[Check] = []
    for job in facts:
        if job.desired is None or not changes_output(job):
            continue
        readers = tuple(
            (link.consumer, link.read_as, desired[link.consumer].tables[link.read_as].get("schema"))
            for link in lineage.links_from(job.name)
            if link.consumer in desired
            and link.read_as in desired[link.consumer].tables
        )  # fmt: skip
        spec, tables = job.desired.spec, job.desired.tables
        versions = start_versions(job)
        # A sink whose place cannot follow the version is checked once, for any start.
        for version in versions if _place_may_follow_version(job.desired) else versions[-1:]:
            start = StoredManifest(spec, tables, Meta(version, "plan", _ANY_TIME))
            checks.append(Check(start, job.stored, readers))
    changed: dict[str, tuple[dict[str, Any] | str, dict[str, Any] | str]] = {}
    bases: dict[str, StoredManifest] = {}
    for job in facts:
        base = state_for(job) if state_for is not None else None
        if base is not None and job.desired is not None:
            changed[job.name] = (_state_doc(base), _state_doc(_as_new(job, base)))
            bases[job.name] = base
    if not checks and not changed:
        return facts
    found: dict[str, list[ContractFacts | None]] = {}
    states: dict[str, StateFacts] = {}
    contracts = gather_contracts(checks, storage, cache_dir, ask, changed, states)
    for check, contract in zip(checks, contracts, strict=True):
        version = check.manifest.meta.query_version
        found.setdefault(check.manifest.name, []).append(
            replace(contract, version=version) if contract is not None else None
        )
    facts = [replace(f, contracts=_by_version(found[f.name])) if f.name in found else f
             for f in facts]  # fmt: skip
    return [replace(f, state=replace(states[f.name], base=bases[f.name],
                                     checkpoint=_checkpoint_size(storage, bases[f.name])))
            if f.name in states else f for f in facts]  # fmt: skip


def _checkpoint_size(storage: Storage, base: StoredManifest) -> tuple[int, int] | None:
    """The files and bytes of `base`'s checkpoint (what continuing from its state copies);
    None where it cannot be listed."""
    try:
        found = storage.tree(base.checkpoint)
    except FsrError:
        return None
    return len(found), sum(size for _, size in found)


def _as_new(job: JobFacts, base: StoredManifest) -> StoredManifest:
    """The desired job as its new version would start (any version: what its query means does
    not depend on it)."""
    assert job.desired is not None
    meta = Meta(base.meta.query_version + 1, "plan", _ANY_TIME)
    return StoredManifest(job.desired.spec, job.desired.tables, meta)


def _state_doc(manifest: StoredManifest) -> dict[str, Any] | str:
    """The runtime manifest whose query's state is analysed, or why it cannot be built here
    (an environment variable not set here, a field it lacks)."""
    try:
        return probe_manifest(manifest, "plan")
    except (FsrError, KeyError) as exc:
        return f"its runtime manifest cannot be built here ({exc})"


def _place_may_follow_version(job: Job) -> bool:
    """Whether the job's sink table holds what its version resolves: `{query_version}`, or
    an environment variable (its value may)."""
    target = job.tables.get(str(job.spec.get("target-table")))
    text = json.dumps(target, default=str)
    return "{query_version}" in text or "${" in text


def _by_version(found: list[ContractFacts | None]) -> tuple[ContractFacts, ...]:
    """One job's contract facts: one for every version where they do not depend on it."""
    first = replace(found[0], version=None) if found[0] is not None else None
    if all((replace(c, version=None) if c is not None else None) == first for c in found):
        return (first,) if first is not None else ()
    return tuple(c for c in found if c is not None)


def gather_contracts(
    checks: list[Check],
    storage: Storage,
    cache_dir: Path | None,
    ask: Ask | None = None,
    changed: dict[str, tuple[dict[str, Any] | str, dict[str, Any] | str]] | None = None,
    states: dict[str, StateFacts] | None = None,
) -> list[ContractFacts | None]:
    """The contract facts of each check whose sink can be checked, in the checks' order (None
    where there is nothing to check): a sink that holds files, or, for a job deployed before,
    a sink with a declared schema, readers that declare one, or a Kafka topic. A new job into
    an empty sink is not analysed: nothing there can break (the plan's cost stays that of
    reading the store). The checks of one job (its start's versions) share one analysis of its
    query. `ask` is the runner's probe in a child process unless given. `changed`: by job, the
    runtime manifests of its stored and desired query, whose stateful operators the same probe
    reads into `states`."""
    probe: _Probe | None = None  # made once needed: it imports pyspark and hashes the runner
    staged: dict[int, tuple[Check, dict[str, Any], str, str | None, bool, str | None]] = {}
    analysed: dict[
        str, dict[str, Any]
    ] = {}  # by job: the runtime manifest its query is analysed in
    for index, check in enumerate(checks):
        if check.previous is None and _new_into_nothing(check.manifest, storage):
            continue  # the look below would skip it too, after building its runtime manifest
        try:
            doc = probe_manifest(check.manifest, "plan")
        except (FsrError, KeyError):
            continue  # an environment variable not set here: its run checks the sink
        target = doc["tables"].get(doc["target-table"])
        if not isinstance(target, dict):
            continue
        sink, fmt = _sink_of(target)
        if sink is None:
            continue  # foreach, console, memory: nothing the deployer can read
        holds_files = fmt in FILE_FORMATS and not _empty(storage, sink)
        declared = bool(target.get("schema")) or any(ddl for _, _, ddl in check.readers)
        analyse = holds_files or (check.previous is not None and (declared or fmt == "kafka"))
        moved = _moved_from(check, sink)
        if not analyse and moved is None:
            continue  # nothing written there yet, and a new job: nothing to break
        staged[index] = (check, doc, sink, fmt, analyse, moved)
        if not analyse:
            continue  # a new location, empty: said, with where its readers must move
        probe = probe or _Probe(cache_dir, ask or run_probe)
        if check.manifest.name not in analysed:
            analysed[check.manifest.name] = doc
            probe.want_job(doc)
        if target.get("schema"):
            probe.want_ddl(str(target["schema"]))
        for _, _, ddl in check.readers:
            if ddl:
                probe.want_ddl(ddl)
        if holds_files:
            found = sink_history_here(storage, fmt, sink)
            if found is None:
                probe.want_sink(fmt, sink)
            else:
                probe.known_sink(fmt, sink, found)
    found: list[ContractFacts | None] = [None] * len(checks)
    if not staged and not changed:
        return found
    probe = probe or _Probe(cache_dir, ask or run_probe)
    for docs in (changed or {}).values():
        for doc in docs:
            if isinstance(doc, dict):
                probe.want_state(doc)
    probe.run()
    if states is not None:
        for name, (old, new) in (changed or {}).items():
            states[name] = StateFacts(probe.state(old), probe.state(new))
    for index, (check, doc, sink, fmt, analyse, moved) in staged.items():
        target = doc["tables"][doc["target-table"]]
        policy, policy_from = schema_policy(check.manifest.job, check.manifest.tables)
        found[index] = ContractFacts(
            sink=as_written(sink, check.manifest),
            format=fmt,
            policy=policy,
            policy_from=policy_from,
            output=probe.job(analysed[check.manifest.name])
            if analyse
            else Known(unknown=NOT_ANALYSED),
            holds=_holds(probe, target, fmt, sink),
            declared=probe.ddl(str(target["schema"])) if target.get("schema") else None,
            readers=tuple(
                Reader(job, table, probe.ddl(ddl) if ddl else None)
                for job, table, ddl in check.readers
            ),
            moved_from=as_written(moved, check.previous or check.manifest) if moved else None,
            spark=probe.spark,
        )
    return found


def _new_into_nothing(manifest: StoredManifest, storage: Storage) -> bool:
    """Whether a new job's start has nothing to check: its target (resolved as its run sees
    it) is no sink the deployer reads, or a file sink that holds nothing. One look at the sink
    per new job, so that a plan of thousands of new jobs costs no runtime manifest each. False
    when that cannot be told this way: the full look decides."""
    spec = manifest.job
    target_name = spec.get("target-table")
    if "checkpoint-root" not in spec or target_name is None:
        return False
    if str(target_name) in source_tables(manifest):
        return False  # registered under its view's name: as the runtime manifest does it
    try:
        target = resolved_table(manifest, str(target_name))
    except FsrError:
        return False
    if not isinstance(target, dict):
        return True
    sink, fmt = _sink_of(target)
    return sink is None or fmt not in FILE_FORMATS or _empty(storage, sink)


def _options(definition: dict[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in (definition.get("options") or {}).items()}


def _sink_of(target: dict[str, Any]) -> tuple[str | None, str | None]:
    """The sink as people know it (a path, a catalog table, a topic) and its format."""
    if "table" in target:
        return str(target["table"]), None
    fmt = str(target.get("format", "")).lower() or None
    options = _options(target)
    if fmt == "kafka":
        return (str(options["topic"]), fmt) if options.get("topic") else (None, fmt)
    if options.get("path"):
        return str(options["path"]), fmt
    return None, fmt


def _empty(storage: Storage, path: str) -> bool:
    """Whether a file sink holds nothing a reader would read: no file-sink log, no claim, no
    data file. A sink the deployer cannot list is not empty: the probe reads it."""
    try:
        return storage.is_empty(path)
    except (StorageError, FsrError):
        return False


def _holds(probe: _Probe, target: dict[str, Any], fmt: str | None, sink: str) -> SinkHolds:
    if "table" in target:
        return SinkHolds(unknown="a catalog table's files are checked by its run")
    if fmt == "kafka":
        return SinkHolds()
    if fmt not in FILE_FORMATS:
        return SinkHolds(unknown=f"a {fmt} sink keeps no schema the deployer can read")
    return probe.sink(fmt, sink)


def _moved_from(check: Check, sink: str) -> str | None:
    previous = check.previous
    if previous is None:
        return None
    try:
        target = resolved_table(previous, str(previous.job.get("target-table")))
    except FsrError:
        return None
    if not isinstance(target, dict):
        return None
    old, _ = _sink_of(target)
    if old is None or old == sink:
        return None
    # A manifest stored with a relative path means it against the folder the deploy runs in.
    name = check.manifest.name
    same = holds_paths(target) and normalise_path(old, name) == normalise_path(sink, name)
    return None if same else old


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _Probe:
    """What to ask the runner's probe, answered from the cache where the inputs were seen."""

    def __init__(self, cache_dir: Path | None, ask: Ask):
        self.cache_dir = cache_dir
        #: The key its answers are signed with where the plan key is set (the cache folder
        #: may be a CI cache others could write: an answer not signed with it is asked again).
        self._signing = env_cache_key("schemas")
        self.ask = ask
        import pyspark

        self.spark: str = pyspark.__version__
        self._salt = {"spark": self.spark, "runner": runner_zip()[0]}
        self._asked: dict[str, dict[str, dict[str, Any]]] = {
            "jobs": {}, "state": {}, "sinks": {}, "ddl": {}}  # fmt: skip
        self._answers: dict[str, dict[str, Any]] = {"jobs": {}, "state": {}, "sinks": {},
                                                    "ddl": {}}  # fmt: skip

    def _key(self, kind: str, value: Any) -> str:
        return _digest({**self._salt, kind: value})

    @staticmethod
    def _shape(doc: dict[str, Any]) -> dict[str, Any]:
        """What of a runtime manifest decides its output schema (not its version's number)."""
        shape = {k: v for k, v in doc.items() if k not in _RUN_FIELDS and k != "conf"}
        # The job's spark.sql.* settings shape its output types (spark.sql.timestampType).
        shape["conf"] = {k: v for k, v in (doc.get("conf") or {}).items()}
        # The metadata columns' values are literals of fixed types (runner/query.py): a plan
        # made at one time and its deploy a moment later analyse one query, not two.
        shape["meta"] = {"query-version": 1, "query-id": "-", "query-create-timestamp": _ANY_TIME}
        return shape

    def _query_key(self, kind: str, doc: dict[str, Any]) -> str:
        """The cache key of a query's analysis: its shape, but for the options of the table it
        writes (a path, a topic), which shape no column of it (runner/schema_probe.py analyses
        the query and its metadata columns, never the writer): a job moved to a new topic or
        path is not analysed again. Kept when the job also reads that table."""
        shape = self._shape(doc)
        target = doc.get("target-table")
        tables = shape.get("tables")
        if (
            isinstance(tables, dict)
            and isinstance(tables.get(target), dict)
            and target not in (doc.get("source-tables") or [])
        ):
            written = {k: v for k, v in tables[target].items() if k != "options"}
            shape["tables"] = {**tables, target: written}
        return self._key(kind, shape)

    def want_job(self, doc: dict[str, Any]) -> None:
        self._want_query("jobs", "job", doc)

    def want_state(self, doc: dict[str, Any]) -> None:
        self._want_query("state", "state", doc)

    def _want_query(self, kind: str, key: str, doc: dict[str, Any]) -> None:
        """Ask for what a runtime manifest's query writes (`jobs`) or keeps (`state`); a code
        job is not run at plan time (said by `job` and `state`)."""
        if doc.get("code") is not None:
            return
        shape = self._shape(doc)
        body = {"manifest": {**doc, **shape}, "conf": shape["conf"]}
        self._want(kind, self._query_key(key, doc), body)

    def state(self, doc: dict[str, Any] | str) -> Analysed:
        if isinstance(doc, str):
            return Analysed(unknown=doc)
        if doc.get("code") is not None:
            return Analysed(unknown="a code job's query is known only when it runs")
        return Analysed.from_dict(self._answers["state"].get(self._query_key("state", doc)))

    def want_ddl(self, ddl: str) -> None:
        self._want("ddl", self._key("ddl", ddl), {"ddl": ddl})

    def want_sink(self, fmt: str, path: str) -> None:
        # What a sink holds changes with every batch: never cached.
        self._asked["sinks"][f"{fmt}:{path}"] = {"format": fmt, "path": path}

    def known_sink(self, fmt: str, path: str, answer: dict[str, Any]) -> None:
        """What a sink holds, read without Spark (gather/sink_footer.py)."""
        self._answers["sinks"][f"{fmt}:{path}"] = answer

    def _want(self, kind: str, key: str, body: dict[str, Any]) -> None:
        cached = self._cached(kind, key)
        if cached is not None:
            self._answers[kind][key] = cached
        else:
            self._asked[kind][key] = body

    def _cached(self, kind: str, key: str) -> dict[str, Any] | None:
        """The answer kept for `key`, if it is one (of its kind's shape, signed where answers
        are signed); None otherwise: asked again."""
        if self.cache_dir is None:
            return None
        try:
            text = unsigned((self.cache_dir / f"{key}.json").read_text(), self._signing)
            doc = json.loads(text) if text is not None else None
            if not isinstance(doc, dict):
                return None
            (Analysed if kind == "state" else Known).from_dict(doc)  # its shape, or raises
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return None
        return doc

    def run(self) -> None:
        """Ask the probe what the cache does not know, once; cache what depends only on its
        inputs. A probe that fails leaves every answer it owed unknown."""
        if not any(self._asked.values()):
            return
        request = {
            kind: [{"key": key, **body} for key, body in asked.items()]
            for kind, asked in self._asked.items()
        }
        answers, why = self.ask(request)
        mark("schemas analysed", jobs=len(self._asked["jobs"]), sinks=len(self._asked["sinks"]))
        if answers.get("spark"):
            self.spark = str(answers["spark"])
        for kind, asked in self._asked.items():
            for key in asked:
                answer = (answers.get(kind) or {}).get(key)
                if not isinstance(answer, dict):
                    answer = {"unknown": f"Spark's analysis did not answer ({why})"}
                self._answers[kind][key] = answer
                if kind != "sinks" and why is None and self.cache_dir is not None:
                    self.cache_dir.mkdir(parents=True, exist_ok=True)
                    text = signed(json.dumps(answer), self._signing)
                    write_atomically(self.cache_dir / f"{key}.json", text)

    def job(self, doc: dict[str, Any]) -> Known:
        if doc.get("code") is not None:
            return Known(
                unknown="a code job's output is known only when it runs; its run checks the "
                "sink before its first write"
            )
        return Known.from_dict(self._answers["jobs"][self._query_key("job", doc)])

    def ddl(self, ddl: str) -> Known:
        return Known.from_dict(self._answers["ddl"][self._key("ddl", ddl)])

    def sink(self, fmt: str, path: str) -> SinkHolds:
        answer = self._answers["sinks"].get(f"{fmt}:{path}")
        return SinkHolds() if answer is None else SinkHolds.from_dict(answer)


def run_probe(
    request: dict[str, Any], spark_submit: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """The probe's answers, and why there are none (None when it answered); run on the Spark
    at `spark_submit` (the jobs')."""
    return run_child("schema_probe", request, PROBE_TIMEOUT, spark_submit=spark_submit)
