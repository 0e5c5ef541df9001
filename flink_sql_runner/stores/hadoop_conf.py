"""Hadoop's site files (core-site.xml, hdfs-site.xml, yarn-site.xml) as the deployer finds them:
in YARN_CONF_DIR or HADOOP_CONF_DIR, the folders spark-submit reads too. Used by the YARN target
(the ResourceManager's address) and by the checkpoint storage (the NameNode's web address, and
the default file system a path without a scheme is on), and by nothing else: the deployer never
needs Hadoop's own client.
"""

from __future__ import annotations

import getpass
import os
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

CONF_DIR_VARIABLES = ("YARN_CONF_DIR", "HADOOP_CONF_DIR")
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def conf_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """The configuration folders named in the environment, in spark-submit's order."""
    env = dict(os.environ) if env is None else env
    return [Path(env[name]) for name in CONF_DIR_VARIABLES if env.get(name)]


def site_properties(path: Path) -> dict[str, str]:
    """One site file's properties, `${other.key}` expanded; {} when it is missing or not XML."""
    try:
        root = ElementTree.parse(path).getroot()  # noqa: S314 - the user's own Hadoop config
    except (OSError, ElementTree.ParseError):
        return {}
    conf = {
        (prop.findtext("name") or "").strip(): (prop.findtext("value") or "").strip()
        for prop in root.iter("property")
    }
    return {key: _expand(value, conf) for key, value in conf.items()}


def merged(files: tuple[str, ...], env: dict[str, str] | None = None) -> dict[str, str]:
    """The properties of `files` (e.g. core-site.xml, hdfs-site.xml) from the first folder that
    has any of them; a later file's value wins, as in Hadoop's own Configuration."""
    for folder in conf_dirs(env):
        found: dict[str, str] = {}
        for name in files:
            found.update(site_properties(folder / name))
        if found:
            return found
    return {}


def default_fs(env: dict[str, str] | None = None) -> str:
    """Hadoop's default file system, where Spark puts a path without a scheme: `fs.defaultFS`
    (or its old name `fs.default.name`) of core-site.xml, else the local one, `file:///`."""
    conf = merged(("core-site.xml",), env)
    return conf.get("fs.defaultFS") or conf.get("fs.default.name") or "file:///"


def hadoop_user(env: dict[str, str] | None = None) -> str:
    """The `user.name` of Hadoop's simple authentication: HADOOP_USER_NAME, else the login."""
    env = dict(os.environ) if env is None else env
    return env.get("HADOOP_USER_NAME") or getpass.getuser()


def _expand(value: str, conf: dict[str, str], depth: int = 5) -> str:
    """`${other.key}` references, as Hadoop's Configuration expands them."""
    for _ in range(depth):
        value = _VARIABLE.sub(lambda m: conf.get(m[1], m[0]), value)
    return value
