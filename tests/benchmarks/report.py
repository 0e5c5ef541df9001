"""The benchmark results as Markdown: printed, and written into docs/developers/benchmarks.md
between
the results markers (the prose around them is kept)."""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import handover_bench, kafka_bench, plan_bench, recovery_bench
from tests.benchmarks.common import Stats, machine, markdown_table
from tests.benchmarks.plan_bench import GrowthResult, PlanResult
from tests.benchmarks.redeploy_bench import AFTER, SPANS, RedeployResult
from tests.benchmarks.runner_bench import RunnerResult

BLOCK = "<!-- results:{name}:{end} (written by python -m tests.benchmarks --write-docs) -->"


def seconds(stats: Stats) -> str:
    return f"{stats.median:.2f} s ({stats.best:.2f})"


def mib(value: float) -> str:
    return f"{value:.0f} MiB"


def goal(met: bool, text: str) -> str:
    return f"- {'met' if met else 'MISSED'}: {text}"


def load_text(load: tuple[float, float]) -> str:
    return f"{load[0]:.2f} before, {load[1]:.2f} after"


def plan_section(result: PlanResult) -> str:
    latency = f"{result.latency_ms:g} ms added per S3 request" if result.latency_ms else "as is"
    ways = ("indexed", "cold", "baseline")

    def row(label: str, value: Callable[[str], str]) -> list[str]:
        return [label, *(value(way) for way in ways)]

    rows = [
        row("wall time, median (best)", lambda w: seconds(result.seconds(w))),
        row("speed-up over the sequential loop", lambda w: f"{result.speedup(w):.1f}x"),
        row("peak RSS", lambda w: mib(result.peak_rss(w))),
        row("CPU time of the process, median", lambda w: f"{result.cpu(w).median:.2f} s"),
        row("CPU time of moto's server, median", lambda w: f"{result.server_cpu(w).median:.2f} s"),
    ]
    phases = [
        [name, seconds(result.phases["indexed"][name]), seconds(result.phases["cold"][name])]
        for name in result.phases["indexed"]
    ]
    counts, indexed = result.counts, result.seconds("indexed").median
    headers = ["", "`plan`", "`plan`, no index", "sequential loop (original way)"]
    lines = [
        f"#### `plan`, {result.jobs} jobs, moto's S3 server {latency}",
        "",
        f"{result.jobs} jobs ({counts['unchanged']} unchanged, {counts['config']} config changed, "
        f"{counts['query']} query changed), {len(result.timed['baseline'])} rounds rotating which "
        f"goes first; load average {load_text(result.load)}. `plan` reads the store's index "
        "(written by every deploy) and the listing; without the index it GETs every manifest.",
        "",
        markdown_table(headers, rows),
        "",
        "Phases of `plan` (from its timing log), median (best):",
        "",
        markdown_table(["phase", "`plan`", "`plan`, no index"], phases),
        "",
        goal(
            result.speedup("indexed") >= 5, f"at least 5x faster: {result.speedup('indexed'):.1f}x"
        )
        + f" (no index: {result.speedup('cold'):.1f}x)",
        goal(indexed < 5, f"under 5 s: {indexed:.2f} s")
        + f" (no index: {result.seconds('cold').median:.2f} s)",
        goal(
            result.peak_rss("indexed") < 200,
            f"peak memory under 200 MB: {mib(result.peak_rss('indexed'))}",
        )
        + f" (no index: {mib(result.peak_rss('cold'))})",
    ]
    return "\n".join(lines)


