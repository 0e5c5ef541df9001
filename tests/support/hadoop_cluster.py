"""A real Hadoop on 127.0.0.1 for the `yarn` tests: a MiniDFSCluster (HDFS, one datanode) and a
MiniYARNCluster (a ResourceManager and one NodeManager whose containers are local processes) in
one JVM, started by `tests/support/java/MiniHadoop.java` with the jars of
`tests/support/maven/hadoop-minicluster/pom.xml` (fetched once with the machine's `mvn`).

- `hadoop_cluster` (session fixture, registered in tests/conftest.py): the running `Hadoop`,
  shared by every test of the session; stopped by pid when the session ends, failed or not, with
  any container process left behind.
- `python -m tests.support.hadoop_cluster [WORK_DIR]`: the same cluster for a try-out by hand; it
  prints the exports to paste into a shell, writes a job template for it
  (`WORK_DIR/job-template.yaml`), and Ctrl-C stops it (docs/tutorials/cluster-yarn.md).

Spark on this cluster: `spark_conf()` are the properties a job needs here (Spark's jars from
pyspark's folder, which every "node" of this one machine has, instead of 300 MB uploaded per
submit; this venv's Python for the application master and the executors; loopback only).
`quick_conf()` makes the JVMs of a test's containers cheaper, as tests/support/jvm.py makes the
others: its options, and the class path of its class-data-sharing archive first on theirs.

The minicluster's own JVM starts quicker too: MiniHadoop is compiled once per machine into a jar
(`hadoop/` in the tests' cache, tests/support/cache.py, named for its source, its jars and the
Java), and the first cluster started from it writes a class-data-sharing archive of the classes
it loaded when it stops (`-XX:ArchiveClassesAtExit`), which every later start maps. Without a
`javac` beside `java`, it runs from its source file as before.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from flink_sql_runner.targets.jvm_archive import archive_path, java_binary
from tests.support import maven
from tests.support.cache import cache_root, locked
from tests.support.jvm import FOLDER, cluster_conf, quick_options, spark_submit_of
from tests.support.scheduling import until_group_ends
from tests.support.scratch import VARIABLE as SCRATCH

JAVA_DIR = Path(__file__).resolve().parent / "java"
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 180.0
STOP_TIMEOUT = 30.0
#: A stop that writes the class-data-sharing archive first (once per machine) may take longer.
ARCHIVE_TIMEOUT = 180.0
#: Starts tried when a port chosen for the cluster was taken before the cluster bound it.
PORT_ATTEMPTS = 3


@dataclass
class Hadoop:
    conf_dir: Path  # HADOOP_CONF_DIR: core-site.xml, hdfs-site.xml, yarn-site.xml
    default_fs: str  # hdfs://127.0.0.1:PORT
    webhdfs: str  # http://127.0.0.1:PORT, the NameNode's web address
    resource_manager: str  # http://127.0.0.1:PORT, what --cluster-api takes
    work_dir: Path
    pid: int
    started_in: float = 0.0

    def env(self) -> dict[str, str]:
        """What the deployer and spark-submit need in their environment."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}

    def apps(self, **query: str) -> list[dict]:
        """The ResourceManager's applications (`/ws/v1/cluster/apps`), filtered by `query`."""
        url = f"{self.resource_manager}/ws/v1/cluster/apps"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - our loopback
            return (json.load(response).get("apps") or {}).get("app") or []

    def kill_app(self, app_id: str) -> None:
        """Kill an application through the ResourceManager, as an operator would."""
        request = urllib.request.Request(  # noqa: S310 - our loopback
            f"{self.resource_manager}/ws/v1/cluster/apps/{app_id}/state?user.name={_user()}",
            data=b'{"state": "KILLED"}',
            headers={"Content-Type": "application/json"},
            method="PUT",
        )
        with urllib.request.urlopen(request, timeout=10):  # noqa: S310
            pass

    def container_logs(self) -> str:
        """Every container's stdout and stderr (drivers, where the runner writes its lines to
        stdout, and executors), for a failing test's message."""
        found = sorted(self.work_dir.glob("target/**/container_*/std*"))
        return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-4000:]}" for p in found)


