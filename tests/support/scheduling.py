"""How the suite spreads over worker processes (`pytest -n 3`, pytest-xdist), measured in
docs/developers/testing.md: whole test files to one worker at a time, the files that share a server
started
once per run (a Kafka broker, a Hadoop minicluster) all to one worker, and the long files first,
so that no worker is left alone with a long one at the end.

xdist's own `--dist loadgroup` would do the grouping from markers, but it does not group on
pytest 9.2 (pytest-dev/pytest-xdist#1386: the node id it rewrites is no longer read), so the
groups are named here by file, and `tests/test_scheduling.py` checks that every test using one
of those servers is in its group's files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import ExitStack

import pytest

#: Files whose tests share one server of the run, by group: all go to one worker.
SERVER_FILES = {
    "kafka": ("tests/kafka/",),
    "hadoop": (
        "tests/yarn/",
        "tests/stores/test_storage_hdfs.py",
        "tests/watch/test_beacon_beats.py",
    ),
}
#: What starts those servers: the session fixtures, and the markers of tests that ask for one
#: with `request.getfixturevalue`.
SERVER_FIXTURES = {"kafka_broker": "kafka", "kafka_spark": "kafka", "hadoop_cluster": "hadoop"}
SERVER_MARKERS = {"kafka": "kafka", "yarn": "hadoop"}
#: Which files begin first, by the markers of their tests: the longest kinds first.
FIRST = ("kafka", "yarn", "e2e", "cluster", "simulation", "spark", "s3")


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its server group's, else its file."""
    path = file_of(nodeid)
    for group, prefixes in SERVER_FILES.items():
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes):
            return f"server:{group}"
    return path


def order(nodeids: Sequence[str], markers: Sequence[set[str]]) -> list[int]:
    """The indexes of the tests in the order they begin: by their file's (or group's) earliest
    kind in FIRST, then as collected; a file's tests stay together."""
    rank: dict[str, int] = {}
    for nodeid, marks in zip(nodeids, markers, strict=True):
        found = min((FIRST.index(m) for m in marks if m in FIRST), default=len(FIRST))
        scope = scope_of(nodeid)
        rank[scope] = min(rank.get(scope, found), found)
    first_seen: dict[str, int] = {}
    for index, nodeid in enumerate(nodeids):
        first_seen.setdefault(scope_of(nodeid), index)
    return sorted(
        range(len(nodeids)),
        key=lambda i: (rank[scope_of(nodeids[i])], first_seen[scope_of(nodeids[i])], i),
    )


#: What each server group started, closed after the group's last test (or at the session's end).
_STARTED: dict[str, list[ExitStack]] = {}


def until_group_ends(group: str) -> ExitStack:
    """A stack for a session fixture of `group` to start its server on: closed after the last
    test of the group's files, so a broker or a minicluster does not hold memory and CPU while
    the rest of the run goes on. Closing is idempotent; the fixture closes it again at its end."""
    stack = ExitStack()
    _STARTED.setdefault(group, []).append(stack)
    return stack


def group_ended(nodeid: str, next_nodeid: str | None) -> None:
    """After a test: if it was its server group's last (the next test is another scope's, or
    none), stop what the group started. A group's tests run one after the other in one process
    (`order` here, and `make_scheduler` under xdist)."""
    scope = scope_of(nodeid)
    if scope.startswith("server:") and (next_nodeid is None or scope_of(next_nodeid) != scope):
        for stack in _STARTED.pop(scope.removeprefix("server:"), []):
            stack.close()


def make_scheduler(config, log):  # noqa: ANN001, ANN201 - xdist's own types
    """xdist's file-by-file scheduling, with each server group's files as one unit."""
    from xdist.scheduler import LoadFileScheduling

    class SharedServers(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False  # the order is `order`'s: long kinds first
    return SharedServers(config, log)


def server_users(items: Sequence[pytest.Item]) -> list[tuple[str, str]]:
    """(node id, server group) of every test that uses a server of the run."""
    return [
        (item.nodeid, group)
        for item in items
        for group in sorted(
            {
                *(SERVER_FIXTURES[f] for f in item.fixturenames if f in SERVER_FIXTURES),
                *(g for m, g in SERVER_MARKERS.items() if item.get_closest_marker(m)),
            }
        )
    ]


def pytest_collection_finish(session: pytest.Session) -> None:
    """As a plugin (`-p tests.support.scheduling`, for tests/test_scheduling.py): the server
    users of a collection, as JSON, into the file `FSR_SERVER_USERS` names."""
    out = os.environ.get("FSR_SERVER_USERS")
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(server_users(session.items), handle)
