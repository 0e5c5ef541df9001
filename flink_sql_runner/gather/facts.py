"""Gathering the facts a plan is made from: stored manifests, what runs, what state exists.

Everything is read before anything is decided or done. A fact that cannot be read for one job
(an unreadable manifest or intent record, a checkpoint S3 refuses) is that job's `problem`: its
decision is an error and the other jobs go on. A listing of the target that fails stops the
whole command, since no job can be decided without knowing what runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather import checkpoint_reader
from flink_sql_runner.gather.offsets import version_finished
from flink_sql_runner.host import runtime
from flink_sql_runner.model.control import ControlFiles, run_status
from flink_sql_runner.model.facts import CheckpointFacts, IntentFacts, JobFacts
from flink_sql_runner.model.intents import Intent, IntentLog, Phase, settle
from flink_sql_runner.model.runs import Listing, Run
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.stores.base import ManifestStore, Snapshot
from flink_sql_runner.stores.s3uri import is_s3_uri
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.stores.webhdfs import is_hdfs_uri
from flink_sql_runner.targets.base import Target

#: Reads (store, checkpoints) are I/O: many at once.
GATHER_WORKERS = 32


def gather(
    jobs: list[Job],
    store: ManifestStore,
    target: Target,
    storage: Storage,
    include_orphans: bool = True,
    workers: int = GATHER_WORKERS,
    listing: Listing | None = None,
    running_commits: bool = True,
    snapshot: Snapshot | None = None,
    checkpoints: bool = True,
    checkpoint_unused: Callable[[JobFacts], bool] | None = None,
) -> list[JobFacts]:
    """Every fact the decision tree needs, read before anything is decided or done. `listing`:
    the target's listing when the caller already has it (one listing per command).
    `running_commits`: False for a plan, which decides a job whose run is alive (and that has
    no intent record) without its checkpoint's metadata and commits (decide/tree.py): those
    are not read for it (`CheckpointFacts.inspected`). `checkpoint_unused`: whether the
    decision of a job whose run is alive, without an intent record, uses nothing of its
    checkpoint (decide/plan.py::checkpoint_unused); such a job's is not read at all (None).
    `snapshot`: the store's state to gather from when the caller has it (`store_ahead.py`),
    instead of a listing now. `checkpoints`: False for `status`, which reads what it shows of a
    stored version's checkpoint itself, and only where it may have changed
    (watch/status_reads.py): none is read here, but an interrupted command's."""
    desired = {job.name: job for job in jobs}
    names = set(desired)
    # Three independent questions (the store's listing, its intent records, what runs) are
    # asked at once; answers are taken in this order, so the first failure is the one reported.
    with runtime.pool(3, "gather") as pool:
        stored_names = pool.submit(store.snapshot) if snapshot is None else None
        pending = pool.submit(IntentLog(store).read_all)
        runs = pool.submit(target.list_runs) if listing is None else None
        snapshot = runtime.result_of(stored_names) if stored_names is not None else snapshot
        assert snapshot is not None
        intents = runtime.result_of(pending)
        listing = runtime.result_of(runs) if runs is not None else listing
    assert listing is not None
    if include_orphans:
        names |= set(snapshot.names) | set(listing.runs)
        # A job whose first start failed is known by the record it kept, and by nothing else.
        names |= {n for n, i in intents.intents.items() if i.failed_start is not None}
    wanted = names if include_orphans else set(desired)
    intent_of = {n: i for n, i in intents.intents.items() if n in wanted}
    intent_problems = {n: p for n, p in intents.problems.items() if n in wanted}
    names |= set(intent_of) | set(intent_problems)
    ordered = sorted(names)
    reads = store.read_many(ordered, workers, snapshot=snapshot)

    def one(name: str) -> JobFacts:
        job, read = desired.get(name), reads.stored(name)
        previous, token = read.manifest, read.token
        facts = JobFacts(name, job, previous, listing.of(name), token=token)
        problem = reads.problems.get(name) or intent_problems.get(name)
        if problem:
            return JobFacts(name, job, None, facts.runs, problem=problem)
        try:
            intent = intent_of.get(name)
            inspect = running_commits or intent is not None or not facts.alive
            checkpoint = None
            unused = not inspect and checkpoint_unused is not None and checkpoint_unused(facts)
            if checkpoints and not unused:
                checkpoint = _checkpoint_facts(name, job, previous, storage, inspect)
            settled = _intent_facts(intent, facts, storage) if intent else None
        except FsrError as exc:
            problem = str(exc).splitlines()[0]
            return JobFacts(name, job, previous, facts.runs, problem=problem, token=token)
        # A job whose checkpoint the plan leaves unused is stored as git has it: kept, so that
        # the plan does not compare the two again.
        same = (job, previous) if unused and job is not None and previous is not None else None
        return JobFacts(
            name, job, previous, facts.runs, checkpoint, settled, token=token, found_same=same
        )

    # Local checkpoint folders answer in microseconds and threads would only queue for the
    # GIL; remote ones (S3, HDFS) wait on the network, many at once.
    remote = _any_remote(desired.values(), reads.manifests.values())
    if workers <= 1 or len(ordered) <= 1 or not remote:
        return [one(n) for n in ordered]
    with runtime.pool(workers, "gather") as pool:
        return runtime.results_of([pool.submit(one, name) for name in ordered])


