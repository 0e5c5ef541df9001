"""Where the suite's processes keep their bytecode (tests/support/bytecode.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import bytecode


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's own settings restored after the test."""
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_a_forbidding_environment_gets_the_tests_cache_as_its_prefix(
    interpreter: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FSR_TEST_CACHE", str(tmp_path / "cache"))
    left = tmp_path / "cache" / "pycache" / "gone" / "module.cpython-311.pyc"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"")  # a module since deleted, which could come back with other code
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    prefix = bytecode.keep(environ)
    assert prefix == str(tmp_path / "cache" / "pycache")
    assert not left.exists()
    assert environ == {"PATH": "/bin", "PYTHONPYCACHEPREFIX": prefix}
    assert sys.pycache_prefix == prefix and sys.dont_write_bytecode is False


def test_an_environment_that_writes_bytecode_or_names_its_prefix_keeps_it(
    interpreter: None,
) -> None:
    writes = {"PATH": "/bin"}
    assert bytecode.keep(writes) is None
    assert writes == {"PATH": "/bin"} and sys.pycache_prefix is None
    own = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/somewhere/pyc"}
    assert bytecode.keep(own) == "/somewhere/pyc"
    assert own == {"PYTHONPYCACHEPREFIX": "/somewhere/pyc"}


def test_a_child_of_the_run_writes_its_bytecode_under_the_prefix_not_beside_the_source(
    interpreter: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "module_here.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("FSR_TEST_CACHE", str(tmp_path / "cache"))
    environ = {"PYTHONDONTWRITEBYTECODE": "1"}
    bytecode.keep(environ)
    subprocess.run(
        [sys.executable, "-c", "import module_here"], cwd=source, env=environ, check=True
    )
    assert not (source / "__pycache__").exists()
    assert list((tmp_path / "cache" / "pycache").rglob("module_here.*.pyc"))


def test_the_prune_removes_what_no_source_compiles_to_and_keeps_the_rest(tmp_path: Path) -> None:
    prefix = tmp_path / "pyc"
    live = tmp_path / "src" / "live.py"
    live.parent.mkdir()
    live.write_text("")
    mirror = prefix / tmp_path.relative_to("/") / "src"
    gone = prefix / tmp_path.relative_to("/") / "deleted-clone" / "pkg"
    for folder in (mirror, gone):
        folder.mkdir(parents=True)
    (mirror / "live.cpython-311.pyc").write_bytes(b"")
    (mirror / "dead.cpython-311-pytest-9.2.0.pyc").write_bytes(b"")
    (gone / "__init__.cpython-311.pyc").write_bytes(b"")
    assert bytecode.prune(str(prefix)) == 2
    assert [p.name for p in prefix.rglob("*.pyc")] == ["live.cpython-311.pyc"]
    assert not gone.exists() and not gone.parent.exists()


def test_only_the_tests_own_prefix_is_pruned(
    interpreter: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    named = tmp_path / "named"
    (named / "nowhere").mkdir(parents=True)
    (named / "nowhere" / "m.cpython-311.pyc").write_bytes(b"")
    monkeypatch.setenv("FSR_TEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "pycache_prefix", str(named))
    assert bytecode.end() == 0
    assert (named / "nowhere" / "m.cpython-311.pyc").exists()
    ours = tmp_path / "cache" / "pycache" / "nowhere"
    ours.mkdir(parents=True)
    (ours / "m.cpython-311.pyc").write_bytes(b"")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "cache" / "pycache"))
    assert bytecode.end() == 1
