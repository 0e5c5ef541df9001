"""Connectors a job's tables need that Spark's own distribution lacks (Kafka), for the Spark the
job runs on, without the user naming their coordinates.

A connector must match its Spark release exactly, Scala build included
(`spark-sql-kafka-0-10_2.13:4.2.0` for Spark 4.2.0). Two ways to have it:
- by default, its Maven coordinates go into `spark.jars.packages`: spark-submit resolves them
  (with its dependencies) through Ivy, from the local caches or the repositories;
- `--connector-jars DIR`, for clusters without internet: the connector's jars from a folder go
  into `spark.jars` (spark-submit ships them).
A job that names the connector itself (in `spark.jars.packages` or `spark.jars`) keeps its own.

`missing()` says, before anything is stopped, why a connector cannot be had: a jar the folder
lacks, or coordinates no repository serves (asked with one HEAD request for its POM, after the
local Ivy and Maven caches). A repository that does not answer is a problem too: spark-submit
would not get the jars from it either. Spark's Ivy settings file (`spark.jars.ivySettings`), when
the job names one, decides alone: the deployer does not second-guess it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_sql_runner.model.sparkversion import version_tuple
from flink_sql_runner.targets import http

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
HEAD_TIMEOUT = 10.0
_CORE_JAR = re.compile(r"^spark-core_(\d+\.\d+)-")


@dataclass(frozen=True)
class Connector:
    """One connector: the formats it serves and its artifacts (`{scala}` in their names)."""

    name: str
    formats: frozenset[str]
    artifact: str  # in org.apache.spark, versioned as Spark
    #: Jar names (prefixes, without version) the folder must hold beside the artifact's.
    companions: tuple[str, ...]

    def coordinates(self, build: SparkBuild) -> str:
        return f"org.apache.spark:{self.artifact.format(scala=build.scala)}:{build.version}"

    def jar(self, build: SparkBuild) -> str:
        return f"{self.artifact.format(scala=build.scala)}-{build.version}.jar"


KAFKA = Connector(
    "Kafka",
    frozenset({"kafka"}),
    "spark-sql-kafka-0-10_{scala}",
    ("spark-token-provider-kafka-0-10_{scala}-{version}", "kafka-clients-", "commons-pool2-"),
)
CONNECTORS = (KAFKA,)


@dataclass(frozen=True)
class SparkBuild:
    """A Spark release and the Scala it is built for ("4.2.0", "2.13")."""

    version: str
    scala: str


def scala_of(version: str, spark_home: Path | None = None) -> str:
    """The Scala build of a Spark: its spark-core jar says; else the line's default (pip's
    pyspark and Apache's default downloads: 2.12 for 3.x, 2.13 from 4.0, which has no other)."""
    if spark_home is not None:
        for jar in sorted((spark_home / "jars").glob("spark-core_*.jar")):
            found = _CORE_JAR.match(jar.name)
            if found:
                return found[1]
    parsed = version_tuple(version)
    return "2.12" if parsed is not None and parsed < (4, 0, 0) else "2.13"


def needed(tables: dict[str, Any]) -> list[tuple[Connector, str]]:
    """(connector, the first table that needs it) for each connector the tables need."""
    found: dict[str, tuple[Connector, str]] = {}
    for name, definition in sorted(tables.items()):
        fmt = definition.get("format") if isinstance(definition, dict) else None
        for connector in CONNECTORS:
            if fmt in connector.formats and connector.name not in found:
                found[connector.name] = (connector, name)
    return list(found.values())


def _names_it(conf: dict[str, str], connector: Connector) -> bool:
    stem = connector.artifact.split("_{scala}")[0]
    return any(stem in conf.get(key, "") for key in ("spark.jars.packages", "spark.jars"))


def _append(conf: dict[str, str], key: str, items: list[str]) -> str:
    have = [item for item in conf.get(key, "").split(",") if item.strip()]
    return ",".join(have + [item for item in items if item not in have])


