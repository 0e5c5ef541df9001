"""What a cache folder someone else could write (a CI cache restored from storage other
workflows write) can do to a command: with the plan key set, nothing but cost a read again;
without it, a file broken in any way is ignored, never a traceback. (A hostile review of the
signed caches, issue 57's tenth part.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.read.test_load_cache import cache_file, load, project, shape

PLAN_KEY = "k3y-" * 16


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


# -- 1. a non-ASCII character where the signature is: TypeError out of hmac.compare_digest -----


def test_a_cache_line_with_non_ascii_where_its_signature_is_is_read_again_not_a_traceback(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read/load_cache.py `unsigned`: hmac.compare_digest(str, str) raises TypeError for a
    non-ASCII str; from_bytes does not catch it, nor does the CLI boundary (plan/deploy)."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    expected, _ = load(state, paths, tables)
    text = cache_file(state).read_text()
    assert '"key":' in text.splitlines()[0]
    cache_file(state).write_text(text + "\u00e9" * 70 + "\n")  # someone with the cache folder
    jobs, _ = load(state, paths, tables)  # was a TypeError
    assert shape(jobs) == shape(expected)


def test_a_fingerprints_file_with_non_ascii_is_ignored_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """act/input_caches.py `fingerprints_at` catches OSError, ValueError, AttributeError only."""
    from flink_sql_runner.act.input_caches import fingerprints_at

    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    kept = tmp_path / "fingerprints.json"
    kept.write_text("\u00e9" * 70 + "{}")
    with fingerprints_at(kept, None):  # was a TypeError
        pass


# -- 2. the schema probe's cache (cache/schemas/<key>.json) beside the signed files: unsigned ---


DOC = {
    "sql": "SELECT id FROM src",
    "target-table": "out",
    "source-tables": ["src"],
    "tables": {
        "src": {"format": "parquet"},
        "out": {"format": "parquet", "options": {"path": "/x"}},
    },
}


def _ask(asked: list[Any]) -> Any:
    def ask(request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        asked.append(request)
        answers = {
            kind: {e["key"]: {"fields": [["id", "bigint", True]]} for e in entries}
            for kind, entries in request.items()
        }
        return answers, None

    return ask


def _forge(tmp_path: Path, answer: str) -> tuple[Path, list[Any]]:
    from flink_sql_runner.gather.schemas import _Probe

    folder = tmp_path / "cache" / "schemas"  # Deployment.schema_cache: the same CI cache folder
    asked: list[Any] = []
    probe = _Probe(folder, _ask(asked))
    (folder).mkdir(parents=True)
    (folder / f"{probe._query_key('job', DOC)}.json").write_text(answer)
    return folder, asked


def test_with_the_plan_key_a_forged_schema_answer_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gather/schemas.py `_Probe._cached`: the answer a sink's schema contract (and, for kind
    `state`, whether a new version continues from the old checkpoint) is decided from is read
    signed where the load cache is, or asked again."""
    from flink_sql_runner.gather.schemas import _Probe

    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    forged = {"fields": [["id", "string", True], ["planted", "int", True]]}
    folder, asked = _forge(tmp_path, json.dumps(forged))
    probe = _Probe(folder, _ask(asked))
    probe.want_job(DOC)
    probe.run()
    assert probe.job(DOC).fields == (["id", "bigint", True],)  # not the forged one


def test_a_schema_answer_of_another_shape_is_not_a_traceback(tmp_path: Path) -> None:
    from flink_sql_runner.gather.schemas import _Probe

    folder, asked = _forge(tmp_path, json.dumps({"fields": 5}))
    probe = _Probe(folder, _ask(asked))
    probe.want_job(DOC)
    probe.run()
    probe.job(DOC)  # TypeError: 'int' object is not iterable (Known.from_dict)


# -- 6. status.json (left unsigned): a deeply nested document escapes StatusReads.load -------


def test_a_deeply_nested_status_cache_is_ignored_not_a_traceback(tmp_path: Path) -> None:
    from flink_sql_runner.watch.status_reads import StatusReads

    kept = tmp_path / "status.json"
    kept.write_text("[" * 100_000 + "]" * 100_000)
    StatusReads.load(kept, "store")  # was a RecursionError