def growth_section(result: GrowthResult) -> str:
    """`plan` at each size, cold and with 1 % edited, and how it grows from the smallest size
    to the largest."""
    ways = (
        ("cold", "cold"),
        ("edited", "1 % edited since the last `plan`"),
        (plan_bench.IN_STEP, "1 % edited, the store in step with git before (after a deploy)"),
    )
    headers = ["jobs", "way", "wall time", "CPU time", "peak RSS", *plan_bench.PHASE_NAMES]
    rows = [
        [
            f"{size.jobs:,}",
            label,
            seconds(size.seconds(way)),
            f"{size.cpu(way).median:.2f} s",
            mib(size.peak_rss(way)),
            *(seconds(size.phases[way][name]) for name in plan_bench.PHASE_NAMES),
        ]
        for size in result.sizes
        for way, label in ways
    ]
    small, large = result.sizes[0], result.sizes[-1]
    times = large.jobs / small.jobs
    rounds = len(small.timed["cold"])
    latency = f"{result.latency_ms:g} ms added per S3 request" if result.latency_ms else "as is"
    peak = max(size.peak_rss(way) for size in result.sizes for way, _ in ways)
    edited = large.seconds("edited").median
    in_step = large.seconds(plan_bench.IN_STEP).median
    lines = [
        f"#### `plan` from {small.jobs:,} to {large.jobs:,} jobs, moto's S3 server {latency}",
        "",
        "The workspace of the 1,000-job comparison, at each size (stored manifests and the "
        f"store's index, checkpoints, live runs); {rounds} rounds of `plan` cold, then again after "
        f"{large.edited:,} of {large.jobs:,} job files (1 %) were edited (the store holding "
        "70 % of the jobs as git has them, 20 % with another config, 10 % with another query); "
        "then the store as a deploy leaves it (every job as git has it) and, each round, "
        "`plan` once and again after the same 1 % were edited (*in step*: what CI sees on the "
        f"push after a deploy); load average {load_text(result.load)}. Times are median "
        "(best); the phases are `plan`'s own (timing log), peak RSS the largest of the rounds.",
        "",
        markdown_table(headers, rows),
        "",
        f"Growth, {large.jobs:,} jobs over {small.jobs:,} ({times:g}x the jobs): cold "
        f"{result.growth('cold'):.1f}x, 1 % edited {result.growth('edited'):.1f}x.",
        "",
        goal(
            result.growth("cold") <= 1.1 * times,
            f"cold, {large.jobs:,} jobs in at most {1.1 * times:g}x the {small.jobs:,}-job "
            f"time: {result.growth('cold'):.1f}x",
        ),
        goal(
            edited < 3,
            f"{large.jobs:,} jobs with 1 % edited under 3 s: {edited:.2f} s (in step: "
            f"{in_step:.2f} s)",
        ),
        goal(peak < 500, f"peak memory under 500 MB: {mib(peak)}"),
    ]
    return "\n".join(lines)


def runner_section(result: RunnerResult) -> str:
    rounds = len(result.runs["runner"])
    measures: list[tuple[str, str, Callable[[str], Stats]]] = [
        ("wall time, spark-submit to exit", "wall", result.wall),
        ("the query, Spark's clock (start to end of last batch)", "query", result.query),
        ("sum of micro-batch durations (triggerExecution)", "batches", result.batches),
        ("CPU time of the process tree (JVM + Python)", "cpu", result.cpu),
    ]
    rows = [
        [
            label,
            seconds(of("runner")),
            seconds(of("runner-shifted")),
            seconds(of("handwritten")),
            f"{result.ratio_of(key):.3f}",
            f"{result.ratio_of(key, 'runner-shifted'):.3f}",
        ]
        for label, key, of in measures
    ]
    batches = result.runs["runner"][-1].batches
    ratio, shifted = result.ratio_of("wall"), result.ratio_of("wall", "runner-shifted")
    headers = [
        "median (best)",
        "runner, new sink",
        "runner, shifted",
        "hand-written",
        "ratio",
        "ratio, shifted",
    ]
    lines = [
        f"#### Runner overhead, {result.rows:,} rows",
        "",
        f"Parquet input of {result.rows:,} rows in {result.files} files, maxFilesPerTrigger "
        f"{result.max_files_per_trigger} ({batches} micro-batches), availableNow trigger, parquet "
        f"sink, local[2]; {rounds} rounds rotating which goes first. *New sink*: version 1 into "
        "an empty folder (Spark's own file sink, as written by hand). *Shifted*: version 2 into "
        "a folder version 1 wrote (foreachBatch with shifted batch ids). All outputs read back: "
        f"{result.rows_out:,} rows each, same sums. Load average {load_text(result.load)}.",
        "",
        markdown_table(headers, rows),
        "",
        goal(ratio <= 1.05, f"runner / hand-written wall time at most 1.05: {ratio:.3f}"),
        f"- a new version into a used file sink (foreachBatch): {shifted:.3f}",
    ]
    return "\n".join(lines)


def timeline_rows(result: Any, spans: Sequence, after: Sequence, totals: Sequence) -> tuple:
    """The table rows of a timing benchmark: one per span, then the bold totals (label, whose,
    what to measure per round); and the rows of the spans after the first committed batch."""
    rows = [
        [label, whose, seconds(result.stats(lambda r, b=b, e=e: r.span(b, e)))]
        for label, b, e, whose in spans
    ]
    rows += [
        [f"**{label}**", whose, f"**{seconds(result.stats(measure))}**"]
        for label, whose, measure in totals
    ]
    later = [
        [label, seconds(result.stats(lambda r, b=b, e=e: r.span(b, e)))] for label, b, e in after
    ]
    return rows, later


