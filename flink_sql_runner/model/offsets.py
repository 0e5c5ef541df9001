"""A clean start's Kafka sources that begin where the previous version stopped: which ones, from
which checkpoint (decided in `decide/offsets.py`, read after the stop in `gather/offsets.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CarriedSource:
    """One Kafka source table of the new version and the topics whose offsets it takes."""

    table: str
    topics: tuple[str, ...]


@dataclass(frozen=True)
class OffsetCarry:
    """Which sources of a new version start at the previous version's committed offsets."""

    version: int  # the previous version
    checkpoint: str  # its checkpoint location
    sources: tuple[CarriedSource, ...]
    #: The previous version's sink folder (a file sink), whose log may hold a batch its
    #: checkpoint did not commit; None for other sinks.
    sink_folder: str | None = None
    #: Kafka source tables that start as their table says, each with why.
    not_carried: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        parts = []
        if self.sources:
            names = ", ".join(s.table for s in self.sources)
            parts.append(f"{names} at v{self.version}'s committed offsets")
        parts += [f"{table} {why}" for table, why in self.not_carried]
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from-version": self.version,
            "checkpoint": self.checkpoint,
            "tables": [s.table for s in self.sources],
            "not-carried": {table: why for table, why in self.not_carried},
        }
