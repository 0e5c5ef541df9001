"""`hdfs://` files through WebHDFS, the NameNode's REST API, with the standard library only.

The NameNode's web address comes from the Hadoop configuration spark-submit reads too
(YARN_CONF_DIR / HADOOP_CONF_DIR, `stores/hadoop_conf.py`): `dfs.namenode.http-address` (or its
https twin under `dfs.http.policy: HTTPS_ONLY`), per NameNode of an HA nameservice
(`dfs.ha.namenodes.<ns>`), else the URI's host on port 9870. An `hdfs:///path` URI is on
`fs.defaultFS`. Requests carry `user.name` (simple authentication): HADOOP_USER_NAME, else the
login name; a Kerberos cluster's WebHDFS is not supported.

A write is atomic for readers: the bytes go to a temporary file beside the target, which is then
renamed over it (RENAME with `renameoptions=OVERWRITE`, one NameNode operation). Any error or
timeout is a StorageError: it says nothing about whether the file exists.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.stores import hadoop_conf

SCHEME = "hdfs://"
DEFAULT_HTTP_PORT = 9870
DEFAULT_HTTPS_PORT = 9871
TIMEOUT = 30.0


def is_hdfs_uri(uri: str) -> bool:
    return uri.startswith(SCHEME)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    location: str | None = None  # a redirect's Location

    def doc(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8")) if self.body.strip() else None
        except ValueError:
            return None

    def remote(self) -> tuple[str, str]:
        """The NameNode's RemoteException: (exception, first line of its message)."""
        doc = self.doc()
        remote = doc.get("RemoteException") if isinstance(doc, dict) else None
        if not isinstance(remote, dict):
            text = self.body.decode("utf-8", errors="replace").strip()
            return "", text.splitlines()[0] if text else f"HTTP {self.status}"
        message = str(remote.get("message") or "").strip()
        return str(remote.get("exception") or ""), message.splitlines()[0] if message else ""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class Unanswered(Exception):
    """No HTTP answer (refused, timed out, reset, not HTTP)."""


def request(method: str, url: str, data: bytes | None = None, timeout: float = TIMEOUT) -> Answer:
    """One request, redirects not followed (WebHDFS sends reads and writes to a datanode with
    307: the caller follows them, with the body, where urllib would drop it)."""
    headers = {"Content-Type": "application/octet-stream"} if data is not None else {}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with _OPENER.open(req, timeout=timeout) as response:
            return Answer(response.status, response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return Answer(exc.code, exc.read(), exc.headers.get("Location"))
    except urllib.error.URLError as exc:
        raise Unanswered(str(exc.reason)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise Unanswered(str(exc) or type(exc).__name__) from None


def namenode_urls(uri: str, env: dict[str, str] | None = None) -> list[str]:
    """The WebHDFS base URLs (`http://host:port/webhdfs/v1`) to try for `uri`, in order."""
    conf = hadoop_conf.merged(("core-site.xml", "hdfs-site.xml"), env)
    authority = urllib.parse.urlsplit(uri).netloc
    if not authority:
        authority = urllib.parse.urlsplit(conf.get("fs.defaultFS", "")).netloc
    if not authority:
        raise ValueError(
            f"{uri}: no NameNode named; write hdfs://NAMENODE:PORT/path, or set fs.defaultFS "
            f"in core-site.xml under HADOOP_CONF_DIR"
        )
    https = conf.get("dfs.http.policy") == "HTTPS_ONLY"
    key = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    scheme = "https" if https else "http"
    host = authority.rsplit(":", 1)[0] if ":" in authority else authority
    nameservice = authority if ":" not in authority else None
    addresses = []
    if nameservice:
        for node in conf.get(f"dfs.ha.namenodes.{nameservice}", "").split(","):
            if node.strip() and conf.get(f"{key}.{nameservice}.{node.strip()}"):
                addresses.append(conf[f"{key}.{nameservice}.{node.strip()}"])
        if not addresses and conf.get(f"{key}.{nameservice}"):
            addresses.append(conf[f"{key}.{nameservice}"])
    if not addresses and conf.get(key):
        addresses.append(conf[key])
    if not addresses:
        addresses.append(f"{host}:{DEFAULT_HTTPS_PORT if https else DEFAULT_HTTP_PORT}")
    # A NameNode listening on every interface is reached at the URI's host.
    addresses = [a.replace("0.0.0.0:", f"{host}:", 1) for a in addresses]
    return [f"{scheme}://{address}/webhdfs/v1" for address in addresses]


def hdfs_path(uri: str) -> str:
    """`hdfs://nn:8020/a/b/` -> `/a/b`."""
    path = urllib.parse.urlsplit(uri).path.rstrip("/")
    return path or "/"


class WebHdfs:
    """The files of one HDFS (one `hdfs://authority`), each call one or two HTTP requests."""

    def __init__(self, bases: list[str], user: str, timeout: float = TIMEOUT):
        self.bases = bases
        self.user = user
        self.timeout = timeout

    @classmethod
    def for_uri(
        cls, uri: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT
    ) -> WebHdfs:
        return cls(namenode_urls(uri, env), hadoop_conf.hadoop_user(env), timeout)

    def url(self, base: str, path: str, op: str, **params: str) -> str:
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        return f"{base}{urllib.parse.quote(path)}?{query}"

    def call(self, method: str, path: str, op: str, **params: str) -> Answer:
        """One NameNode operation, on the first NameNode that answers as the active one."""
        failures = []
        for base in self.bases:
            try:
                answer = request(method, self.url(base, path, op, **params), None, self.timeout)
            except Unanswered as exc:
                failures.append(f"{base}: {exc}")
                continue
            if answer.remote()[0] == "StandbyException":
                failures.append(f"{base}: standby")
                continue
            return answer
        raise Unanswered("; ".join(failures))

    def follow(self, answer: Answer, method: str, data: bytes | None = None) -> Answer:
        """The datanode's half of a read or a write the NameNode redirected."""
        if answer.status != 307 or not answer.location:
            return answer
        return request(method, answer.location, data, self.timeout)

    def read(self, path: str) -> Answer:
        return self.follow(self.call("GET", path, "OPEN"), "GET")

    def create(self, path: str, data: bytes, permission: str) -> Answer:
        first = self.call("PUT", path, "CREATE", overwrite="true", permission=permission)
        return self.follow(first, "PUT", data)

    def temp_name(self, path: str) -> str:
        folder, _, name = path.rpartition("/")
        return f"{folder}/.{name}.{uuid.uuid4().hex[:12]}.tmp"