def redeploy_section(result: RedeployResult) -> str:
    deployer = result.stats(lambda r: r.share("deployer"))
    rows, after = timeline_rows(
        result,
        SPANS,
        AFTER,
        [
            ("deployer's own time", "deployer", lambda r: r.share("deployer")),
            ("Spark's time", "spark", lambda r: r.share("spark")),
            ("deploy start to first committed batch", "", lambda r: r.to_first_commit),
        ],
    )
    after.append(["whole `deploy` command", seconds(result.stats(lambda r: r.measured.seconds))])
    lines = [
        "#### Redeploy latency, config change of a running job",
        "",
        f"A rate-micro-batch job (1 s trigger, parquet sink) on local[2]; {len(result.rounds)} "
        f"rounds, each changes its description and runs `deploy` (stop with checkpoint, restart "
        f"from it). Load average {load_text(result.load)}.",
        "",
        markdown_table(["step", "whose", "median (best)"], rows),
        "",
        "After the first committed batch (not part of the latency above):",
        "",
        markdown_table(["step", "median (best)"], after),
        "",
        goal(deployer.median < 1, f"the deployer's own share under 1 s: {deployer.median:.2f} s"),
    ]
    return "\n".join(lines)


def recovery_section(result: recovery_bench.RecoveryResult) -> str:
    rows, after = timeline_rows(
        result,
        recovery_bench.SPANS,
        recovery_bench.AFTER,
        [
            ("the watcher's share", "watcher", lambda r: r.share("watcher")),
            ("Spark's share", "spark", lambda r: r.share("spark")),
            ("SIGKILL to first committed batch", "", lambda r: r.to_first_commit),
        ],
    )
    waited = result.stats(lambda r: r.span("killed", "look"))
    own = result.stats(lambda r: r.share("watcher") - r.span("killed", "look"))
    lines = [
        "#### Recovery latency, a driver SIGKILLed under `watch`",
        "",
        f"A rate-micro-batch job (1 s trigger, parquet sink) on local[2], `watch --interval "
        f"{result.interval:g}` beside it; {len(result.rounds)} rounds, each SIGKILLs the driver's "
        f"process group and waits until the replacement is healthy. Load average "
        f"{load_text(result.load)}.",
        "",
        markdown_table(["step", "whose", "median (best)"], rows),
        "",
        "After the first committed batch (not part of the latency above):",
        "",
        markdown_table(["step", "median (best)"], after),
        "",
        f"- waiting for the next look is up to one `--interval` (here {result.interval:g} s, "
        f"median {waited.median:.2f} s); with the default `--interval 15` it adds 7.5 s on "
        "average",
        goal(own.median < 1, f"the watcher's own work under 1 s: {own.median:.2f} s"),
    ]
    return "\n".join(lines)


def kafka_section(result: kafka_bench.KafkaResult) -> str:
    headers = [
        "round",
        "decision",
        "produced while `deploy` ran",
        "read by the old run",
        "read by the new run",
        "lost",
        "repeated",
        "pause in commits",
        "`deploy` took",
    ]
    rows = []
    for index, round_ in enumerate(result.rounds, 1):
        for handover in round_.handovers:
            rows.append(
                [
                    index,
                    handover.decision,
                    handover.produced_during,
                    handover.read_before,
                    handover.read_after,
                    handover.lost,
                    handover.repeated,
                    f"{handover.pause:.1f} s",
                    f"{handover.deploy_seconds:.1f} s",
                ]
            )
    totals = [
        [
            index,
            r.produced,
            r.overall["read"],
            ", ".join(f"v{v}: {n}" for v, n in r.versions.items()),
            r.overall["lost"],
            r.overall["repeated"],
        ]
        for index, r in enumerate(result.rounds, 1)
    ]
    names = ("restart from the checkpoint", "new version")
    pauses = [
        f"{name} {seconds(result.stats(i, lambda h: h.pause))}" for i, name in enumerate(names)
    ]
    exact = all(r.overall["lost"] == r.overall["repeated"] == 0 for r in result.rounds)
    lines = [
        "#### Kafka handovers, records arriving throughout",
        "",
        f"A topic of 3 partitions, a record produced every 20 ms throughout; a job copying each "
        f"record with its partition and offset into parquet (1 s trigger, local[2], Spark "
        f"{result.spark}, its source without `startingOffsets`); {len(result.rounds)} rounds, "
        "each deploys v1, then a config change (restart from the checkpoint), then a query "
        "change (v2, its source at v1's committed offsets), each once the run before it has "
        f"read 100 records. Load average {load_text(result.load)}.",
        "",
        markdown_table(headers, rows),
        "",
        "Every record of each round, read across its runs:",
        "",
        markdown_table(["round", "produced", "read", "per version", "lost", "repeated"], totals),
        "",
        goal(exact, "every record read exactly once, none lost, none repeated"),
        f"- pause in commits, median (best): {'; '.join(pauses)}",
    ]
    return "\n".join(lines)


