"""One deployment setting: inputs, store, target and state storage, and the commands on them.

The CLI builds a `Deployment` from its options and renders what its methods return.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.forget import (
    ForgetResult,
    NotConfirmed,
    Places,
    Survey,
    forget_jobs,
    survey_jobs,
    would_forget,
)
from flink_sql_runner.act.input_caches import fingerprints_at, load_cache_at
from flink_sql_runner.act.plan_inputs import store_where
from flink_sql_runner.act.progress import Progress
from flink_sql_runner.act.results import JobResult
from flink_sql_runner.act.saved_plan import SavedPlan, StalePlan, make_saved_plan
from flink_sql_runner.act.settings import Settings, make_target, where_jobs_run
from flink_sql_runner.act.stale import as_saved, input_lines, target_lines, world_lines
from flink_sql_runner.act.stop import StopResult, stop_jobs
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.plan import build_plan, checkpoint_unused
from flink_sql_runner.decide.preflight import without_starts_that_cannot_begin
from flink_sql_runner.decide.state import POLICIES, state_base
from flink_sql_runner.errors import FsrError, InvalidInput, Problem, StoreMissing
from flink_sql_runner.gather.facts import GATHER_WORKERS, gather
from flink_sql_runner.gather.schemas import Ask, run_probe, with_contracts
from flink_sql_runner.gather.store_ahead import StoreAhead
from flink_sql_runner.host import runtime
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.lineage import (
    Lineage,
    build_lineage,
    plan_lineage,
    with_unused_tables,
)
from flink_sql_runner.model.stored import Stored, StoredManifest
from flink_sql_runner.read.catalog import Catalog, load_catalog, read_catalog
from flink_sql_runner.read.kafka_start import AGO, declares_ago, parse_kafka_start
from flink_sql_runner.read.load_cache import LoadCache
from flink_sql_runner.read.manifest import Job, JobLoader, load_jobs
from flink_sql_runner.read.paths import SourceCheck
from flink_sql_runner.read.template import load_template, packaged_template
from flink_sql_runner.stores import open_store
from flink_sql_runner.stores.base import ManifestStore, Reads, Snapshot
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.lock import StoreLock, locked, telling_lock
from flink_sql_runner.stores.storage import FileStorage, Storage
from flink_sql_runner.targets.base import Target
from flink_sql_runner.targets.connectors import Connectors, SparkBuild, scala_of
from flink_sql_runner.targets.sparksubmit import find_spark_submit, spark_home, spark_release

T = TypeVar("T")


class Deployment:
    def __init__(
        self,
        settings: Settings,
        store: ManifestStore | None = None,
        target: Target | None = None,
    ):
        self.settings = settings
        self._store = store
        self._target = target
        self._connectors: Connectors | None = None
        self.storage: Storage = FileStorage()
        #: The folder of the caches below (`--cache-dir`), and the folder that must exist for
        #: them to be kept: the state folder for the default, none for a folder given (created).
        caches = Path(settings.cache_dir or Path(settings.state_dir) / "cache")
        self.cache_home: Path | None = None if settings.cache_dir else Path(settings.state_dir)
        #: Asks Spark what a changed query writes and what its sink holds (gather/schemas.py),
        #: its answers cached in this folder (None: not cached).
        self.ask_spark: Ask = functools.partial(run_probe, spark_submit=settings.spark_submit)
        self.schema_cache: Path | None = caches / "schemas"
        #: What unchanged job and table files read as before (read/load_cache.py); None: the
        #: files are read every time (--no-cache).
        self.load_cache: Path | None = caches / "load.json" if settings.cache else None
        #: What the last `status` read of runs that are gone (watch/status_reads.py); None:
        #: read every time (--no-cache).
        self.status_cache: Path | None = caches / "status.json" if settings.cache else None
        self.debug = False
        #: Where lines for people go while a command runs (waiting for the lock).
        self.say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
        #: The executor while a deploy carries out its plan; None before and after.
        self.acting: Executor | None = None
        #: Whether the deploy's plan was carried out (only its report is left).
        self.acted = False
        #: The store read ahead for a command that only reads (`read_store_ahead`).
        self._ahead: StoreAhead | None = None
        #: The facts the last plan was decided from (what a saved plan records of the store).
        self.decided_from: list[JobFacts] = []
        #: The lineage the last plan followed (`plan_lineage` of `decided_from`).
        self.decided_lineage: Lineage | None = None
        #: Now on the store's clock that the last plan made "now minus" starts a time of; a
        #: followed saved plan's own (None: none).
        self.plan_now_ms: int | None = None
        self.followed_now_ms: int | None = None
        #: The table catalog once read without problems (`catalog`).
        self._catalog: Catalog | None = None

    @property
    def store(self) -> ManifestStore:
        if self._store is None:
            self._store = open_store(self.settings.manifest_store, self.settings.state_dir)
        return self._store

    def existing_store(self) -> ManifestStore:
        """The store, for a command that only reads or stops (`stop`, `forget`, `status`,
        `inspect`, `logs`, `watch`, `resume`): a store folder that does not exist is
        StoreMissing (exit 2), never created, not read as a store without jobs. A bucket that
        does not exist is an error of the store's first call (stores/s3_client.py)."""
        store = self.store
        if isinstance(store, LocalStore) and not store.folder.is_dir():
            raise StoreMissing(
                f"the manifest store {store.location} does not exist (nothing was deployed "
                "there): check --manifest-store and --state-dir; nothing was touched"
            )
        return store

    def read_store_ahead(self) -> None:
        """Begin reading the store now, beside loading the files, for a `plan(read_only=True)`
        (gather/store_ahead.py). Changes nothing; a command that ends before does not wait."""
        self._ahead = StoreAhead(lambda: self.store)

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = make_target(self.settings)
        return self._target

    # -- inputs -----------------------------------------------------------------------------
    def catalog(self) -> Catalog:
        """The table catalog: as `load` read it, once in a command (the lineage a plan shows
        is drawn from the tables its jobs were checked against), else read now."""
        if self._catalog is None:
            with self._cache() as cache:
                self._catalog = load_catalog(self.settings.table_paths, cache)
        return self._catalog

    def _cache(self) -> AbstractContextManager[LoadCache | None]:
        """The load cache while files are read (act/input_caches.py)."""
        return load_cache_at(self.load_cache, self.cache_home)

    def sources_checked(self) -> SourceCheck:
        """Which source paths a command that starts jobs makes sure exist: every local one on
        the local target; on a cluster, whose drivers may see shared folders this machine does
        not, the relative ones (they were resolved on this machine)."""
        return SourceCheck.LOCAL if self.settings.target == "local" else SourceCheck.RELATIVE

    def load(self, sources: SourceCheck = SourceCheck.NONE) -> list[Job]:
        """Every job, validated; InvalidInput (catalog and jobs together) before any I/O.
        `sources`: which source paths must exist."""
        # The tables without problems still serve the jobs' checks: one broken table file
        # does not make every job's table look missing.
        with self._cache() as cache:
            catalog, catalog_problems = read_catalog(self.settings.table_paths, cache)
            try:
                jobs = load_jobs(
                    self.settings.paths,
                    self.settings.template,
                    catalog,
                    self.settings.state_dir,
                    rules=self.settings.properties,
                    sources=sources,
                    cache=cache,
                )
            except InvalidInput as exc:
                raise InvalidInput(catalog_problems + exc.problems, exc.hints) from None
            if catalog_problems:
                raise InvalidInput(catalog_problems)
        self._catalog = catalog
        reuse = {"reused": cache.hits, "read": cache.misses} if cache is not None else {}
        mark("loaded", jobs=len(jobs), **reuse)
        return jobs

    def load_one(self, path: Path, sources: SourceCheck = SourceCheck.NONE) -> Job:
        """One job file (a final manifest, or a plain job merged with the template)."""
        problems: list[Problem] = []
        template, problems = load_template(self.settings.template, self.settings.properties)
        settings = self.settings
        with self._cache() as cache:
            catalog, catalog_problems = read_catalog(self.settings.table_paths, cache)
            problems += catalog_problems
            loader = JobLoader(
                template, catalog, settings.state_dir, settings.properties, sources, cache=cache
            )
            job = loader.load_file(path, problems)
            if job is not None:
                problems += loader.source_problems([job])
            if problems or job is None:
                raise InvalidInput(problems, loader.hints())
        self._catalog = catalog
        return job

    # -- commands ---------------------------------------------------------------------------
    def _fingerprints(self) -> AbstractContextManager[None]:
        """SQL fingerprints kept beside the load cache (act/input_caches.py)."""
        path = self.load_cache.parent / "fingerprints.json" if self.load_cache else None
        return fingerprints_at(path, self.cache_home)

    def plan(
        self,
        jobs: list[Job],
        include_orphans: bool = True,
        prune: bool = False,
        read_only: bool = False,
    ) -> Plan:
        """What deploy would do. `read_only`: for a command that acts on none of it (`plan`,
        `deploy --dry-run`): the plan is made from the store's index while the listing comes
        in, and made again from the listing if that shows otherwise (gather/store_ahead.py)."""
        with self._fingerprints():
            return self._plan(jobs, include_orphans, prune, read_only, None)[0]

    def plan_shown(
        self,
        jobs: list[Job],
        show: Callable[[Plan], T],
        include_orphans: bool = True,
        prune: bool = False,
    ) -> tuple[Plan, T]:
        """A read-only plan (`plan(read_only=True)`) and what `show` makes of it, made while
        the store's listing is still coming in: when the listing is the slowest read (10
        pages at 10,000 jobs), showing the plan costs no time. Shown again from the listing's
        plan if that differs."""
        with self._fingerprints():
            plan, shown = self._plan(jobs, include_orphans, prune, True, show)
        assert shown is not None
        return plan, shown[0]

    def _plan(
        self,
        jobs: list[Job],
        include_orphans: bool,
        prune: bool,
        read_only: bool,
        show: Callable[[Plan], T] | None,
    ) -> tuple[Plan, tuple[T] | None]:
        ahead = self._ahead if read_only else None
        if read_only and ahead is None:
            ahead = StoreAhead(lambda: self.store)
        snapshot = ahead.first() if ahead is not None else None
        plan = self._decided(jobs, include_orphans, prune, snapshot)
        shown = (show(plan),) if show is not None else None
        if ahead is not None and snapshot is not None and not ahead.confirms(snapshot):
            plan = self._decided(jobs, include_orphans, prune, ahead.listing())
            shown = (show(plan),) if show is not None else None
        mark("decided")
        return plan, shown

    def _decided(
        self, jobs: list[Job], include_orphans: bool, prune: bool, snapshot: Snapshot | None
    ) -> Plan:
        """Every fact gathered (from `snapshot` when given, else a listing now), the sinks'
        contracts of the jobs whose start could change what they write among them; then the
        plan decided once, and its starts that cannot begin held back."""
        facts, lineage = self._gather(jobs, include_orphans, snapshot)
        mark("gathered")
        self.decided_from, self.decided_lineage = facts, lineage
        plan = build_plan(
            facts,
            prune=prune,
            spark=self.target.spark_version(),
            handover=self.settings.handover,
            lineage=lineage,
            kafka_start=self.settings.kafka_start,
            now_ms=self._store_now_ms(jobs),
            on_state_change=self.settings.on_state_change,
        )
        return without_starts_that_cannot_begin(plan, self.connectors.missing)

    def _store_now_ms(self, jobs: list[Job]) -> int | None:
        """Now on the store's clock, asked only where a start is now minus an interval (the
        deploy's or a job's), which the plan makes a time of (a saved plan's own, when it is
        followed); None when not asked or not answered (the deploy reads it again before the
        old run stops, and fails the job if it cannot)."""
        if self.followed_now_ms is not None:
            self.plan_now_ms = self.followed_now_ms
            return self.plan_now_ms
        declared = self.settings.kafka_start
        ago = declared is not None and declared.how == AGO
        if not ago and not any(declares_ago(job.spec) for job in jobs):
            return None
        try:
            self.plan_now_ms = int(self.store.clock() * 1000)
        except FsrError:
            return None
        return self.plan_now_ms

    def _gather(
        self, jobs: list[Job], include_orphans: bool, snapshot: Snapshot | None
    ) -> tuple[list[JobFacts], Lineage]:
        """The facts of every job, the contract facts of their sinks among them
        (gather/schemas.py), and the plan's lineage: built once, for the sinks' readers (its
        links) and the plan, which follows it."""
        facts = gather(
            jobs,
            self.store,
            self.target,
            self.storage,
            include_orphans=include_orphans,
            workers=max(GATHER_WORKERS, self.settings.parallelism),
            running_commits=False,
            snapshot=snapshot,
            checkpoint_unused=checkpoint_unused,
        )
        lineage = plan_lineage(facts)
        spark: list[str | None] = []  # the target's, asked once a job's state is in question

        def base(job: JobFacts) -> StoredManifest | None:
            if not spark:
                spark.append(self.target.spark_version())
            return state_base(job, spark[0])

        facts = with_contracts(
            facts, lineage, self.storage, self.schema_cache, self.ask_spark, base
        )
        return facts, lineage

    def jobs_lineage(self, jobs: list[Job]) -> Lineage:
        """The lineage of `jobs` with the catalog's tables none of them uses (what a plan
        shows): the last plan's own when it followed these very jobs and no stored one (its
        unused tables added), else built."""
        lineage, facts = self.decided_lineage, self.decided_from
        if lineage is not None and len(lineage.jobs) == len(jobs) == len(facts):
            ours = {id(job) for job in jobs}
            if all(f.desired is not None and id(f.desired) in ours for f in facts):
                return with_unused_tables(lineage, self.catalog())
        return build_lineage(jobs, catalog=self.catalog())

    @property
    def connectors(self) -> Connectors:
        """How runs get the connectors their tables need: from --connector-jars, else as Maven
        coordinates for the Spark the target runs."""
        if self._connectors is None:
            version = self.target.spark_version()
            home = None
            if version and self.settings.target in ("local", "yarn"):  # it submits from here
                try:
                    home = spark_home(find_spark_submit(self.settings.spark_submit))
                except FsrError:
                    home = None
            self._connectors = self._connectors_for(version, home)
        return self._connectors

    def _connectors_for(self, version: str | None, home: Path | None) -> Connectors:
        build = SparkBuild(version, scala_of(version, home)) if version else None
        return Connectors(build, self.settings.connector_jars)

    def probe_connectors(self) -> Connectors:
        """The connectors of the Spark the runner's probes run on: the spark-submit on this
        machine (gather/spark_child.py), the target's own where it submits from here."""
        if self.settings.target in ("local", "yarn"):
            return self.connectors
        submit = find_spark_submit(self.settings.spark_submit)
        return self._connectors_for(spark_release(submit), spark_home(submit))

    def executor(self, lease: StoreLock | None = None, command: str = "deploy") -> Executor:
        """`command`: the one that carries plans out (deploy, watch), for the history."""
        return Executor(
            self.store,
            self.target,
            self.storage,
            timeouts=self.settings.timeouts,
            parallelism=self.settings.parallelism,
            lease=lease,
            debug=self.debug,
            connectors=self.connectors,
            command=command,
        )

    def deploy(
        self,
        jobs: list[Job],
        *,
        include_orphans: bool,
        prune: bool,
        on_plan: Callable[[Plan], None],
        progress: Progress | None = None,
        saved: SavedPlan | None = None,
        acting: list[str] | None = None,
    ) -> tuple[Plan, dict[str, JobResult]]:
        """Under the store's lock: gather facts, decide, show the plan, carry it out. With a
        `saved` plan (its jobs `acting`, all it acts on unless said): StalePlan before any
        step when the world it was decided in changed, else exactly its steps."""
        with locked(self.lock("deploy"), self.settings.lock_timeout) as lease:
            mark("locked")
            plan = self.plan(jobs, include_orphans=include_orphans, prune=prune)
            if saved is not None:
                plan = self._as_saved(plan, saved, acting)
            on_plan(plan)
            results: dict[str, JobResult] = {}
            recorded: dict[str, Stored] = {}
            if plan.pending:
                if progress is not None:
                    progress.total = sum(1 for d in plan.decisions if d.steps)
                self.acting = self.executor(lease)
                recorded = self.acting.job.recorded
                try:
                    results = self.acting.apply(plan, progress)
                finally:
                    self.acting, self.acted = None, True
                    if progress is not None:
                        progress.close()
            self.acted = True
            known = Reads(
                {n: s.manifest for n, s in recorded.items()},
                tokens={n: s.token for n, s in recorded.items()},
            )
            self._refresh_index(known)
            return plan, results

    # -- saved plans (act/saved_plan.py, act/stale.py) ------------------------------------------
    def template_path(self) -> Path:
        return self.settings.template or packaged_template()

    def saved_plan(
        self,
        plan: Plan,
        shown: dict[str, Any],
        jobs: list[Job],
        deployer: str,
        *,
        prune: bool = False,
        key: bytes | None = None,
        saved_as: str | None = None,
    ) -> dict[str, Any]:
        """The saved plan of `plan`, the last this deployment decided (`shown`: as `--output
        json` has it, secrets masked), signed with the plan `key` when there is one;
        `saved_as`: its file's name."""
        return make_saved_plan(
            plan,
            shown,
            facts=self.decided_from,
            jobs=jobs,
            catalog=self.catalog(),
            template=self.template_path(),
            spark=self.target.spark_version(),
            deployer=deployer,
            store=store_where(self.store.location),
            target=where_jobs_run(self.settings),
            paths=self.settings.paths,
            table_paths=self.settings.table_paths,
            template_file=self.settings.template,
            prune=prune,
            key=key,
            saved_as=saved_as,
            handover=self.settings.handover,
            kafka_start=self.settings.kafka_start.text if self.settings.kafka_start else None,
            on_state_change=self.settings.on_state_change,
            now=runtime.wall(),
            store_now_ms=self.plan_now_ms,
        )

    def follow(self, saved: SavedPlan) -> None:
        """Decide as `saved` was decided: with its --handover, --kafka-start and
        --on-state-change (how its changes are carried out is part of the steps a reviewer
        approved), and the time on the store's clock its "now minus" starts were made of."""
        start = saved.doc.get("kafka-start")
        state = saved.doc.get("on-state-change")
        self.settings.on_state_change = state if state in POLICIES else None
        self.settings.handover = str(saved.doc["handover"])
        self.settings.kafka_start = parse_kafka_start(start) if start else None
        now = saved.doc.get("store-now-ms")
        self.followed_now_ms = now if isinstance(now, int) and not isinstance(now, bool) else None

    def stale_inputs(
        self, saved: SavedPlan, jobs: list[Job], acting: list[str] | None = None
    ) -> list[str]:
        """What the jobs `saved` acts on (of `acting`, when given) were decided from that
        differs now (their files, the template, the environment): read before the lock,
        nothing touched."""
        catalog = self.catalog() if self.settings.table_paths else None
        lines = target_lines(saved, where_jobs_run(self.settings))
        return lines + input_lines(saved, jobs, catalog, self.template_path(), acting)

    def _as_saved(self, plan: Plan, saved: SavedPlan, acting: list[str] | None) -> Plan:
        lines = world_lines(
            saved,
            self.decided_from,
            plan,
            spark=self.target.spark_version(),
            store=store_where(self.store.location),
            acting=acting,
        )
        if lines:
            raise StalePlan(saved.path, lines, fresh=plan)
        return as_saved(plan, saved, acting)

    def _refresh_index(self, known: Reads | None = None) -> None:
        """The store's read cache is only a cache: failing to update it fails nothing.
        `known`: what this deploy wrote, with the tokens the store answered."""
        try:
            self.store.refresh_index(known)
        except FsrError as exc:
            print(f"warning: {exc}", file=sys.stderr)

    def lock(self, command: str) -> StoreLock:
        """The store's lock, for commands that change jobs (deploy, stop, prune, watch)."""
        return telling_lock(self.store.lock_backend(), command, self.say)

    def stop(self, names: list[str] | None) -> Iterator[StopResult]:
        """Under the store's lock: stop the jobs `names` (None: all), each result as it comes."""
        self.existing_store()
        with locked(self.lock("stop"), self.settings.lock_timeout) as lease:
            yield from stop_jobs(
                self.store,
                self.target,
                self.storage,
                names,
                self.settings.timeouts.stop,
                lease,
                self.settings.parallelism,
            )
            self._refresh_index()

    def forget(
        self,
        names: list[str] | None,
        show: Callable[[list[Survey]], None],
        confirm: Callable[[list[Survey]], bool] | None,
        dry_run: bool = False,
    ) -> Iterator[ForgetResult]:
        """Survey the jobs `names` (None: all), `show` what forgetting them means, and unless
        `dry_run` (read only, without the lock) forget them under the store's lock once
        `confirm` says yes (None: no question); each result as it comes. NotConfirmed when
        the answer is no: nothing was touched."""
        places = Places(self.existing_store(), self.target, self.storage,
                        Path(self.settings.state_dir))  # fmt: skip
        if dry_run:
            surveys = survey_jobs(places, names)
            show(surveys)
            yield from would_forget(surveys)
            return
        with locked(self.lock("forget"), self.settings.lock_timeout) as lease:
            surveys = survey_jobs(places, names)
            show(surveys)
            due = [s for s in surveys if s.items and not s.refused]
            if due and confirm is not None and not confirm(due):
                raise NotConfirmed("not confirmed: nothing was touched")
            yield from forget_jobs(places, surveys, self.settings.timeouts.stop, lease)
            self._refresh_index()
