"""`plan --output json` as CI runs it on a fresh runner: nothing kept from an earlier run, the
store in S3 (moto's server, 20 ms added per request), 1,000 and 10,000 generated jobs
(plan_bench.py's workspace: 80 % stored as git has them, 20 % with another config, and with
`--query-changes 0.1` 10 % of them with another query; every job running, its run record in
the state folder, as a cluster would say).

Two codes side by side in one run, rounds alternating which goes first: this checkout, and an
older commit (`--old REF`, its files taken by `git archive` into the scratch folder and run
with its own modules under the same Python and libraries; both compiled to bytecode first). Ways:

- cold: no cache (the state folder holds the run records alone: what a fresh runner's cluster
  would tell), the one the plan reads written into the state folder as a command does;
- nothing kept: the same with `--no-cache`, so no cache is written either (a runner with no
  state folder keeps none);
- cache restored: `--cache-dir` holding what the same files read as, written by one run before
  (what a CI cache step restores); only for a code that has `--cache-dir`.

Every run of either code must decide what the workspace was built for (plan_bench.py).

Run: `python -m tests.benchmarks.ci_plan --old d26acbe` (add `--profile` for a cProfile of one
cold 10,000-job plan of this checkout, its top lines printed; `--one-query-each` for jobs whose
queries each name a column of their own, as a fleet's mostly are, instead of three queries).
Prints a Markdown table for docs/developers/benchmarks.md.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import io
import os
import pstats
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tests.benchmarks.common import (
    REPO,
    Measured,
    Stats,
    compile_deployer,
    moto_server_process,
    run_measured,
    s3_env,
)
from tests.benchmarks.plan_bench import (
    STORE,
    Mix,
    _check_plan,
    reset_state,
    s3_client,
    state_files,
    stored_manifests,
    upload,
    write_inputs,
    write_state,
)
from tests.support.scratch import for_a_program
from tests.support.workspace import Workspace

COLD, UNKEPT, CACHED = "cold", "nothing kept", "cache restored"
#: `--query-changes`: the share of jobs whose query changed; each one's new version is checked
#: by Spark (the plan's schema probe, one JVM for all, its answers kept in the cache folder).
DEFAULT_QUERY_CHANGES = 0.0


def argv(ws: Workspace, cache: Path | None, keep: bool = True) -> list[str]:
    """`plan --output json` as CI gives it, `--cache-dir` if `cache`, `--no-cache` unless
    `keep`."""
    line = [sys.executable, "-m", "flink_sql_runner", "plan", "--path", str(ws.jobs)]
    line += ["--table-definition-path", str(ws.tables), "--template-file", str(ws.template)]
    line += ["--state-dir", str(ws.state), "--manifest-store", STORE]
    line += ["--output", "json"]
    line += [] if keep else ["--no-cache"]
    return line + (["--cache-dir", str(cache)] if cache is not None else [])


def old_checkout(ref: str, scratch: Path) -> Path:
    """The deployer's files at `ref`, from `git archive` (the repository is left as it is),
    compiled to bytecode as installing them would."""
    folder = scratch / f"old-{ref}"
    folder.mkdir()
    archive = subprocess.run(  # noqa: S603 - a list, never a shell
        ["git", "-C", str(REPO), "archive", "--format=tar", ref, "flink_sql_runner", "runner",
         "templates"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    for name in ("flink_sql_runner", "runner", "templates"):
        compileall.compile_dir(str(folder / name), quiet=1)
    return folder


def measure(
    sizes: list[int],
    old: str,
    rounds: int,
    latency_ms: float,
    scratch: Path,
    mix: Mix,
    one_query_each: bool = False,
) -> dict[tuple[int, str, str], Stats]:
    found: dict[tuple[int, str, str], list[float]] = {}
    compile_deployer()
    codes = {"now": REPO, f"at {old}": old_checkout(old, scratch)}
    for jobs in sizes:
        ws = write_inputs(scratch / f"ci-{jobs}", jobs, one_query_each)
        manifests, counts = stored_manifests(ws, mix)
        write_state(ws, sorted(manifests))  # checkpoints, and run records of live runs
        pristine = state_files(ws)
        with moto_server_process(latency_ms) as server:
            env = s3_env(server.url, scratch)
            upload(s3_client(env), manifests)
            out = scratch / "plan.json"
            for round_ in range(rounds):
                order = list(codes.items())
                order = order if round_ % 2 == 0 else order[::-1]
                for name, code in order:
                    run_env = {**env, "PYTHONPATH": str(code)}
                    ways: list[tuple[str, Path | None]] = [(COLD, None), (UNKEPT, None)]
                    if name == "now":
                        cache = scratch / f"cache-{jobs}"
                        shutil.rmtree(cache, ignore_errors=True)
                        first = run_measured(argv(ws, cache), env=run_env, stdout=out)
                        assert first.returncode == 0, first.stderr  # writes the cache
                        ways.append((CACHED, cache))
                    for way, cache in ways:
                        reset_state(ws, pristine)  # no cache but the one given
                        done: Measured = run_measured(
                            argv(ws, cache, keep=way != UNKEPT), env=run_env, stdout=out, cwd=code
                        )
                        if done.returncode != 0:
                            raise RuntimeError(f"{name} {way}: {done.stderr}")
                        _check_plan(out, counts)
                        found.setdefault((jobs, name, way), []).append(done.seconds)
                        print(f"  {jobs} jobs, {name}, {way}: {done.seconds:.2f} s")
    return {key: Stats(tuple(v)) for key, v in found.items()}


def table(results: dict[tuple[int, str, str], Stats], old: str) -> str:
    lines = [
        f"| jobs | way | at {old} | now | now over then |",
        "|---|---|---|---|---|",
    ]
    for jobs in sorted({k[0] for k in results}):
        for way in (COLD, UNKEPT, CACHED):
            now, then = results.get((jobs, "now", way)), results.get((jobs, f"at {old}", way))
            if now is None:
                continue
            was = f"{then.median:.2f} s ({then.best:.2f})" if then else "-"
            ratio = f"{then.median / now.median:.2f}x faster" if then else "-"
            lines.append(
                f"| {jobs:,} | {way} | {was} | {now.median:.2f} s ({now.best:.2f}) | {ratio} |"
            )
    return "\n".join(lines)


def profile(scratch: Path, jobs: int, latency_ms: float, mix: Mix, top: int = 30) -> str:
    """cProfiles of this checkout's plan, in this process (the CLI's own entry): one cold, then
    one with the cache the cold one wrote."""
    from click.testing import CliRunner

    from flink_sql_runner.cli.main import main as cli

    ws = write_inputs(scratch / f"profile-{jobs}", jobs)
    manifests, _ = stored_manifests(ws, mix)
    write_state(ws, sorted(manifests))
    shown = []
    with moto_server_process(latency_ms) as server:
        env = s3_env(server.url, scratch)
        upload(s3_client(env), manifests)
        cache = scratch / "profile-cache"
        for way in (COLD, CACHED):
            args = argv(ws, cache)[4:]
            profiler = cProfile.Profile()
            profiler.enable()
            result = CliRunner().invoke(cli, ["plan", *args], env=env)
            profiler.disable()
            assert result.exit_code == 0, result.output[-2000:]
            text = scratch / "profile.txt"
            with text.open("w") as stream:
                stats = pstats.Stats(profiler, stream=stream)
                stats.sort_stats("cumulative").print_stats(top)
                stats.sort_stats("tottime").print_stats(top)
            shown.append(f"{jobs} jobs, {way}:\n{text.read_text()}")
    return "\n".join(shown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the commit to compare with")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-only", action="store_true", help="no timed rounds")
    parser.add_argument("--query-changes", type=float, default=DEFAULT_QUERY_CHANGES)
    parser.add_argument(
        "--one-query-each",
        action="store_true",
        help="each job's query names a column of its own (else three queries)",
    )
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fsr-ci-plan-"))
    try:
        sizes = [int(s) for s in options.sizes.split(",")]
        load = os.getloadavg()[0]
        mix = Mix(config_changed=0.2, query_changed=options.query_changes)
        if not options.profile_only:
            results = measure(
                sizes,
                options.old,
                options.rounds,
                options.latency_ms,
                scratch,
                mix,
                options.one_query_each,
            )
            print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
                  f"{options.rounds} rounds, median (best)\n")  # fmt: skip
            print(table(results, options.old))
        if options.profile or options.profile_only:
            print(profile(scratch, max(sizes), options.latency_ms, mix))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    with for_a_program():
        main()