def handover_section(result: handover_bench.HandoverResult) -> str:
    def med(values: list[float]) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    rows = []
    for kind in ("config", "query", "cannot-start"):
        for way in handover_bench.WAYS:
            done = result.of(kind, way)
            if not done:
                continue
            rows.append(
                [
                    kind,
                    way,
                    len(done),
                    med([r.handover for r in done if r.handover == r.handover]),
                    med([r.pause for r in done]),
                    med([r.deploy for r in done]),
                    f"{statistics.median([r.rss_before for r in done]):.0f}",
                    f"{statistics.median([r.rss_peak for r in done]):.0f}",
                    ", ".join(str(r.same_driver) for r in done if r.same_driver is not None) or "-",
                ]
            )
    table = markdown_table(
        [
            "change",
            "handover",
            "rounds",
            "handover's pause, s: median (min-max)",
            "largest gap in commits, s",
            "deploy, s",
            "memory before, MiB",
            "peak during, MiB",
            "old driver kept",
        ],
        rows,
    )
    ratios = []
    for kind in ("config", "query"):
        cold, warm = result.of(kind, "cold"), result.of(kind, "warm")
        unwarmed = result.of(kind, "warm, no warm-up")
        if cold and warm:
            ratio = statistics.median([r.handover for r in warm]) / statistics.median(
                [r.handover for r in cold]
            )
            ratios.append(f"{kind} change: warm pause / cold pause = {ratio:.2f}")
        if unwarmed and warm:
            ratio = statistics.median([r.handover for r in warm]) / statistics.median(
                [r.handover for r in unwarmed]
            )
            ratios.append(f"{kind} change: warm pause / without the warm-up = {ratio:.2f}")
    where = (
        "local Spark"
        if result.target == "local"
        else "a standalone cluster: master and a 4-core worker on 127.0.0.1, drivers in cluster "
        "mode, one executor core per run"
    )
    return "\n".join(
        [
            f"#### Warm and cold handovers, side by side, on {result.target}",
            "",
            f"A rate-micro-batch job (1 s trigger, parquet sink, {where}); each round deploys "
            "a config change and a query change each way (cold, warm, warm without the warm-up; "
            "each way first in turn), and a warm change whose new run cannot start "
            "(`spark.driver.memory: banana`). Warm is measured as `deploy` does it and with "
            "`--warm-up 0`. The handover's pause: from the old run's last committed micro-batch "
            "to the new run's first. The largest gap: the largest between two commits around "
            "the deploy (on 2 cores the new driver's JVM start slows the old run's batches "
            "too). Memory: the resident set of the job's drivers (JVMs and Python), before the "
            "deploy and at its peak during it.",
            "",
            table,
            "",
            "; ".join(ratios) + f" (trigger {result.trigger:.0f} s).",
            *_pause_steps(result),
        ]
    )


def _pause_steps(result: handover_bench.HandoverResult) -> list[str]:
    """Where each change's pause went, step by step: the median seconds from the old run's
    last commit to each step (the deployer's marks, the new run's first plan and commit)."""
    rows = []
    for kind in ("config", "query"):
        for way in handover_bench.WAYS:
            done = [r.steps for r in result.of(kind, way) if r.steps]
            names = [n for n in done[0] if all(n in d for d in done)] if done else []
            if names:
                said = ", ".join(
                    f"{n} +{statistics.median([d[n] for d in done]):.2f}" for n in names
                )
                rows.append([kind, way, said])
    if not rows:
        return []
    return [
        "",
        "Where the handover's pause went (or, without a handover, the largest gap's): seconds "
        "from the old run's last commit (median of the rounds) to "
        "the deployer's stop marker (`stopping`), the old run's processes gone (`stopped`), the "
        "go (warm), the new run's first batch planned and committed, the deployer's `healthy`.",
        "",
        markdown_table(["change", "handover", "steps"], rows),
    ]


def measured_with(command: str) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"Measured {now} on {machine()} with `{command}`; times are median (best) of the rounds."


def write_docs(path: Path, name: str, body: str) -> None:
    """Replace the results block of benchmark `name` in `path` (or append one); the other
    blocks and the prose around them stay."""
    start, end = BLOCK.format(name=name, end="start"), BLOCK.format(name=name, end="end")
    text = path.read_text() if path.exists() else ""
    block = f"{start}\n\n{body.strip()}\n\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + ("\n\n" if text else "") + block + "\n"
    path.write_text(text)
