"""Paths in tables and jobs, resolved once, when jobs are loaded, so that a run started anywhere,
by anyone (`watch` from a service's folder, another CI step), reads and writes the same data.

- The values that are paths: a job's `checkpoint-root`; the Spark properties that name files
  (`spark.jars`, `spark.files`, `spark.pyFiles`, `spark.archives`, each a comma-separated list,
  and `spark.sql.warehouse.dir`); the options `path` (SQL's `LOCATION`), `basePath` and
  `sourceArchiveDir` of a table whose format keeps its data in files (Spark's file formats,
  `delta`, `hudi`, `binaryFile`, `xml`). Iceberg's `path` may be a table's name and another data
  source's may mean anything: left as written.
- A relative one is joined to the base, the folder the command runs in (where the README's
  `examples/data/orders` is), and normalised. A URI with a scheme (`s3a://`, `hdfs://`,
  `file:/`) and a path that starts with an environment variable (`${DATA}/orders`) are left
  as written.
- A source's path that does not exist is a problem of the file that declares it (`sources`),
  before anything starts; a glob's folder must exist (the part before its first wildcard). A
  sink's folder need not: Spark's file sink creates it.

Stored manifests written before kept relative paths; `resolve_paths` gives them the meaning
they have against a base, so that a deploy from the same folder sees no change.
"""

from __future__ import annotations

import copy
import os
import posixpath
import re
from enum import Enum
from typing import Any

from flink_sql_runner.read.formats import file_format

#: Formats whose `path` is a file or folder, beside the file formats.
FOLDER_FORMATS = frozenset({"delta", "hudi", "binaryFile", "xml"})
#: Options of such a table that hold a path (lower-case: Spark matches them without case).
PATH_OPTIONS = ("path", "basepath", "sourcearchivedir")
#: Spark properties that hold a path, or (True) a comma-separated list of them.
PATH_PROPERTIES = {
    "spark.jars": True,
    "spark.files": True,
    "spark.pyFiles": True,
    "spark.archives": True,
    "spark.sql.warehouse.dir": False,
}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
#: Where a path stops being a plain path: Hadoop's glob characters, placeholders, variables.
_SPECIAL = re.compile(r"[*?\[\]{}\\$]")


class SourceCheck(Enum):
    """Which sources' paths a command makes sure exist."""

    #: None: `status` and `lineage` show what is written.
    NONE = "none"
    #: Those written relative, which resolve on this machine: `validate`, and a deploy to a
    #: cluster (whose drivers may see a shared folder that this machine does not).
    RELATIVE = "relative"
    #: Every local one (relative, absolute, `file:`): a deploy or plan on the local target.
    LOCAL = "local"


def holds_paths(definition: dict[str, Any]) -> bool:
    """Whether a table definition's path options are paths (its data is in files)."""
    fmt = definition.get("format")
    return "table" not in definition and (bool(file_format(fmt)) or fmt in FOLDER_FORMATS)


def is_relative(value: object) -> bool:
    """A path written relative: no scheme, not absolute, not from an environment variable."""
    if not isinstance(value, str) or not value or value.startswith(("/", "$")):
        return False
    return not _SCHEME.match(value)


def absolute(path: str, base: str) -> str:
    return posixpath.normpath(posixpath.join(base, path))


def resolve_paths(
    spec: dict[str, Any], tables: dict[str, Any], base: str
) -> tuple[dict[str, Any], dict[str, Any], tuple[tuple[str, str], ...]]:
    """The job's fields and tables with every relative path made absolute against `base`, and
    which were relative (field, as written), by field. The arguments are not changed."""
    relative: list[tuple[str, str]] = []
    spec = dict(spec)
    root = spec.get("checkpoint-root")
    if is_relative(root):
        relative.append(("checkpoint-root", str(root)))
        spec["checkpoint-root"] = absolute(str(root), base)
    properties = spec.get("sparkProperties")
    if isinstance(properties, dict) and any(key in properties for key in PATH_PROPERTIES):
        properties = dict(properties)
        for key, many in PATH_PROPERTIES.items():
            value = properties.get(key)
            if not isinstance(value, str):
                continue
            items = value.split(",") if many else [value]
            written = [item.strip() for item in items if is_relative(item.strip())]
            if written:
                relative.extend((f"sparkProperties.{key}", item) for item in written)
                properties[key] = ",".join(_resolved_item(item, base) for item in items)
        spec["sparkProperties"] = properties
    resolved = {}
    for name, definition in tables.items():
        options = definition.get("options") if isinstance(definition, dict) else None
        if not isinstance(options, dict) or not holds_paths(definition):
            resolved[name] = definition
            continue
        found = [
            (key, value)
            for key, value in options.items()
            if str(key).lower() in PATH_OPTIONS and is_relative(value)
        ]
        if found:  # copied only when changed, as the tables without paths are never copied
            definition = copy.deepcopy(definition)
            for key, value in found:
                relative.append((f"tables.{name}.options.{key}", str(value)))
                definition["options"][key] = absolute(str(value), base)
        resolved[name] = definition
    return spec, resolved, tuple(sorted(relative))


def _resolved_item(item: str, base: str) -> str:
    """One item of a list of files, made absolute if relative; an archive's `#alias` kept."""
    text = item.strip()
    if not is_relative(text):
        return item
    path, hash_, alias = text.partition("#")
    return absolute(path, base) + hash_ + alias


def local_path(value: object) -> str | None:
    """The local file or folder a path value names: itself without a scheme, the path of a
    `file:` URI; None for any other scheme (what is remote is not looked at)."""
    if not isinstance(value, str) or not value or value.startswith("$"):
        return None
    if value.startswith("file://"):
        return value[len("file://") :] or "/"
    if value.startswith("file:"):
        return value[len("file:") :]
    return None if _SCHEME.match(value) else value


def must_exist(path: str) -> str:
    """The part of a local path that must exist: all of a plain path; of a glob (or a path with
    a placeholder), the folder before its first wildcard."""
    special = _SPECIAL.search(path)
    if special is None:
        return path
    return path[: special.start()].rpartition("/")[0] or "/"


def missing(path: str) -> bool:
    """Whether what a local source path names is not there (for a glob, its folder)."""
    return not os.path.exists(must_exist(path))