def spark_conf() -> dict[str, str]:
    """Properties a job needs on this minicluster (see the module's doc)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    python = sys.executable
    conf = {
        "spark.yarn.jars": f"local:{jars}/*",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
    }
    scratch = os.environ.get(SCRATCH)  # the run's (scratch.py): a driver killed leaves in it
    if scratch:
        conf["spark.yarn.appMasterEnv.TMPDIR"] = scratch
        conf["spark.executorEnv.TMPDIR"] = scratch
    return conf


def quick_conf() -> dict[str, str]:
    """A job's properties that let its containers' JVMs (the application master, which is the
    driver, and the executors) map the suite's class-data-sharing archive: `cluster_conf()`'s
    options, and the class path the archive was made with first on the containers' own. YARN
    puts a container's folder and its `__spark_conf__` first, and a JVM whose class path does not
    begin with the archive's ignores it (one start each on the minicluster, load about 18: the
    executor registered 19 -> 14 s after its launch, the first batch 38 -> 16 s). The same jars
    are on that class path anyway (`spark.yarn.jars`), only later."""
    conf = cluster_conf()
    archived = archived_class_path()
    if archived:
        conf["spark.driver.extraClassPath"] = conf["spark.executor.extraClassPath"] = archived
    return conf


@functools.cache
def archived_class_path() -> str | None:
    """The class path pyspark's class-data-sharing archive (tests/support/jvm.py) was made with,
    as Java reads it from the archive; None without one."""
    found, binary = archive_path(FOLDER, spark_submit_of(None)), java_binary()
    if found is None or binary is None or not found.is_file():
        return None
    asked = subprocess.run(  # noqa: S603 - a list, never a shell
        [binary, f"-XX:SharedArchiveFile={found}", "-Xlog:class+path=info", "-version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    paths = re.findall(r"Expecting -Djava\.class\.path=(\S+)", asked.stdout + asked.stderr)
    return paths[-1] if paths else None  # the dynamic archive's, after the base archive's


def try_out_template(cluster: Hadoop) -> dict:
    """The product's job template with its checkpoints on the cluster's HDFS and the Spark
    properties of `spark_conf()`: `--template-file` for a try-out by hand."""
    import yaml

    template = yaml.safe_load((REPO / "templates" / "job-template.yaml").read_text())
    template["checkpoint-root"] = f"{cluster.default_fs}/flink-sql-runner/checkpoints"
    template["sparkProperties"] = {**template.get("sparkProperties", {}), **spark_conf()}
    return template


def _user() -> str:
    import getpass

    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our loopback
            return response.status == 200
    except OSError:
        return False


def _ready_line(log: Path, start: int = 0) -> dict | None:
    """The READY line the launcher printed after byte `start` of its log (an earlier start in
    the same folder printed its own)."""
    try:
        with log.open("rb") as handle:
            handle.seek(start)
            text = handle.read().decode(errors="replace")
        for line in text.splitlines():
            if line.startswith("READY "):
                return json.loads(line[len("READY ") :])
    except FileNotFoundError:
        pass
    return None


def working_in(folder: Path) -> dict[int, str]:
    """The processes whose working folder is `folder` or below it, with that folder."""
    root = str(folder.resolve())
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + "/"):
            found[int(entry.name)] = cwd
    return found


def _left_behind(work_dir: Path) -> list[int]:
    """Processes working in the cluster's folder: its containers (the NodeManager starts each in
    a session of its own, out of the JVM's process group)."""
    return [pid for pid in working_in(work_dir) if pid != os.getpid()]


