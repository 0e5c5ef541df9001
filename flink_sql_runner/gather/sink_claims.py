"""What a file sink's claims say of the schemas written to it, oldest first: its schema history
as the job page shows it.

Each checkpoint that writes a file sink claims it (runner/file_sink.py: `<sink>/CLAIMS_FOLDER/
<order>-<first batch id>.json`, with the job, its query version, the run, when, and the schema
it writes). One listing and a GET per claim; read only. Claims written before schemas were
recorded have no schema: that is said, not guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flink_sql_runner._runner.sink_walk import CLAIMS_FOLDER
from flink_sql_runner.errors import FsrError
from flink_sql_runner.stores.storage import Storage


@dataclass(frozen=True)
class Claim:
    order: int
    first_batch: int
    job: str
    version: int | None
    run_id: str
    claimed: str
    #: The fields written ({"name", "type", "nullable"}); None: the claim recorded none.
    schema: tuple[dict[str, Any], ...] | None


@dataclass(frozen=True)
class SinkClaims:
    path: str
    claims: tuple[Claim, ...] = ()
    #: Why they could not be read (None: read).
    problem: str | None = None
    #: Older claims listed and not read (`newest`).
    older: int = 0


def _number(text: str) -> bool:
    """ASCII digits only (`str.isdigit` also takes `²`, which `int` refuses)."""
    return text.isascii() and text.isdecimal()


def read_sink_claims(storage: Storage, path: str, newest: int | None = None) -> SinkClaims:
    """The claims of the sink at `path`, oldest first; with `newest`, only the newest that
    many are read (their count beyond is `older`)."""
    folder = f"{path.rstrip('/')}/{CLAIMS_FOLDER}"
    try:
        names = storage.file_names(folder)
    except FsrError as exc:
        return SinkClaims(path, problem=str(exc).splitlines()[0])
    named = []
    for name in names:
        order, _, rest = name.partition("-")
        first = rest.removesuffix(".json")
        if _number(order) and _number(first) and name.endswith(".json"):
            named.append((int(order), int(first), name))
    named.sort()
    older = max(0, len(named) - newest) if newest is not None else 0
    found = []
    for order_number, first_batch, name in named[older:]:
        order, first = str(order_number), str(first_batch)
        try:
            body = json.loads(storage.read_text(f"{folder}/{name}") or "{}")
        except (FsrError, ValueError) as exc:
            return SinkClaims(path, tuple(found), f"{folder}/{name}: {str(exc).splitlines()[0]}")
        except RecursionError:
            return SinkClaims(path, tuple(found), f"{folder}/{name}: nested too deep")
        if not isinstance(body, dict):
            continue
        schema = body.get("schema")
        fields = (
            tuple(f for f in schema if isinstance(f, dict)) if isinstance(schema, list) else None
        )
        version = body.get("query-version")
        found.append(
            Claim(
                int(order),
                int(first),
                str(body.get("job", "")),
                version if isinstance(version, int) else None,
                str(body.get("run-id", "")),
                str(body.get("claimed", "")),
                fields,
            )
        )
    return SinkClaims(path, tuple(found), older=older)
