"""The facts a sink's schema contract is checked on, for one job whose start would change what
it writes: the schema its new run would write, what the sink's files already hold, what the
catalog declares, who reads the sink, and the job's policy. gather/schemas.py reads them before
anything is decided (a Spark analysis of the query, the sink's own metadata), for each version
the job's start could take where its sink depends on it; decide/contracts.py judges them.

A schema is a tuple of fields `{"name", "type", "nullable"}`, the type as Spark's
`simpleString` (runner/schema_rules.py owns the rules on them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Fields = tuple[dict[str, Any], ...]

#: `on-schema-change`, per job or per sink table (the job's wins).
ADDITIVE, FAIL, ALLOW = "additive", "fail", "allow"
POLICIES = (ADDITIVE, FAIL, ALLOW)


@dataclass(frozen=True)
class Known:
    """A schema, or why it is not known (`unknown`), or the analysis's error (`error`: the query
    does not analyse)."""

    fields: Fields | None = None
    unknown: str | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Known:
        fields = doc.get("fields")
        return cls(
            tuple(fields) if fields is not None else None, doc.get("unknown"), doc.get("error")
        )


@dataclass(frozen=True)
class SinkHolds:
    """What the sink's files were written with, oldest first, each with where it was read; or
    why that is not known. Empty: nothing written yet."""

    history: tuple[Fields, ...] = ()
    sources: tuple[str, ...] = ()
    unknown: str | None = None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> SinkHolds:
        if "error" in doc:
            return cls(unknown=str(doc["error"]))
        entries = doc.get("history") or []
        return cls(
            tuple(tuple(e["fields"]) for e in entries),
            tuple(str(e.get("from", "")) for e in entries),
            doc.get("unknown"),
        )


@dataclass(frozen=True)
class Reader:
    """A job of the same deploy that reads the sink, as the table `table` it declares with the
    schema `declared` (None: it declares none)."""

    job: str
    table: str
    declared: Known | None = None


@dataclass(frozen=True)
class ContractFacts:
    sink: str  # the sink as people know it: a path, a catalog table, a topic
    format: str | None
    policy: str
    policy_from: str  # "job" or "table <name>" or "default"
    output: Known
    holds: SinkHolds = field(default_factory=SinkHolds)
    #: The sink table's own declared schema, parsed by Spark.
    declared: Known | None = None
    readers: tuple[Reader, ...] = ()
    #: Where the previous version wrote, when the new version writes elsewhere (a path with
    #: `{query_version}`): its readers must move.
    moved_from: str | None = None
    #: The Spark version the analysis ran on.
    spark: str | None = None
    #: The version of the start these facts are of, when where its sink is depends on it
    #: (`{query_version}` in the sink's path: a restart and a new version write two places);
    #: None: a start of any version writes this sink.
    version: int | None = None