def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _stop(process: subprocess.Popen, work_dir: Path, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM (the launcher's hook stops YARN, which signals its containers, then HDFS, for 3 s
    at most: MiniHadoop.java), SIGKILL after `timeout`; then any process still working in the
    cluster's folder, by pid."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = _left_behind(work_dir)
        if not left:
            return
        _kill(left, sig)
        time.sleep(2)


def _launch(args: list[str], work_dir: Path, log: Path) -> tuple[subprocess.Popen, dict]:
    """Start the JVM and wait for its READY line. A port another process took between the
    launcher's choice and the cluster's bind (a BindException) starts it again, up to
    PORT_ATTEMPTS times; any other failure is an error with the log's tail."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        start = log.stat().st_size if log.exists() else 0
        with log.open("ab") as out:
            process = subprocess.Popen(  # noqa: S603 - a list, never a shell
                args,
                cwd=work_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        ready = None
        try:
            while ready is None and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
                ready = _ready_line(log, start)
        except BaseException:
            _stop(process, work_dir)
            raise
        if ready is not None:
            return process, ready
        _stop(process, work_dir)
        tail = log.read_bytes()[start:].decode(errors="replace")
        if "java.net.BindException" not in tail or attempt == PORT_ATTEMPTS:
            raise RuntimeError(f"the Hadoop minicluster did not start:\n{tail[-4000:]}")
    raise AssertionError("unreachable")


def compiled(jars: list[Path]) -> Path | None:
    """MiniHadoop compiled into a jar in the tests' cache, made once per machine for its source,
    its jars and the Java (a class in a jar can be archived; one compiled in memory from its
    source file cannot); None without a `javac` beside `java`, or when it does not compile."""
    found = shutil.which("java")
    javac = Path(found).resolve().parent / "javac" if found else None
    if javac is None or not javac.is_file():
        return None
    source = JAVA_DIR / "MiniHadoop.java"
    digest = hashlib.sha256(source.read_bytes())
    for path in (javac, *jars):
        info = path.stat()
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    folder = cache_root() / "hadoop"
    made = folder / f"minihadoop-{digest.hexdigest()[:20]}.jar"
    with locked(folder / ".lock"):
        if made.is_file():
            return made
        with tempfile.TemporaryDirectory(prefix="minihadoop-") as classes:
            done = subprocess.run(  # noqa: S603 - a list, never a shell
                [
                    str(javac),
                    "-nowarn",
                    "-cp",
                    os.pathsep.join(map(str, jars)),
                    "-d",
                    classes,
                    str(source),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                print(f"tests/support/hadoop_cluster.py: MiniHadoop.java: {done.stderr[-2000:]}")
                return None
            partial = made.with_suffix(f".{os.getpid()}.tmp")
            with zipfile.ZipFile(partial, "w") as jar:
                for compiled_class in sorted(Path(classes).rglob("*.class")):
                    jar.write(compiled_class, compiled_class.relative_to(classes).as_posix())
            partial.replace(made)
    return made


def _launcher(jars: list[Path]) -> tuple[list[str], Path | None]:
    """The JVM's options, class path and main class; the archive this start writes when it
    stops (None: it maps the one made before, or runs from its source file)."""
    class_path = os.pathsep.join(str(jar) for jar in jars)
    jar = compiled(jars)
    if jar is None:
        return ["-cp", class_path, str(JAVA_DIR / "MiniHadoop.java")], None
    archive = jar.with_suffix(".jsa")
    launch = ["-cp", f"{jar}{os.pathsep}{class_path}", "MiniHadoop"]
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", *launch], None
    return [f"-XX:ArchiveClassesAtExit={_partial(archive)}", *launch], archive


def _partial(archive: Path) -> Path:
    """Where this process's start writes `archive` before it is kept."""
    return archive.with_name(f"{archive.name}.{os.getpid()}.tmp")


def _keep_archive(process: subprocess.Popen, archive: Path | None) -> None:
    """The archive a start wrote as its JVM exited, kept when that exit was its own (a JVM killed
    while it writes leaves a part)."""
    if archive is None:
        return
    partial = _partial(archive)
    if process.returncode in (0, 143) and partial.is_file() and partial.stat().st_size > 0:
        partial.replace(archive)
    else:
        partial.unlink(missing_ok=True)


def minicluster_options() -> tuple[str, ...]:
    """The suite's cheaper-JVM options for the minicluster's JVM: of `java` on PATH, which it
    runs (not the Java of JAVA_HOME, which Spark's scripts run)."""
    return quick_options(shutil.which("java"))


@contextmanager
def hadoop(work_dir: Path) -> Iterator[Hadoop]:
    """Start the minicluster under `work_dir`; always stop it (and its containers) afterwards."""
    work_dir.mkdir(parents=True, exist_ok=True)
    jars = maven.classpath(maven.pom("hadoop-minicluster"))
    log = work_dir / "minicluster.log"
    launch, archive = _launcher(jars)
    scratch = work_dir / "tmp"  # Jetty's folders, not /tmp's
    scratch.mkdir(exist_ok=True)
    args = [
        "java",
        f"-Dlog4j.configuration=file:{JAVA_DIR / 'log4j.properties'}",
        f"-Djava.io.tmpdir={scratch}",
        "-Xmx1g",
        *minicluster_options(),
        *launch,
        str(work_dir),
    ]
    begun = time.monotonic()
    try:
        process, ready = _launch(args, work_dir, log)
    except BaseException:
        if archive is not None:
            _partial(archive).unlink(missing_ok=True)
        raise
    try:
        deadline = time.monotonic() + START_TIMEOUT
        cluster = Hadoop(
            Path(ready["conf_dir"]),
            ready["default_fs"],
            ready["webhdfs"],
            ready["resource_manager"],
            work_dir,
            process.pid,
        )
        probes = [
            f"{cluster.resource_manager}/ws/v1/cluster/info",
            f"{cluster.webhdfs}/webhdfs/v1/?op=GETFILESTATUS&user.name={_user()}",
        ]
        while not all(_answers(url) for url in probes):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the minicluster started but does not answer at {probes}")
            time.sleep(0.5)
        cluster.started_in = time.monotonic() - begun
        yield cluster
    finally:
        _stop(process, work_dir, ARCHIVE_TIMEOUT if archive else STOP_TIMEOUT)
        _keep_archive(process, archive)


@pytest.fixture(scope="session")
def hadoop_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hadoop]:
    """One minicluster for the tests that use it (see the module's doc), stopped after the last
    of them (tests/support/scheduling.py)."""
    try:
        with until_group_ends("hadoop") as stack:
            cluster = stack.enter_context(hadoop(tmp_path_factory.mktemp("hadoop")))
            print(f"\nHadoop minicluster started in {cluster.started_in:.1f} s")
            yield cluster
    except maven.MavenUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def main() -> None:
    """Start the minicluster for a try-out by hand; Ctrl-C stops it."""
    import argparse

    import yaml

    parser = argparse.ArgumentParser(
        prog="python -m tests.support.hadoop_cluster",
        description="Start a MiniDFSCluster and a MiniYARNCluster on 127.0.0.1 for a try-out; "
        "it prints HADOOP_CONF_DIR and the Spark properties to use, and writes a job template "
        "for it (WORK_DIR/job-template.yaml); Ctrl-C stops it.",
    )
    parser.add_argument("work_dir", nargs="?", help="its files [default: a new temp folder]")
    given = parser.parse_args().work_dir
    work_dir = Path(given or tempfile.mkdtemp(prefix="hadoop-"))
    with hadoop(work_dir.resolve()) as cluster:
        print(f"# Hadoop minicluster up in {cluster.started_in:.0f} s (its files: {work_dir})")
        print(f"export HADOOP_CONF_DIR={cluster.conf_dir}")
        print(f"# ResourceManager: {cluster.resource_manager}   HDFS: {cluster.default_fs}")
        print("# Spark properties for jobs on it (spark.yarn.jars saves the upload per submit):")
        for key, value in spark_conf().items():
            print(f"#   {key}: {value}")
        template = work_dir / "job-template.yaml"
        template.write_text(yaml.safe_dump(try_out_template(cluster), sort_keys=False))
        print(f"# A job template with them, its checkpoints on this HDFS: {template}")
        print("# Ctrl-C stops it.", flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            signal.pause()
        except KeyboardInterrupt:
            print("stopping")


if __name__ == "__main__":
    main()
