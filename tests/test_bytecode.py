"""Where the suite's processes keep their bytecode (tests/support/bytecode.py)."""

from __future__ import annotations

import os
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


def test_a_forbidding_environment_gets_a_folder_of_the_run_removed_by_its_maker(
    interpreter: None,
) -> None:
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    prefix = bytecode.keep(environ)
    assert prefix is not None and os.path.isdir(prefix)
    assert environ == {
        "PATH": "/bin",
        "PYTHONPYCACHEPREFIX": prefix,
        "FSR_TEST_PYCACHE_OWNER": str(os.getpid()),
    }
    assert sys.pycache_prefix == prefix and sys.dont_write_bytecode is False
    inherited = dict(environ, FSR_TEST_PYCACHE_OWNER="1")  # a worker, a pytest a test runs
    bytecode.end(inherited)
    assert os.path.isdir(prefix) and inherited["PYTHONPYCACHEPREFIX"] == prefix
    bytecode.end(environ)
    assert not os.path.exists(prefix) and environ == {"PATH": "/bin"}
    assert sys.dont_write_bytecode is True  # nothing makes the folder again


def test_an_environment_that_writes_bytecode_or_names_its_prefix_is_left_as_it_is(
    interpreter: None,
) -> None:
    writes = {"PATH": "/bin"}
    assert bytecode.keep(writes) is None
    assert writes == {"PATH": "/bin"} and sys.pycache_prefix is None
    own = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/somewhere/pyc"}
    assert bytecode.keep(own) is None
    assert own == {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/somewhere/pyc"}
    assert sys.pycache_prefix is None


def test_a_child_of_the_run_writes_its_bytecode_under_the_prefix_not_beside_the_source(
    interpreter: None, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "module_here.py").write_text("VALUE = 1\n")
    environ = {"PYTHONDONTWRITEBYTECODE": "1"}
    prefix = bytecode.keep(environ)
    assert prefix is not None
    try:
        subprocess.run(
            [sys.executable, "-c", "import module_here"], cwd=source, env=environ, check=True
        )
        assert not (source / "__pycache__").exists()
        assert list(Path(prefix).rglob("module_here.*.pyc"))
    finally:
        bytecode.end(environ)
