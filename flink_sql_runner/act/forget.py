"""`forget NAME...`: a job removed for good. It is stopped with its checkpoint (as `stop` stops
it), its manifest archived, and what the deployer kept for it deleted: its checkpoints (every
version, on whatever storage they are), the control files beside them, its intent, watch and
history records, its run records and logs in the state folder. Never its sink: the data, Spark's
`_spark_metadata` and the runner's claims (`_flink-sql-runner/claims/`) stay, so a job added again
under the name appends after what is there, as v1 (nothing that counts versions is left).

Everything is surveyed first and shown; a name that is nowhere is bad input, and then nothing is
touched. Each job is carried out in an order that leaves it, when the command is killed at any
line, either still known to the store or one clean start away:

1. stopped with its checkpoint and recorded as stopped (`act/stop.py`, its intent record first);
2. an intent record an earlier command left for it deleted (one whose run may still appear
   refuses the job at the survey: unknown is never "not running");
3. its manifest archived: from here on no deploy resumes it from a checkpoint and `watch` leaves
   it be; a deploy of the name starts clean, at a version above every checkpoint folder left;
4. its watch record, its history records (`_history/<name>/`: only once the manifest is
   archived, so that a job still stored never loses its history to a killed `forget`; listed
   again there, so that the record of the stop in step 1 goes too), run records and logs
   deleted, then its checkpoint folders, version by version, the control files, then its
   status beacons (`<root>/_status/<name>.v<N>.json`) and their beat files
   (`<name>.v<N>.beat`).

Running `forget` again on a job left halfway finds the rest (its archived manifest names the
checkpoint root) and finishes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_sql_runner.act.history import NOT_WRITTEN
from flink_sql_runner.act.stop import stop_job
from flink_sql_runner.errors import EXIT_FAILED, FsrError, UnknownJob
from flink_sql_runner.gather.facts import intent_evidence
from flink_sql_runner.model.control import beacons_folder, parse_beacon_name
from flink_sql_runner.model.history import history_folder
from flink_sql_runner.model.intents import INTENTS_FOLDER, Intent, IntentLog, Outcome
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.model.stored import WATCH_FOLDER, SideDoc, StoredManifest
from flink_sql_runner.read.names import is_job_name, job_name_problem
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets import local
from flink_sql_runner.targets.base import Target

_NUMERIC = re.compile(r"[0-9]+")
CONTROL = "_control"


@dataclass(frozen=True)
class Item:
    """One thing forgetting a job does: stop a run, archive the manifest, delete a record or a
    folder (with the files and bytes it holds, where the storage tells)."""

    action: str  # "stop", "archive" or "delete"
    what: str  # "run v2", "manifest", "checkpoint v1", "logs", ...
    location: str
    files: int | None = None
    size: int | None = None

    def line(self) -> str:
        extent = ""
        if self.files is not None:
            extent = f"  ({self.files} file{'s' if self.files != 1 else ''}, "
            extent += f"{human_size(self.size or 0)})"
        return f"{self.action:<8} {self.what:<15} {self.location}{extent}"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"action": self.action, "what": self.what}
        doc["location"] = self.location
        if self.files is not None:
            doc["files"], doc["bytes"] = self.files, self.size or 0
        return doc


@dataclass(frozen=True)
class Survey:
    """What forgetting one job means, read under the lock before anything is done. `refused`:
    why it is not forgotten now (nothing is done for it)."""

    name: str
    items: tuple[Item, ...] = ()
    refused: str | None = None
    stored: StoredManifest | None = None
    runs: tuple[Run, ...] = ()
    intent: Intent | None = None
    roots: tuple[str, ...] = ()
    #: The sink it wrote, kept (for the listing).
    sink: str | None = None
    #: Its history records as surveyed (`{file name: document}`), handed back when they are
    #: listed again to be deleted: only those written since are read again.
    history: dict[str, SideDoc] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(item.size or 0 for item in self.items)

    def listing(self) -> list[str]:
        """The lines shown before anything is done."""
        if self.refused:
            return [f"error: {self.name}: not forgotten: {self.refused}"]
        if not self.items:
            return [f"{self.name}: nothing left to forget"]
        lines = [f"{self.name}:", *(f"  {item.line()}" for item in self.items)]
        if self.sink:
            lines.append(f"  {'keep':<8} {'sink':<15} {self.sink}  (its data, _spark_metadata "
                         "and the runner's claims)")  # fmt: skip
        return lines


@dataclass(frozen=True)
class ForgetResult:
    """What forgetting one job did: `forgotten`, `nothing-left` (a name forgotten before: only
    its archived manifest is left), `would-forget` (--dry-run), `failed` (`message` says why
    and how far it got; `exit_code` is its error's), or after Ctrl-C `left-in-flight` (stopped
    halfway: forgetting it again finishes it) and `not-begun`."""

    name: str
    outcome: str
    message: str
    items: tuple[Item, ...] = ()
    exit_code: int = 0

    def to_dict(self) -> dict[str, Any]:
        key = "error" if self.outcome == "failed" else "result"
        return {
            "name": self.name,
            "outcome": self.outcome,
            "items": [item.to_dict() for item in self.items],
            key: self.message,
        }


@dataclass
class Places:
    """Where a job's things are: the store, the target, the checkpoint storage, the state
    folder."""

    store: ManifestStore
    target: Target
    storage: Storage
    state_dir: Path
    listing: Listing = field(default_factory=Listing)

    def side(self, key: str) -> str:
        return f"{self.store.location.rstrip('/')}/{key}"

    def state_folders(self, name: str) -> list[tuple[str, str]]:
        """(what, location) of the job's places in the state folder."""
        return [(what, str(where)) for what, where in local.state_places(self.state_dir, name)]

    def leftover_names(self) -> set[str]:
        """Job names the state folder holds run records or logs of."""
        found = set()
        for folder in (local.RUN_RECORDS, local.LOGS):
            root = str(self.state_dir / folder)
            found |= set(self.storage.dir_names(root))
            found |= {n.removesuffix(".json") for n in self.storage.file_names(root)}
        return {n for n in found if is_job_name(n)}


