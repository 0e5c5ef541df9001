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
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    prefix = bytecode.keep(environ)
    assert prefix == str(tmp_path / "cache" / "pycache")
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
