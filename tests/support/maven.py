"""Jars from Maven Central, fetched with the machine's `mvn` into a cache the tests reuse.

Each set of jars is a small pom under `tests/support/maven/` whose dependencies are what a real
part needs (the Kafka broker, Spark's Kafka connector, Hadoop's minicluster). `classpath(pom)`
resolves it once into the tests' cache outside the clone (`maven/` of tests/support/cache.py;
`FSR_TEST_MAVEN_CACHE` names another folder; `repository/` is mvn's local repository there, never
the user's `~/.m2`) and keeps the resolved classpath beside it, keyed by the pom's bytes and the
properties given, so a later session, in this clone or another, starts no `mvn` at all.

Nothing is downloaded from anywhere but the repositories the machine's `mvn` is set up with.
Where Maven Central cannot be reached, `MavenUnavailable` says so and what to do.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.cache import cache_root, locked

POMS = Path(__file__).resolve().parent / "maven"
CACHE = Path(os.environ.get("FSR_TEST_MAVEN_CACHE") or cache_root() / "maven")
RESOLVE_TIMEOUT = 1200


class MavenUnavailable(RuntimeError):
    """The jars could not be had: no `mvn`, or its repositories did not serve them."""


def pom(name: str) -> Path:
    """`tests/support/maven/<name>/pom.xml`."""
    return POMS / name / "pom.xml"


def classpath(pom_file: Path, properties: dict[str, str] | None = None) -> list[Path]:
    """The jars of `pom_file`'s dependencies (transitive, runtime scope), resolved once."""
    properties = dict(sorted((properties or {}).items()))
    digest = hashlib.sha256(pom_file.read_bytes())
    for key, value in properties.items():
        digest.update(f"\0{key}={value}".encode())
    record = CACHE / "classpaths" / f"{pom_file.parent.name}-{digest.hexdigest()[:16]}.txt"
    record.parent.mkdir(parents=True, exist_ok=True)
    # One resolver at a time per cache: test processes (pytest-xdist's workers, two clones)
    # share it, and mvn's local repository is not safe for two writers.
    with locked(CACHE / "classpaths" / ".lock"):
        if record.exists():
            jars = [Path(line) for line in record.read_text().splitlines() if line]
            if jars and all(jar.exists() for jar in jars):
                return jars
        jars = _resolve(pom_file, properties)
        partial = record.with_suffix(".tmp")
        partial.write_text("".join(f"{jar}\n" for jar in jars))
        partial.replace(record)
    return jars


def _resolve(pom_file: Path, properties: dict[str, str]) -> list[Path]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenUnavailable(
            "these tests fetch jars from Maven Central with `mvn`, which is not on PATH: install "
            "Maven (Debian: apt-get install maven), or run `pytest -m 'not kafka and not yarn'`"
        )
    out = CACHE / "classpaths" / f"{pom_file.parent.name}.resolving"
    out.parent.mkdir(parents=True, exist_ok=True)
    args = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom_file),
        f"-Dmaven.repo.local={CACHE / 'repository'}",
        *(f"-D{key}={value}" for key, value in properties.items()),
        "dependency:build-classpath",
        "-Dmdep.includeScope=runtime",
        f"-Dmdep.outputFile={out}",
    ]
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise MavenUnavailable(f"mvn did not resolve {pom_file} in {RESOLVE_TIMEOUT} s") from exc
    if done.returncode != 0 or not out.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise MavenUnavailable(
            f"mvn could not resolve {pom_file} (exit {done.returncode}); these tests need Maven "
            f"Central through the machine's mvn, or run `pytest -m 'not kafka and not yarn'`:\n"
            f"{tail}"
        )
    jars = [Path(entry) for entry in out.read_text().strip().split(os.pathsep) if entry]
    out.unlink()
    return jars