def survey_jobs(places: Places, names: list[str] | None) -> list[Survey]:
    """What forgetting each of `names` (None: every job the store records, the target runs, or
    the state folder or the store holds records of) means. UnknownJob, before anything is
    done, for a name that is not a job's or of which nothing is anywhere."""
    bad = [problem for n in names or [] if (problem := job_name_problem(n))]
    if bad:  # the command line refuses them first; never a path here
        raise UnknownJob(bad[0])
    places.listing = places.target.list_runs()
    store = places.store
    intents = IntentLog(store).read_all()
    watched = {f.removesuffix(".json") for f in store.read_side_docs(WATCH_FOLDER)}
    if names is None:
        chosen = set(store.list_names()) | set(places.listing.runs) | set(intents.intents)
        chosen |= set(intents.problems) | places.leftover_names()
        names = sorted(n for n in chosen | watched if is_job_name(n))
    surveys = []
    unknown = []
    for name in dict.fromkeys(names):
        found = survey_job(places, name, intents.intents.get(name), intents.problems.get(name),
                           name in watched)  # fmt: skip
        if found is None:
            unknown.append(name)
        else:
            surveys.append(found)
    if unknown:
        quoted = ", ".join(repr(name) for name in unknown)
        them = "it" if len(unknown) == 1 else "them"
        raise UnknownJob(
            f"unknown job{'s' if len(unknown) > 1 else ''} {quoted}: nothing of {them} in "
            f"{store.location} (stored, archived or records), no run of {them} on the "
            f"{places.target.name} target, no run records or logs in {places.state_dir}"
        )
    return surveys


def survey_job(
    places: Places, name: str, intent: Intent | None, intent_problem: str | None, watched: bool
) -> Survey | None:
    """What forgetting `name` means; None when nothing of it is anywhere."""
    store, storage = places.store, places.storage
    runs = places.listing.of(name)
    try:
        stored = store.read(name).manifest
        archived = store.read_archived(name)
        history = store.read_side_docs(history_folder(name))
        state = [(what, where, storage.tree(where)) for what, where in places.state_folders(name)]
    except FsrError as exc:
        return Survey(name, refused=f"{exc}; nothing was touched", runs=runs)
    state_items = [_folder_item(what, where, files, storage) for what, where, files in state]
    state_items = [item for item in state_items if item is not None]
    known = (
        stored or runs or intent or intent_problem or archived or watched or history or state_items
    )
    if not known:
        return None
    refused = _refusal(name, stored, runs, intent, intent_problem, storage)
    if refused:
        return Survey(name, refused=refused, runs=runs)
    # The newest first: the stored manifest, an interrupted command's, the archived copies.
    manifests = [m for m in (stored, intent.manifest if intent else None, *archived[::-1]) if m]
    roots = tuple(dict.fromkeys(root for m in manifests if (root := m.checkpoint_root)))
    items = [Item("stop", "run" if run.version is None else f"run v{run.version}",
                  f"{run.detail} (gracefully, with its checkpoint)") for run in runs]  # fmt: skip
    if intent is not None:
        items.append(Item("delete", "intent record", places.side(f"{INTENTS_FOLDER}/{name}.json")))
    if stored is not None:
        items.append(Item("archive", "manifest", places.side(f"{name}.yaml")))
    if watched:
        items.append(Item("delete", "watch record", places.side(f"{WATCH_FOLDER}/{name}.json")))
    if history:
        size = sum(len(doc.text.encode("utf-8")) for doc in history.values())
        items.append(Item("delete", "history", places.side(history_folder(name)), len(history),
                          size))  # fmt: skip
    items += state_items
    try:
        for root in roots:
            items += _checkpoint_items(storage, f"{root}/{name}")
        for root in roots:
            items += _beacon_items(storage, root, name)
    except FsrError as exc:
        return Survey(name, refused=f"{exc}; nothing was touched", runs=runs)
    sink = _sink(manifests[0]) if manifests else None
    return Survey(name, tuple(items), None, stored, runs, intent, roots, sink, history)