def _checkpoint_facts(
    name: str,
    job: Job | None,
    stored: StoredManifest | None,
    storage: Storage,
    inspect: bool = True,
) -> CheckpointFacts | None:
    root = job.checkpoint_root if job else None
    stored_root = str(stored.job.get("checkpoint-root", "")).rstrip("/") if stored else ""
    root = root or stored_root
    if not root:
        return None
    highest = checkpoint_reader.highest_version(storage, f"{root}/{name}")
    if stored is None or not stored_root:
        return CheckpointFacts(f"{root}/{name}", False, None, highest)
    location = f"{stored_root}/{name}/{stored.meta.query_version}"
    # Its sources' offsets matter only where a new version may carry a Kafka source's.
    kafka = any(isinstance(t, dict) and t.get("format") == "kafka" for t in stored.tables.values())
    if not inspect:  # its latest offsets file; not its metadata and commits
        latest = checkpoint_reader.latest_offsets(storage, location, sources=kafka)
        pinned, sources = _pins_and_sources(latest)
        return CheckpointFacts(location, False, None, highest, pinned, inspected=False,
                               latest_sources=sources)  # fmt: skip
    info = checkpoint_reader.inspect_checkpoint(storage, location)
    latest = None
    if info.last_offset is not None:
        latest = checkpoint_reader.latest_offsets(storage, location, info.last_offset, kafka)
    pinned, sources = _pins_and_sources(latest)
    return CheckpointFacts(
        location, info.valid, info.last_committed, highest, pinned, unplanned=info.unplanned,
        latest_sources=sources,
    )  # fmt: skip


def _pins_and_sources(
    latest: checkpoint_reader.OffsetsFile | None,
) -> tuple[dict[str, str] | None, tuple[Any, ...] | None]:
    """What an offsets file says a checkpoint pins, and its source lines."""
    if latest is None:
        return None, None
    return latest.conf, latest.sources


def _intent_facts(intent: Intent, facts: JobFacts, storage: Storage) -> IntentFacts:
    return intent_evidence(intent, facts.runs, storage)


def intent_evidence(intent: Intent, runs: tuple[Run, ...], storage: Storage) -> IntentFacts:
    """The evidence about an interrupted command's run, settled by its intent's own rules
    (model/intents.py): the job's listed runs, its run's status file, the batches its runs
    finished, and a prepared run's go file. The one reading of it, for deploys, `watch`,
    `stop` and `forget` alike. FsrError when its checkpoint cannot be read."""
    checkpoint = _checkpoint_facts(intent.name, None, intent.manifest, storage)
    status, go_given = None, None
    if intent.kind.starts:
        root = str(intent.manifest.job.get("checkpoint-root", "")).rstrip("/")
        control = ControlFiles.of(f"{root}/{intent.name}", intent.version)
        status = run_status(storage.read_text(control.status_file), intent.run_id)
        if intent.prepared and intent.phase is Phase.SUBMITTED:
            go_given = _go_given(storage, control.prepared(intent.run_id).go_file, intent.run_id)
    # What its runs finished (a file sink may hold a batch the checkpoint did not commit):
    # evidence that the start wrote, asked only of a start's record that can tell.
    finished = checkpoint.last_committed if checkpoint is not None else None
    if intent.kind.starts and intent.committed_before is not None and checkpoint is not None:
        finished = version_finished(storage, intent.manifest)
    return IntentFacts(settle(intent, runs, status, finished, go_given), checkpoint)


def _go_given(storage: Storage, go_file: str, run_id: str) -> bool | None:
    """Whether the go file of a prepared run holds its go (None: it cannot be read now). Only
    the deploy holding the store's lock writes it, so one without the go means none was given,
    and the abort word that ends the run is the next word it may read."""
    try:
        text = storage.read_text(go_file)
    except FsrError:
        return None
    try:
        word = json.loads(text) if text else {}
    except ValueError:
        return None
    return isinstance(word, dict) and word.get("run-id") == run_id and word.get("go") is True


def _any_remote(jobs: Iterable[Job], stored: Iterable[StoredManifest | None]) -> bool:
    """Whether any checkpoint root, in git or in the store, is on S3 or HDFS."""
    roots = [job.checkpoint_root for job in jobs]
    roots += [str(manifest.job.get("checkpoint-root", "")) for manifest in stored if manifest]
    return any(is_s3_uri(root) or is_hdfs_uri(root) for root in roots)
