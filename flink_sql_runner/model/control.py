"""What the deployer and the runner agree on: the Spark application name of each version of a job,
the control files beside its checkpoints (runtime manifest, stop marker, status file, run
history, submission record), the status beacon every run of a version keeps up to date in one
folder per checkpoint root (`<checkpoint-root>/_status/<name>.v<N>.json`, with its heartbeat
`<name>.v<N>.beat` beside it), and how the runner's status document is read."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

APP_NAME_PREFIX = "flink-sql-runner-"
#: The runner rewrites its status file at least this often while its query runs, idle or not
#: (runner/status.py keeps the same number).
HEARTBEAT_SECONDS = 10.0
#: The shortest stall timeout `watch` accepts: three heartbeats. A healthy run's heartbeat is
#: seen to move within a heartbeat plus a look's interval; a third one covers a late write.
MIN_STALL_TIMEOUT = 3 * HEARTBEAT_SECONDS
_APP_NAME = re.compile(rf"^{APP_NAME_PREFIX}(?P<name>[a-z0-9][a-z0-9_-]*)-v(?P<version>\d+)$")


def app_name(name: str, version: int) -> str:
    """The stable Spark application name of one version of a job."""
    return f"{APP_NAME_PREFIX}{name}-v{version}"


def parse_app_name(text: str) -> tuple[str, int] | None:
    match = _APP_NAME.match(text)
    return (match["name"], int(match["version"])) if match else None


@dataclass(frozen=True)
class ControlFiles:
    """Files beside a job's checkpoints, in `<checkpoint-root>/<name>/_control/`: the runtime
    manifest the runner reads, the stop marker it polls and the status file it writes. They live
    on the checkpoint's own storage, which both the deployer and the driver can reach."""

    runtime_manifest: str
    stop_marker: str
    status_file: str
    #: The version's status beacon (`beacon_location`): what a watcher judges, and nothing else.
    beacon: str = ""
    #: The beacon's heartbeat file (`beat_location`); "" on S3, whose listing tells a beacon's
    #: content by its ETag, so the beacon rewritten unchanged is its own heartbeat there.
    beat: str = ""
    #: The version's run history, kept by its runs (runner/status.py): each run's start, the
    #: batch its first trigger reported (a restart's: where it resumed) and how it ended.
    runs: str = ""

    @classmethod
    def of(cls, job_root: str, version: int) -> ControlFiles:
        control = f"{job_root}/_control/v{version}"
        root, _, name = job_root.rstrip("/").rpartition("/")
        return cls(
            f"{control}.manifest.json",
            f"{control}.stop",
            f"{control}.status.json",
            beacon_location(root, name, version),
            "" if root.startswith(_CONTENT_TOKENED) else beat_location(root, name, version),
            f"{control}.runs.json",
        )

    @property
    def submission_record(self) -> str:
        """Where a cluster target records the submission id of the version's current run."""
        return submission_record_beside(self.stop_marker)

    def prepared(self, run_id: str | None) -> PreparedFiles:
        """The files of run `run_id`, prepared for this version (a warm handover): its own,
        since the run it replaces may be of the same version and still use the version's, and
        another prepared run (one an interrupted deploy left waiting) has its own too."""
        base = f"{self.stop_marker.removesuffix('.stop')}.prepared-{str(run_id)[:8]}"
        return PreparedFiles(
            runtime_manifest=f"{base}.manifest.json",
            stop_marker=f"{base}.stop",
            status_file=f"{base}.status.json",
            go_file=f"{base}.go.json",
        )


@dataclass(frozen=True)
class PreparedFiles:
    """A prepared run's control files (runner/prepare.py): its runtime manifest, the marker
    that aborts it before its go, its status until the go, and the file the go is given in. Its
    submission record, on cluster targets, lies beside its own stop marker."""

    runtime_manifest: str
    stop_marker: str
    status_file: str
    go_file: str

    @property
    def submission_record(self) -> str:
        return submission_record_beside(self.stop_marker)


def submission_record_beside(stop_marker: str) -> str:
    """`_control/v<N>.submission.json`, found from the version's stop marker."""
    return stop_marker.removesuffix(".stop") + ".submission.json"


#: The folder under a checkpoint root that holds every job's status beacons, one file per
#: version: one listing of it reaches every job on that root. A job's name never starts with
#: '_' and holds no '.' (read/schemas/job.schema.json), so the folder is no job's and
#: `<name>.v<N>.json` names one job's version only.
BEACONS = "_status"
#: A beacon's long-batch field counts whole minutes, from a micro-batch's first minute on.
LONG_BATCH_SECONDS = 60
_BEACON = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_-]*)\.v(?P<version>\d+)\.(json|beat)$")
#: Storages whose listing gives a token of each file's content (S3's ETag) that a rewrite of the
#: same bytes keeps: there a beacon is its own heartbeat, and a second key per job would double
#: the listing's requests. Elsewhere (a local folder, HDFS) a listing's tokens are a file's size
#: and modification time, which every write moves: the heartbeat is a file of its own.
_CONTENT_TOKENED = ("s3://", "s3a://")  # stores/s3uri.py::S3_SCHEMES


def beacons_folder(checkpoint_root: str) -> str:
    return f"{checkpoint_root.rstrip('/')}/{BEACONS}"


def beacon_location(checkpoint_root: str, name: str, version: int) -> str:
    """Where the runs of version `version` of job `name` keep their status beacon: run id,
    state, error, Spark's version and, once a micro-batch has run for a minute, for how many
    whole minutes (runner/status.py). Its content changes only when one of those does. Where
    the runner keeps a heartbeat file beside it (`beat_location`), it writes the beacon only
    then; elsewhere (S3, and runs of an earlier release) it rewrites it unchanged every
    HEARTBEAT_SECONDS, so its modification time is the heartbeat a listing shows."""
    return f"{beacons_folder(checkpoint_root)}/{name}.v{version}.json"


def beat_location(checkpoint_root: str, name: str, version: int) -> str:
    """The beacon's heartbeat: an empty file the run rewrites every HEARTBEAT_SECONDS while its
    query runs, so that the beacon itself is written only when what it says changes, and a
    listing of a local folder or HDFS (whose content tokens every write moves) shows an
    unchanged beacon unchanged. Its modification time in the listing is the heartbeat."""
    return f"{beacons_folder(checkpoint_root)}/{name}.v{version}.beat"


def parse_beacon_name(file_name: str) -> tuple[str, int] | None:
    """(job name, version) of a beacon's file name (or its heartbeat's), or None for any other
    file."""
    match = _BEACON.match(file_name)
    return (match["name"], int(match["version"])) if match else None


#: Runner states that say a run completed a trigger.
HEALTHY_STATES = ("active", "finished")


def run_status(text: str | None, run_id: str | None) -> dict | None:
    """The runner's status document of run `run_id`, or None."""
    if not text:
        return None
    try:
        status = json.loads(text)
    except ValueError:
        return None
    return status if isinstance(status, dict) and status.get("run-id") == run_id else None
