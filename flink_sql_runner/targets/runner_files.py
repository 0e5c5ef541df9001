"""The runner as the deployer ships it: `job_runner.py`, the one file a cluster is given, and the
rest of the runner as a zip that travels with each job on its checkpoint storage.

A cluster driver is started on `job_runner.py` (the packaged one, or `--runner-path`) with
`--package <zip>`: the zip holds the runner's modules, built from this installation, so the runner
that runs is always the deployer's own. It lies beside the job's control files, named by its
content, and is written once per runner version and job.
"""

from __future__ import annotations

import functools
import hashlib
import io
import posixpath
import zipfile
from importlib import resources

from flink_sql_runner.stores.storage import Storage

#: The package the runner's modules form on a driver (runner/job_runner.py's PACKAGE).
PACKAGE = "flink_sql_runner_job"
#: A zip entry's time: fixed, so that one runner makes one zip, byte for byte.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def runner_script() -> str:
    """The packaged runner, `job_runner.py`, as a local path."""
    from importlib import resources

    return str(resources.files("flink_sql_runner._runner").joinpath("job_runner.py"))


@functools.cache
def runner_zip() -> tuple[str, bytes]:
    """The runner's modules as a zip (`flink_sql_runner_job/*.py`) and its file name,
    `runner-<content hash>.zip`."""
    folder = resources.files("flink_sql_runner._runner")
    modules = sorted(item.name for item in folder.iterdir() if item.name.endswith(".py"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in modules:
            entry = zipfile.ZipInfo(f"{PACKAGE}/{name}", _ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, folder.joinpath(name).read_bytes())
    data = buffer.getvalue()
    return f"runner-{hashlib.sha256(data).hexdigest()[:16]}.zip", data


def place_runner_package(storage: Storage, runtime_manifest: str) -> str:
    """The runner's zip beside a run's runtime manifest (written once: its name is its
    content); its location."""
    name, data = runner_zip()
    folder = posixpath.dirname(runtime_manifest)
    if name not in storage.file_names(folder):
        storage.write_bytes(f"{folder}/{name}", data)
    return f"{folder}/{name}"
