"""`flink-sql-runner migrate`: a store of the original tool's manifests, in this product's format.

Every manifest is read and converted (convert.py) before anything is written; a problem in any
of them stops the whole migration (exit 2, nothing written). A manifest of this product's format
is never overwritten: in the source it is left alone, at the destination it stops the
migration, unless it is this very conversion written by an earlier run (running the migration
again changes nothing). Writes go through the store (one PutObject, or a rename, each) under
its lock, so a deploy never sees half of it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.migrate.convert import convert, is_migrated, same_migration
from flink_sql_runner.model.stored import ABSENT, STORED_SCHEMA_VERSION, StoredManifest, Token
from flink_sql_runner.read.original import is_original
from flink_sql_runner.read.yamlio import YamlProblem, parse_yaml
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.lock import locked, telling_lock

CONVERT = "convert"
KEEP = "keep"


@dataclass(frozen=True)
class Step:
    """What happens to one stored manifest."""

    name: str
    action: str  # CONVERT or KEEP
    source: str
    destination: str
    why: str = ""  # for KEEP
    manifest: StoredManifest | None = None  # for CONVERT
    carried: tuple[str, ...] = ()  # the original's fields kept under `migrated-from`
    token: Token = ABSENT  # for CONVERT: what the destination held when read (see `write`)


@dataclass
class Migration:
    source: str
    destination: str
    steps: list[Step] = field(default_factory=list)

    @property
    def to_write(self) -> list[Step]:
        return [s for s in self.steps if s.action == CONVERT]


def where(store: ManifestStore, name: str) -> str:
    """The manifest's address, for messages."""
    if isinstance(store, LocalStore):
        return str(store.folder / f"{name}.yaml")
    return f"{store.location}{name}.yaml"


def _read(store: ManifestStore, name: str, problems: list[Problem]) -> tuple[bool, object, Token]:
    """(found, document, token) of one stored manifest; a problem when it is not YAML."""
    text, token = store.read_text(name)
    if text is None:
        return False, None, token
    try:
        return True, parse_yaml(text, where(store, name)), token
    except YamlProblem as exc:
        problems.append(exc.problem)
        return True, None, token


def plan_migration(source: ManifestStore, destination: ManifestStore) -> Migration:
    """What the migration does with every manifest of `source`; InvalidInput with every
    problem of every manifest when any has one. Reads only."""
    migration = Migration(source.location, destination.location)
    in_place = source.location == destination.location
    names = source.list_names()
    if not names:
        raise InvalidInput([Problem(source.location, "", "holds no manifests (<name>.yaml)")])
    at_destination = set(names) if in_place else set(destination.list_names())
    problems: list[Problem] = []
    for name in names:
        origin = where(source, name)
        found, doc, token = _read(source, name, problems)
        if not found or doc is None:
            continue
        if not is_original(doc):
            if isinstance(doc, dict) and doc.get("schema-version") == STORED_SCHEMA_VERSION:
                why = "converted earlier" if is_migrated(doc) else "in this product's format"
                migration.steps.append(Step(name, KEEP, origin, origin, f"{why}: left alone"))
            else:
                problems.append(
                    Problem(
                        origin,
                        "(document)",
                        "neither the original tool's format (`meta`, no `schema-version`) nor "
                        f"this product's (schema-version {STORED_SCHEMA_VERSION})",
                    )
                )
            continue
        converted, found_problems = convert(doc, name, origin)
        problems += found_problems
        if converted is None:
            continue
        target = where(destination, name)
        if not in_place and name in at_destination:
            _, existing, _ = _read(destination, name, problems)
            if same_migration(existing, converted.manifest):
                why = "converted earlier: left alone"
                migration.steps.append(Step(name, KEEP, origin, target, why))
            elif is_original(existing):
                problems.append(
                    Problem(
                        target,
                        "",
                        "holds a manifest of the original tool's format: convert that store "
                        "in place, or choose another destination",
                    )
                )
            elif existing is not None:
                problems.append(
                    Problem(
                        target,
                        "",
                        "holds a manifest of this product's format; the migration never "
                        "overwrites one",
                    )
                )
            continue
        migration.steps.append(
            Step(
                name,
                CONVERT,
                origin,
                target,
                manifest=converted.manifest,
                carried=converted.carried,
                # In place, over the very original read; elsewhere, where there was none.
                token=token if in_place else ABSENT,
            )
        )
    if problems:
        raise InvalidInput(problems)
    return migration


def migrate(
    source: ManifestStore, destination: ManifestStore, dry_run: bool, lock_timeout: float
) -> Migration:
    """Plan the migration; unless `dry_run`, write it under the destination's lock (planned
    again there, so nothing written meanwhile is overwritten)."""
    if dry_run:
        return plan_migration(source, destination)
    if isinstance(destination, LocalStore):
        Path(destination.folder).mkdir(parents=True, exist_ok=True)
    lock = telling_lock(destination.lock_backend(), "migrate", say_on_stderr)
    with locked(lock, lock_timeout):
        migration = plan_migration(source, destination)
        for step in migration.to_write:
            assert step.manifest is not None
            destination.write(step.manifest, step.token)
    return migration


def say_on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def migration_lines(migration: Migration, dry_run: bool) -> list[str]:
    """One line per manifest, then a summary."""
    lines = []
    verb = "would convert" if dry_run else "converted"
    for step in migration.steps:
        if step.action == KEEP:
            lines.append(f"{step.name}: {step.why}")
            continue
        assert step.manifest is not None
        meta = step.manifest.meta
        version = meta.query_version
        kept = f"; kept under migrated-from: {', '.join(step.carried)}" if step.carried else ""
        lines.append(
            f"{step.name}: v{version} (query-id {meta.query_id}, created "
            f"{meta.query_create_timestamp}) {verb} -> {step.destination}; the next deploy "
            f"starts it clean at v{version + 1}{kept}"
        )
    converted = len(migration.to_write)
    left = len(migration.steps) - converted
    done = "would be converted" if dry_run else "converted"
    summary = f"Migration: {converted} manifest{'s' if converted != 1 else ''} {done}"
    summary += f", {left} left alone" if left else ""
    summary += " (dry run: nothing was written)." if dry_run else "."
    return [*lines, "", summary]