@dataclass(frozen=True)
class Connectors:
    """How this deployment gives jobs their connectors: `build` is the Spark the runs use
    (None: not known), `jars` the folder of --connector-jars (None: Maven coordinates)."""

    build: SparkBuild | None
    jars: Path | None = None
    head: Callable[[str], int] | None = None  # URL -> HTTP status (tests: a fault proxy)

    def conf(self, tables: dict[str, Any], conf: dict[str, str]) -> dict[str, str]:
        """The Spark properties a run of a job with `tables` and `conf` gets added."""
        added: dict[str, str] = {}
        for connector, _ in needed(tables):
            if _names_it(conf, connector):
                continue
            if self.jars is not None:
                jars = [str(p) for p in self._folder_jars(connector)[0]]
                added["spark.jars"] = _append({**conf, **added}, "spark.jars", jars)
            elif self.build is not None:
                key = "spark.jars.packages"
                added[key] = _append({**conf, **added}, key, [connector.coordinates(self.build)])
        return added

    def missing(self, tables: dict[str, Any], conf: dict[str, str]) -> str | None:
        """Why a run of this job could not have its connectors; None when it can."""
        for connector, table in needed(tables):
            if _names_it(conf, connector):
                continue
            why = self._missing(connector, conf)
            if why:
                fmt = tables[table].get("format")
                return (
                    f"table {table} (format {fmt}) needs Spark's {connector.name} connector: {why}"
                )
        return None

    def _missing(self, connector: Connector, conf: dict[str, str]) -> str | None:
        if self.jars is not None:
            return self._folder_jars(connector)[1]
        if self.build is None:
            return (
                "the target does not say which Spark runs the job, so its coordinates are not "
                "known; name them in sparkProperties spark.jars.packages, or give a folder of "
                "the connector's jars with --connector-jars"
            )
        if conf.get("spark.jars.ivySettings"):
            return None
        coordinates = connector.coordinates(self.build)
        if self._cached(connector, conf):
            return None
        answers = []
        for repository in _repositories(conf):
            url = _pom_url(repository, coordinates)
            status = self._head(url)
            if status == 200:
                return None
            answers.append(f"{repository} ({'not found' if status == 404 else status})")
        return (
            f"{coordinates} (Spark {self.build.version}, Scala {self.build.scala}) cannot be had: "
            f"{'; '.join(answers)}; give a folder of its jars with --connector-jars, or "
            "repositories that serve it in sparkProperties spark.jars.repositories"
        )

    def _head(self, url: str) -> int | str:
        if self.head is not None:
            return self.head(url)
        try:
            return http.call("HEAD", url, what="a Maven repository", timeout=HEAD_TIMEOUT).status
        except http.Unreachable as exc:
            return f"no answer: {str(exc).split(': ', 1)[-1]}"

    def _cached(self, connector: Connector, conf: dict[str, str]) -> bool:
        """In Ivy's cache (`spark.jars.ivy`, else Spark's default) or the local Maven one."""
        build = self.build
        assert build is not None
        artifact = connector.artifact.format(scala=build.scala)
        home = Path.home()
        default = ".ivy2.5.2" if (version_tuple(build.version) or (4,)) >= (4, 0, 0) else ".ivy2"
        ivy = Path(conf.get("spark.jars.ivy") or home / default)
        m2 = home / ".m2" / "repository" / "org" / "apache" / "spark" / artifact / build.version
        return (ivy / "jars" / f"org.apache.spark_{artifact}-{build.version}.jar").exists() or (
            m2 / f"{artifact}-{build.version}.jar"
        ).exists()

    def _folder_jars(self, connector: Connector) -> tuple[list[Path], str | None]:
        folder = self.jars
        assert folder is not None
        if not folder.is_dir():
            return [], f"--connector-jars {folder} is not a folder"
        names = sorted(p.name for p in folder.glob("*.jar"))
        build = self.build
        if build is not None:
            main = connector.jar(build)
            scala, version = build.scala, build.version
        else:  # the folder's one connector jar, whatever its version
            stem = connector.artifact.split("{scala}")[0]
            candidates = [n for n in names if n.startswith(stem)]
            if len(candidates) != 1:
                return [], (
                    f"--connector-jars {folder}: the Spark the job runs on is not known, and the "
                    f"folder holds {len(candidates)} {connector.name} connector jars, not one"
                )
            main = candidates[0]
            found = re.match(r".*_(\d+\.\d+)-(.+)\.jar$", main)
            scala, version = (found[1], found[2]) if found else ("", "")
        wanted = [main] + [c.format(scala=scala, version=version) for c in connector.companions]
        jars, lacking = [], []
        for prefix in wanted:
            matching = [
                n
                for n in names
                if n == prefix or (not prefix.endswith(".jar") and n.startswith(prefix))
            ]
            if matching:
                jars.append(folder / matching[-1])
            else:
                lacking.append(prefix if prefix.endswith(".jar") else f"{prefix}*.jar")
        if lacking:
            return jars, f"--connector-jars {folder} has no {', '.join(lacking)}"
        return jars, None


def _repositories(conf: dict[str, str]) -> list[str]:
    """The job's own repositories first (spark-submit asks them too), then Maven Central."""
    extra = [r.strip() for r in conf.get("spark.jars.repositories", "").split(",") if r.strip()]
    return [*extra, MAVEN_CENTRAL]


def _pom_url(repository: str, coordinates: str) -> str:
    group, artifact, version = coordinates.split(":")
    path = f"{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.pom"
    return f"{repository.rstrip('/')}/{path}"
