"""Both cores for a cold read (read/forked_read.py): a forked child reads the tail of the job
files into the load cache while the command reads the head. Whatever the child does (its work
taken, or it hangs, fails or sends what it should not), the command's jobs, problems and
warnings are those one process gives, in the same order."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.errors import InvalidInput
from flink_sql_runner.read import forked_read
from flink_sql_runner.read import manifest as manifest_module
from flink_sql_runner.read.load_cache import LoadCache
from tests.read.test_load_cache import load, project, shape

JOBS = 24


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Path], list[Path]]:
    """The examples, and JOBS more jobs each writing a table of its own: one with a warning
    (an unknown Spark property) at each end of the list."""
    paths, tables = project(tmp_path)
    sinks = [
        {"name": f"tick_copy_{n:02d}", "format": "parquet",
         "options": {"path": f"{{state_dir}}/output/tick_copy_{n:02d}"}}
        for n in range(JOBS)
    ]  # fmt: skip
    (tables[0] / "copies.yaml").write_text(yaml.safe_dump({"tables": sinks}))
    folder = paths[0] / "copies"
    folder.mkdir()
    for n in range(JOBS):
        job: dict[str, Any] = {
            "name": f"tick-copy-{n:02d}",
            "target-table": f"tick_copy_{n:02d}",
            "sql": f"SELECT value, timestamp AS tick_time FROM ticks WHERE value > {n}",
        }
        if n in (0, JOBS - 1):
            job["sparkProperties"] = {"taskmanager.memory.process.size": "1g"}
        (folder / f"tick-copy-{n:02d}.yaml").write_text(yaml.safe_dump(job))
    monkeypatch.chdir(tmp_path)
    return paths, tables


class Forks:
    """Lets the read fork from one unknown byte on, and notes each child and what the command
    took of it, by section."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.children: list[int] = []
        self.taken: dict[str, list[int]] = {"jobs": [], "tables": []}
        self.parent = os.getpid()
        monkeypatch.setattr(forked_read, "MIN_BYTES", 1)
        real_fork, real_take = forked_read._fork, forked_read.take

        def fork(*args: Any) -> Any:
            beside = real_fork(*args)
            if beside is not None:
                self.children.append(beside.pid)
            return beside

        def take(beside: Any, *args: Any, **kw: Any) -> int:
            self.taken[beside.section].append(real_take(beside, *args, **kw))
            return self.taken[beside.section][-1]

        monkeypatch.setattr(forked_read, "_fork", fork)
        monkeypatch.setattr(forked_read, "take", take)

    def in_child(self) -> bool:
        return os.getpid() != self.parent

    def all_ended(self) -> bool:
        for pid in self.children:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue  # reaped: gone
            return False
        return True


def one_process(state: Path, paths: list[Path], tables: list[Path], **kw: Any) -> Any:
    found = load(state, paths, tables, cache=False, **kw)
    return shape(found[0]), found[1]


@pytest.mark.parametrize("cache", [False, True])
def test_the_child_reads_the_tail_and_the_command_gives_what_one_process_gives(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: bool
) -> None:
    paths, tables = workspace
    expected = one_process(tmp_path / "state", paths, tables)
    forks = Forks(monkeypatch)
    jobs, warnings = load(tmp_path / "state", paths, tables, cache=cache)
    assert (shape(jobs), warnings) == expected
    assert len(warnings) == 2 and len(jobs) == JOBS + 5
    assert len(forks.children) == 2 and forks.all_ended()
    assert forks.taken["jobs"][0] >= JOBS // 2 - 2, "the child read its share, the command took it"
    assert forks.taken["tables"][0] >= 1, "and the tail of the table files"
    if cache:  # what the child read is kept as what the command read
        again = load(tmp_path / "state", paths, tables)
        assert (shape(again[0]), again[1]) == expected


