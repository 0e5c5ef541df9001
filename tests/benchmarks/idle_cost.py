"""What the example jobs cost while they idle: CPU, memory, log bytes, and time to healthy.

    python -m tests.benchmarks.idle_cost                   # the four examples, 3 minutes idle
    python -m tests.benchmarks.idle_cost --minutes 5 --template-file examples/job-template.yaml

Deploys `examples/queries` with `examples/tables` (as the README does, from the repository's
root) into a fresh state folder under the system's temp folder, never `./.flink-sql-runner/`;
lets the jobs settle (`--settle` seconds after the deploy returned), then measures for
`--minutes`: the CPU time of every process of each job (its spark-submit JVM, the Python driver
and their children: the job's process session, from /proc), the resident memory at the end, and
how many bytes its log grew. Time to healthy is what `deploy` reports per job (the jobs start
together, as a deploy starts them). Every job is stopped at the end, and any process of theirs
still there is killed by its session. Linux only (/proc). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.common import REPO, load_average, machine, markdown_table
from tests.support.scratch import for_a_program

TICK = os.sysconf("SC_CLK_TCK")
HEALTHY = re.compile(r"healthy after ([0-9.]+) s")


@dataclass(frozen=True)
class Job:
    name: str
    leader: int  # the session leader: the spark-submit JVM (the gate's pid)
    log: Path


@dataclass(frozen=True)
class Sample:
    cpu_seconds: float  # user + system of the session's processes, their reaped children too
    rss_mib: float
    log_bytes: int
    processes: int


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def session_pids(leader: int) -> list[int]:
    """Every process whose session is `leader`'s (a job's processes: start_new_session)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[3]) == leader:
                found.append(int(entry.name))
    return found


def sample(job: Job) -> Sample:
    cpu = rss = 0.0
    pids = session_pids(job.leader)
    for pid in pids:
        fields = _stat(pid)
        if fields:
            cpu += sum(int(v) for v in fields[11:15]) / TICK  # utime stime cutime cstime
            rss += _rss_mib(pid)
    size = job.log.stat().st_size if job.log.exists() else 0
    return Sample(cpu, rss, size, len(pids))


def cli(state: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - a list, never a shell
        [sys.executable, "-m", "flink_sql_runner", *args, "--state-dir", str(state)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def running_jobs(state: Path) -> list[Job]:
    """The runs the local target recorded: one per job."""
    jobs = []
    for record in sorted((state / "runs").glob("*/*.json")):
        doc = json.loads(record.read_text())
        jobs.append(Job(doc["name"], int(doc["pid"]), Path(doc["log"])))
    return jobs


def kill_sessions(jobs: list[Job]) -> None:
    for job in jobs:
        for pid in session_pids(job.leader):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run(args: argparse.Namespace, say=print) -> str:  # type: ignore[no-untyped-def]
    state = Path(tempfile.mkdtemp(prefix="fsr-idle-"))
    deploy_args = ["--path", str(args.path), "--table-definition-path", str(args.tables)]
    if args.template_file:
        deploy_args += ["--template-file", str(args.template_file)]
    jobs: list[Job] = []
    try:
        load_before = load_average()
        say(f"deploying the examples into {state} (load average {load_before:.2f})")
        begun = time.monotonic()
        deployed = cli(state, "deploy", *deploy_args, "--output", "json")
        deploy_seconds = time.monotonic() - begun
        if deployed.returncode != 0:
            raise SystemExit(f"deploy failed:\n{deployed.stdout}\n{deployed.stderr}")
        healthy = {}
        for job in json.loads(deployed.stdout)["jobs"]:
            found = HEALTHY.search((job.get("result") or {}).get("summary", ""))
            healthy[job["name"]] = float(found.group(1)) if found else float("nan")
        jobs = running_jobs(state)
        say(f"deployed in {deploy_seconds:.1f} s; settling {args.settle:.0f} s")
        time.sleep(args.settle)
        first = {job.name: sample(job) for job in jobs}
        started = time.monotonic()
        say(f"measuring {args.minutes:g} minutes")
        time.sleep(args.minutes * 60)
        last = {job.name: sample(job) for job in jobs}
        window = time.monotonic() - started
        load_after = load_average()
        rows = []
        totals = [0.0, 0.0, 0.0]
        for job in jobs:
            cpu = (last[job.name].cpu_seconds - first[job.name].cpu_seconds) / window
            logged = (last[job.name].log_bytes - first[job.name].log_bytes) / (window / 60)
            rss = last[job.name].rss_mib
            totals = [totals[0] + cpu, totals[1] + logged, totals[2] + rss]
            rows.append(
                [
                    f"`{job.name}`",
                    f"{healthy.get(job.name, float('nan')):.1f} s",
                    f"{cpu:.3f}",
                    f"{logged / 1024:.1f} KiB",
                    f"{rss:.0f} MiB",
                    last[job.name].processes,
                ]
            )
        rows.append(
            [
                f"**all {len(jobs)}**",
                f"deploy {deploy_seconds:.1f} s",
                f"**{totals[0]:.2f}**",
                f"**{totals[1] / 1024:.1f} KiB**",
                f"{totals[2]:.0f} MiB",
                "",
            ]
        )
        table = markdown_table(
            ["job", "healthy after", "CPU (cores)", "log per minute", "RSS", "processes"],
            rows,
        )
        template = args.template_file or "the packaged template"
        return (
            f"Idle cost of {args.path} with {template}, measured {window / 60:.1f} min after "
            f"{args.settle:.0f} s to settle; {machine()}; load average {load_before:.2f} before "
            f"the deploy, {load_after:.2f} at the end.\n\n{table}"
        )
    finally:
        for job in jobs:
            cli(state, "stop", job.name, "--stop-timeout", "30")
        kill_sessions(jobs)
        if not args.keep:
            shutil.rmtree(state, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.idle_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--minutes", type=float, default=3.0, help="how long to measure")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds before measuring")
    parser.add_argument("--path", type=Path, default=Path("examples/queries"), help="the jobs")
    parser.add_argument("--tables", type=Path, default=Path("examples/tables"), help="the catalog")
    parser.add_argument("--template-file", type=Path, help="deploy with this template")
    parser.add_argument("--keep", action="store_true", help="keep the state folder (logs)")
    args = parser.parse_args(argv)
    print(run(args, say=lambda text: print(text, file=sys.stderr, flush=True)))
    return 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
