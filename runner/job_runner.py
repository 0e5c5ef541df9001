"""The entry point `spark-submit` starts for every job: all a cluster must be given.

    spark-submit ... job_runner.py --manifest <FILE-OR-URI> [--package <ZIP-URI>]
    spark-submit --master local[N] ... job_runner.py --probe NAME --input IN --output OUT

The runner itself is the package beside this file (lifecycle.py runs one job). A driver that has
only this file gets the package with `--package`: a zip of it that the deployer writes on the
checkpoint's storage, which the driver reads anyway (its runtime manifest lies there), so the
runner that runs on a cluster is always the deployer's own, whatever copy of this file the cluster
holds. It needs only pyspark and the standard library.

With `--probe` it runs one of the runner's probes instead (schema_probe, state_probe,
preview_probe), as the deployer starts them: under the Spark a job runs on, its settings in
spark-submit's properties file.

spark-submit puts `$SPARK_HOME/python/lib/pyspark.zip` and py4j's zip first on a Python driver's
path. Where SPARK_HOME is the pyspark this Python has installed (pip's, as on a laptop), its
modules are imported from the install instead (`installed_over_zips`): pip compiled them once,
while a zip's are compiled from source at every start (about 0.7 CPU-s of each driver and probe).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import zipfile
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any

#: The name the runner's modules take on a driver.
PACKAGE = "flink_sql_runner_job"
#: The probes `--probe` runs, each a module of the runner with a `main(argv)`.
PROBES = ("schema_probe", "state_probe", "preview_probe")
HERE = os.path.dirname(os.path.abspath(__file__))


def fetch(uri: str) -> str:
    """A local path of the zip at `uri`: itself when on this machine's disk, else a copy read
    through Spark's Hadoop file system (s3a:, hdfs:, ...). A path without a scheme is where Spark
    puts it, on Hadoop's default file system (HDFS on most YARN clusters), as the deployer wrote
    it there. A copy is removed when the driver's Python exits; in a YARN container it is in the
    container's folder, which YARN removes."""
    if uri.startswith("file:"):
        return uri.removeprefix("file://").removeprefix("file:")
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the session the run goes on with
    if "://" not in uri and on_local_default_fs(spark):
        return uri
    # In a YARN container, its working folder: the NodeManager removes it however the driver
    # ends (a driver the ResourceManager kills runs no exit handler).
    yarn = os.environ.get("CONTAINER_ID") and os.environ.get("NM_HOST")  # as YARN sets them
    here = os.getcwd() if yarn else None
    folder = tempfile.mkdtemp(prefix="flink-sql-runner-", dir=here)
    atexit.register(_remove, folder, os.getpid())  # imported from until the driver's end
    copy = os.path.join(folder, "runner.zip")
    with open(copy, "wb") as handle:
        handle.write(hadoop_bytes(spark, uri))
    return copy


def _remove(folder: str, owner: int) -> None:
    """`folder` removed, by the process that made it only: a child forked by a job's own code
    runs the same exit handlers, while the driver still imports from the zip."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def on_local_default_fs(spark: Any) -> bool:
    """Whether Hadoop's default file system (`fs.defaultFS`) is this machine's disk."""
    default = spark._jsc.hadoopConfiguration().get("fs.defaultFS")
    return str(default or "file:///").startswith("file:")


def hadoop_bytes(spark: Any, uri: str) -> bytes:
    """The bytes of the file at `uri`, read through Spark's Hadoop file system."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    stream = path.getFileSystem(spark._jsc.hadoopConfiguration()).open(path)
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def runner(package: str | None, module: str = "lifecycle") -> ModuleType:
    """The runner's `module` (its lifecycle): from the `package` zip when given, else from
    beside this file."""
    if package:
        sys.path.insert(0, fetch(package))
        return importlib.import_module(f"{PACKAGE}.{module}")
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(HERE, "__init__.py"), submodule_search_locations=[HERE]
    )
    assert spec is not None and spec.loader is not None
    package_module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package_module
    spec.loader.exec_module(package_module)
    return importlib.import_module(f"{PACKAGE}.{module}")


def installed_over_zips(path: list[str]) -> list[str]:
    """`path` (a driver's `sys.path`) without spark-submit's zips of pyspark and py4j where each
    lies in the `python/lib/` folder of the pyspark this Python finds installed after them, and
    the module installed is the zip's release (its `version.py` the same). Any other zip, and
    every zip where nothing is installed, stays where it is: a Spark of its own (SPARK_HOME set to
    a distribution, a cluster's container) keeps the Python of its own release."""
    zips = {entry: name for entry in path if (name := _zip_of(entry))}
    if not zips:
        return path
    rest = [entry for entry in path if entry not in zips]
    pyspark = PathFinder.find_spec("pyspark", rest)
    if pyspark is None or not pyspark.origin:
        return path
    lib = os.path.realpath(os.path.join(os.path.dirname(pyspark.origin), "python", "lib"))
    installed = {"pyspark": pyspark, "py4j": PathFinder.find_spec("py4j", rest)}
    drop = {
        entry
        for entry, name in zips.items()
        if (spec := installed[name]) is not None
        and spec.origin
        and os.path.dirname(os.path.realpath(entry)) == lib
        and _same_version(entry, name, os.path.dirname(spec.origin))
    }
    kept = [entry for entry in path if entry not in drop]
    # What the path without them finds must be the install where a zip went, and what it found
    # before elsewhere: another Spark's zip later on it (a profile's PYTHONPATH) would win.
    for name in ("pyspark", "py4j"):
        dropped = any(zips[entry] == name for entry in drop)
        before, after = (PathFinder.find_spec(name, p) for p in (path, kept))
        expected = installed[name] if dropped else before
        if (after and after.origin) != (expected and expected.origin):
            return path
    return kept


def _zip_of(entry: str) -> str | None:
    """The package spark-submit's zip `entry` holds (pyspark or py4j), or None."""
    base = os.path.basename(entry)
    if base == "pyspark.zip":
        return "pyspark"
    if base.startswith("py4j-") and base.endswith("-src.zip"):
        return "py4j"
    return None


def _same_version(zip_path: str, name: str, folder: str) -> bool:
    """Whether `name`/version.py in the zip at `zip_path` is the one in the installed `folder`."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            zipped = archive.read(f"{name}/version.py")
        with open(os.path.join(folder, "version.py"), "rb") as handle:
            return handle.read() == zipped
    except Exception:  # noqa: BLE001 - a zip that cannot be read as expected stays
        return False


def main(argv: list[str] | None = None) -> int:
    sys.path[:] = installed_over_zips(sys.path)
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--package", help="the runner's modules as a zip: a file or URI")
    parser.add_argument("--probe", choices=PROBES, help="run this probe, not a job")
    known, rest = parser.parse_known_args(argv)
    return int(runner(known.package, known.probe or "lifecycle").main(rest))


if __name__ == "__main__":
    sys.exit(main())