def test_problems_come_in_the_order_of_the_files_whoever_read_them(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken file and a name defined twice in the child's share, another broken file in
    the command's: the problems are those, in that order, one process gives."""
    paths, tables = workspace
    folder = paths[0] / "copies"
    (folder / "tick-copy-01.yaml").write_text("name: [unclosed\n")
    (folder / "tick-copy-22.yaml").write_text(yaml.safe_dump({"name": "tick-copy-22"}))
    twin = yaml.safe_load((folder / "tick-copy-20.yaml").read_text())
    (folder / "tick-copy-21.yaml").write_text(yaml.safe_dump({**twin, "name": "tick-copy-20"}))
    with pytest.raises(InvalidInput) as alone:
        load(tmp_path / "state", paths, tables, cache=False)
    forks = Forks(monkeypatch)
    with pytest.raises(InvalidInput) as forked:
        load(tmp_path / "state", paths, tables, cache=False)
    assert forked.value.problems == alone.value.problems
    assert [p.file.rsplit("/", 1)[-1] for p in forked.value.problems][:1] == ["tick-copy-01.yaml"]
    assert len(forks.children) == 2 and forks.all_ended()


def test_a_child_that_hangs_is_killed_and_its_share_read_by_the_command(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = workspace
    expected = one_process(tmp_path / "state", paths, tables)
    forks = Forks(monkeypatch)
    real = manifest_module.JobLoader.load_file

    def load_file(self: Any, path: Path, problems: list[Any]) -> Any:
        if forks.in_child():
            time.sleep(60)  # as a lock another thread held at the fork would
        return real(self, path, problems)

    monkeypatch.setattr(manifest_module.JobLoader, "load_file", load_file)
    began = time.monotonic()
    jobs, warnings = load(tmp_path / "state", paths, tables, cache=False)
    assert (shape(jobs), warnings) == expected
    assert forks.taken["jobs"] == [0] and forks.all_ended(), "killed by its pid and reaped"
    assert time.monotonic() - began < 30, "the command did not wait for the child's sleep"


@pytest.mark.parametrize("how", ["fails", "sends entries of other files and broken lines"])
def test_a_child_that_fails_or_sends_what_it_should_not_changes_nothing(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    paths, tables = workspace
    expected = one_process(tmp_path / "state", paths, tables)
    forks = Forks(monkeypatch)
    real = LoadCache.changed_lines

    def changed_lines(self: LoadCache) -> bytes:
        if how == "fails":
            raise RuntimeError("the child fails")
        foreign = str(paths[0] / "queries" / "tick-log.yaml")
        own = str(paths[0] / "copies" / f"tick-copy-{JOBS - 2:02d}.yaml")
        forged = [
            f'["jobs", "{os.path.abspath(foreign)}", {{"file": "x"}}]',
            f'["jobs", "{os.path.abspath(own)}", {{"job": "not a job"}}]',
            '["jobs", "/x", {"cut',
        ]
        return real(self) + b"\n" + "\n".join(forged).encode()

    monkeypatch.setattr(LoadCache, "changed_lines", changed_lines)
    jobs, warnings = load(tmp_path / "state", paths, tables)
    assert (shape(jobs), warnings) == expected
    assert forks.all_ended()
    if how == "fails":
        assert forks.taken == {"jobs": [0], "tables": [0]}
    else:
        assert forks.taken["jobs"][0] > 0
        again = load(tmp_path / "state", paths, tables)
        assert (shape(again[0]), again[1]) == expected


def test_no_child_for_a_few_bytes_or_on_one_cpu(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = workspace
    forks = Forks(monkeypatch)
    monkeypatch.setattr(forked_read, "MIN_BYTES", 10**9)
    load(tmp_path / "a", paths, tables, cache=False)
    assert forks.children == []
    monkeypatch.setattr(forked_read, "MIN_BYTES", 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    load(tmp_path / "b", paths, tables, cache=False)
    assert forks.children == []


def test_the_tail_holds_half_of_the_bytes_not_known(tmp_path: Path) -> None:
    files = []
    for n, size in enumerate([100, 100, 300, 100, 100, 100]):
        files.append(tmp_path / f"{n}.yaml")
        files[-1].write_text("x" * size)
    assert forked_read.split_at(files, lambda source: False) is None  # 800 bytes
    forked_read.MIN_BYTES, kept = 1, forked_read.MIN_BYTES
    try:
        assert forked_read.split_at(files, lambda source: False) == 3
        assert forked_read.split_at(files, lambda source: source.endswith("2.yaml")) == 4
        assert forked_read.split_at(files[:1], lambda source: False) is None
    finally:
        forked_read.MIN_BYTES = kept


def test_tables_declared_twice_across_the_shares_and_broken_table_files_as_in_one_process(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = workspace
    folder = tables[0] / "copies-more"
    folder.mkdir()
    (folder / "a.yaml").write_text(
        yaml.safe_dump({"tables": [{"name": "tick_copy_03", "format": "parquet",
                                    "options": {"path": "/elsewhere"}}]})
    )  # fmt: skip
    (folder / "b.yaml").write_text("tables: [{name: broken, format: 3}]\n")
    with pytest.raises(InvalidInput) as alone:
        load(tmp_path / "state", paths, tables, cache=False)
    forks = Forks(monkeypatch)
    with pytest.raises(InvalidInput) as forked:
        load(tmp_path / "state", paths, tables, cache=False)
    assert forked.value.problems == alone.value.problems
    assert any("tick_copy_03" in p.message for p in forked.value.problems)
    assert forks.taken["tables"] and forks.all_ended()
