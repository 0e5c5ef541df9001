"""The folder store's index (`_index.json`, written by deploys): a plan over unchanged
manifests parses no YAML, and the index is never trusted over a file that changed since, nor
when it is damaged. Counted: the YAML parses, not time."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_sql_runner.model.stored import ABSENT, StoredManifest
from flink_sql_runner.stores import local as local_module
from flink_sql_runner.stores.base import Reads
from flink_sql_runner.stores.local import INDEX_FILE, LocalStore
from tests.support.jobs import manifest


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stored manifests parsed from YAML, by name."""
    real, seen = StoredManifest.from_yaml.__func__, []  # type: ignore[attr-defined]

    def counted(cls: type[StoredManifest], text: str, source: str) -> StoredManifest:
        seen.append(Path(source).stem)
        return real(cls, text, source)

    monkeypatch.setattr(local_module.StoredManifest, "from_yaml", classmethod(counted))
    return seen


def stored(store: LocalStore, count: int) -> list[str]:
    names = [f"job-{i:03d}" for i in range(count)]
    for name in names:
        store.write(manifest(name), ABSENT)
    return names


def read_all(store: LocalStore, extra: tuple[str, ...] = ()) -> Reads:
    snapshot = store.snapshot()
    return store.read_many([*snapshot.names, *extra], 8, snapshot=snapshot)


def test_unchanged_manifests_are_not_parsed_again(tmp_path: Path, parses: list[str]) -> None:
    store = LocalStore(tmp_path / "store")
    names = stored(store, 30)
    assert store.refresh_index()
    assert not store.refresh_index(), "nothing changed since"
    parses.clear()
    reads = read_all(store, extra=("not-stored",))
    assert parses == []
    assert reads.manifests == {**{n: store.read(n).manifest for n in names}, "not-stored": None}
    assert reads.tokens == {**{n: store.read(n).token for n in names}, "not-stored": ABSENT}
    assert "_index" not in store.snapshot().names


def test_a_manifest_changed_since_the_index_is_read_from_its_file(
    tmp_path: Path, parses: list[str]
) -> None:
    store = LocalStore(tmp_path / "store")
    names = stored(store, 5)
    store.refresh_index()
    token = store.read(names[1]).token
    store.write(manifest(names[1], version=2), token)  # by a deploy that did not refresh
    (tmp_path / "store" / f"{names[2]}.yaml").write_text(
        manifest(names[2], description="edited by hand").to_yaml()
    )
    (tmp_path / "store" / f"{names[3]}.yaml").unlink()
    parses.clear()
    reads = read_all(store, extra=(names[3],))
    assert sorted(parses) == [names[1], names[2]]
    assert reads.manifests[names[1]].meta.query_version == 2  # type: ignore[union-attr]
    assert reads.manifests[names[2]].job["description"] == "edited by hand"  # type: ignore[index]
    assert reads.manifests[names[3]] is None and reads.tokens[names[3]] is ABSENT


def test_a_deploy_hands_the_index_what_it_wrote(tmp_path: Path, parses: list[str]) -> None:
    store = LocalStore(tmp_path / "store")
    names = stored(store, 3)
    known = Reads(
        {n: store.read(n).manifest for n in names}, tokens={n: store.read(n).token for n in names}
    )
    parses.clear()
    assert store.refresh_index(known)
    assert parses == [], "what the deploy wrote is not read back"


@pytest.mark.parametrize("body", ["{not json", '{"schema-version": 99, "entries": {}}',
                                  '{"schema-version": 1, "entries": {"job-000": {}}}'])  # fmt: skip
def test_a_damaged_index_is_ignored(tmp_path: Path, parses: list[str], body: str) -> None:
    store = LocalStore(tmp_path / "store")
    names = stored(store, 2)
    (tmp_path / "store" / INDEX_FILE).write_text(body)
    parses.clear()
    reads = read_all(store)
    assert sorted(parses) == names
    assert reads.manifests == {n: store.read(n).manifest for n in names}
    assert store.refresh_index(), "rewritten"
    parses.clear()
    read_all(store)
    assert parses == []