def _sink(manifest: StoredManifest) -> str | None:
    """Where the job writes: its sink's path, else its table's name."""
    table = manifest.job.get("target-table")
    if not table:
        return None
    options = (manifest.tables.get(str(table)) or {}).get("options") or {}
    path = options.get("path") if isinstance(options, dict) else None
    return str(path or table)


def _refusal(
    name: str,
    stored: StoredManifest | None,
    runs: tuple[Run, ...],
    intent: Intent | None,
    intent_problem: str | None,
    storage: Storage,
) -> str | None:
    """Why `name` cannot be forgotten now, if it cannot."""
    unknown = [run for run in runs if run.liveness is Liveness.UNKNOWN]
    if unknown:
        return (
            f"cannot tell whether it runs: {unknown[0].describe()}: {unknown[0].detail}; nothing "
            "is deleted while a run may be alive (forget it again once the target answers)"
        )
    if intent_problem:
        return intent_problem
    if intent is not None:
        try:
            settled = intent_evidence(intent, runs, storage).settled
        except FsrError as exc:
            return (
                f"{intent.describe()}: what its run did cannot be read ({exc}); nothing is deleted"
            )
        if settled.outcome is Outcome.UNKNOWN:
            return (
                f"{intent.describe()}: {settled.why}; not forgotten yet (forget it again once "
                "that is known)"
            )
    if runs and stored is None:
        return (
            f"runs ({', '.join(r.describe() for r in runs)}) but no manifest is stored: a deploy "
            f"settles it first (or stop it on the target), then forget {name}"
        )
    return None


def _folder_item(
    what: str, where: str, files: list[tuple[str, int]], storage: Storage
) -> Item | None:
    if files:
        return Item("delete", what, where, len(files), sum(size for _, size in files))
    if what == "run record":  # a file of its own (earlier versions' layout)
        data = storage.read_bytes(where)
        return Item("delete", what, where, 1, len(data)) if data is not None else None
    return None


def _beacon_items(storage: Storage, root: str, name: str) -> list[Item]:
    """The job's status beacons, one per version, and their beat files, in the root's
    `_status/` folder (beside every other job's): an item each, `beacon v<N>`."""
    items = []
    for location, size in storage.tree(beacons_folder(root)):
        parsed = parse_beacon_name(location.rsplit("/", 1)[-1])
        if parsed is not None and parsed[0] == name:
            items.append(Item("delete", f"beacon v{parsed[1]}", location, 1, size))
    return items


def _checkpoint_items(storage: Storage, job_root: str) -> list[Item]:
    """One item per folder under `<root>/<name>/`: each version's checkpoint (oldest first),
    anything else, then the control files; a file directly in it is one item of its own."""
    prefix = job_root.rstrip("/") + "/"
    groups: dict[str, list[tuple[str, int]]] = {}
    for location, size in storage.tree(job_root):
        head, _, rest = location[len(prefix) :].partition("/")
        groups.setdefault(head if rest else f"/{head}", []).append((location, size))
    for folder in storage.dir_names(job_root):  # empty folders still count versions
        groups.setdefault(folder, [])

    def order(head: str) -> tuple[int, int, str]:
        if _NUMERIC.fullmatch(head):
            return 0, int(head), head
        return (2 if head == CONTROL else 1), 0, head

    items = []
    for head in sorted(groups, key=order):
        files = groups[head]
        size = sum(s for _, s in files)
        if head.startswith("/"):
            items.append(Item("delete", "file", f"{prefix}{head[1:]}", 1, size))
        elif _NUMERIC.fullmatch(head):
            items.append(Item("delete", f"checkpoint v{int(head)}", f"{prefix}{head}", len(files),
                              size))  # fmt: skip
        elif head == CONTROL:
            items.append(Item("delete", "control files", f"{prefix}{head}", len(files), size))
        else:
            items.append(Item("delete", "other files", f"{prefix}{head}", len(files), size))
    return items


def forget_job(
    places: Places,
    survey: Survey,
    stop_timeout: float,
    lease: StoreLock | None = None,
) -> ForgetResult:
    """Carry out `survey` in its order (see the module's text); each step after a lease check.
    A failure stops this job where it is, saying how far it got: forgetting it again finishes."""
    name, store, storage = survey.name, places.store, places.storage
    if survey.refused:
        return ForgetResult(name, "failed", f"{name}: not forgotten: {survey.refused}",
                            exit_code=EXIT_FAILED)  # fmt: skip
    if not survey.items:
        return ForgetResult(name, "nothing-left", f"{name}: nothing left to forget")
    check = lease.check if lease is not None else (lambda evidence=False: None)
    done: list[str] = []
    try:
        if survey.stored is not None:
            stopped = stop_job(store, places.target, storage, name, stop_timeout, lease,
                               survey.runs, survey.intent)  # fmt: skip
            if survey.runs:
                said = stopped.message.removeprefix(f"{name}: ")
                said = said.partition(f"; {NOT_WRITTEN}")[0]  # its history goes below anyway
                done.append(said.removesuffix("; checkpoint kept, recorded as stopped"))
        left = store.read_side_docs(INTENTS_FOLDER).get(f"{name}.json")
        if left is not None:
            check()
            IntentLog(store).delete(name, left.token)
        read = store.read(name)
        if read.manifest is not None:
            check()
            done.append(f"manifest archived to {store.archive(name, read.token)}")
        check()
        store.delete_side(f"{WATCH_FOLDER}/{name}.json")
        _delete_history(store, name, survey.history, check)
        deleted = sum(1 for item in survey.items if item.what == "history")
        for item in survey.items:
            if item.action != "delete" or item.what in ("intent record", "watch record", "history"):
                continue
            check()
            if item.what in ("file", "run record") or item.what.startswith("beacon v"):
                storage.delete(item.location)
            else:
                storage.delete_tree(item.location)
            deleted += 1
        # The folders left empty (an empty version folder still counts a version).
        for what, where in places.state_folders(name):
            if what != "run record":
                storage.delete_tree(where)
        for root in survey.roots:
            storage.delete_tree(f"{root}/{name}")
    except FsrError as exc:
        so_far = f" after {'; '.join(done)}" if done else ""
        return ForgetResult(
            name,
            "failed",
            f"{name}: not forgotten{so_far}: {exc}; `forget {name}` again finishes it",
            survey.items,
            exc.exit_code,
        )
    total = human_size(survey.size)
    done.append(f"deleted {deleted} item{'s' if deleted != 1 else ''} ({total})")
    message = f"{name}: forgotten: {'; '.join(done)}; the sink's data is kept"
    return ForgetResult(name, "forgotten", message, survey.items)


def forget_jobs(
    places: Places,
    surveys: list[Survey],
    stop_timeout: float,
    lease: StoreLock | None = None,
) -> Iterator[ForgetResult]:
    """Each job of `surveys` forgotten in turn, its result as soon as it is known. Ctrl-C or
    SIGTERM: the job in progress is `left-in-flight` (forgetting it again finishes it), the
    others `not-begun`, each reported before the interrupt goes on."""
    for index, survey in enumerate(surveys):
        try:
            result = forget_job(places, survey, stop_timeout, lease)
        except KeyboardInterrupt:
            yield ForgetResult(survey.name, "left-in-flight", f"{survey.name}: interrupted "
                               "halfway: forget it again to finish", survey.items)  # fmt: skip
            for rest in surveys[index + 1 :]:
                yield ForgetResult(rest.name, "not-begun", f"{rest.name}: not begun (interrupted)")
            raise
        yield result


def _delete_history(
    store: ManifestStore, name: str, surveyed: dict[str, SideDoc], check: Callable[[], None]
) -> None:
    """Delete every history record of `name`, listed again: a record written since the survey
    (the stop's, step 1) goes too, even where the survey found none; those surveyed are not
    read again. Each after a lease check."""
    folder = history_folder(name)
    for file_name in store.read_side_docs(folder, surveyed):
        check()
        store.delete_side(f"{folder}/{file_name}")
    check()
    store.clear_side_folder(folder)  # a killed record write's temporary file (the SQL in it)


def would_forget(surveys: list[Survey]) -> list[ForgetResult]:
    """What --dry-run reports: the survey, nothing done."""
    results = []
    for survey in surveys:
        if survey.refused:
            results.append(ForgetResult(survey.name, "failed", f"{survey.name}: not forgotten: "
                                        f"{survey.refused}", exit_code=EXIT_FAILED))  # fmt: skip
        elif not survey.items:
            results.append(ForgetResult(survey.name, "nothing-left",
                                        f"{survey.name}: nothing left to forget"))  # fmt: skip
        else:
            message = f"{survey.name}: would forget {len(survey.items)} items"
            results.append(ForgetResult(survey.name, "would-forget", message, survey.items))
    return results


class NotConfirmed(FsrError):
    """The person asked said no: nothing was touched."""

    exit_code = EXIT_FAILED
