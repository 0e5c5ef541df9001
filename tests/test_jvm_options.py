"""The suite's JVM options (tests/support/jvm.py): programs started by vfork only where the
Java knows the mechanism for sure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.jvm import QUICK_OPTIONS, launch_options

VFORK = ("-Djdk.lang.Process.launchMechanism=VFORK",)


def java_of(tmp_path: Path, release: str | None) -> str:
    """A Java home with `release` as its release file; its `bin/java`."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    if release is not None:
        (home / "release").write_text(release)
    return str(home / "bin" / "java")


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ('IMPLEMENTOR="Debian"\nJAVA_VERSION="17.0.15"\n', VFORK),
        ('JAVA_VERSION="21.0.2"\n', VFORK),
        ('JAVA_VERSION="1.8.0_402"\n', VFORK),
        ('JAVA_VERSION="25"\n', ()),
        ('JAVA_VERSION="26-ea"\n', ()),
        ("IMPLEMENTOR=x\n", ()),
        (None, ()),
    ],
)
def test_vfork_only_where_the_java_says_it_is_21_or_older(tmp_path, release, expected) -> None:
    assert launch_options(java_of(tmp_path, release), "linux") == expected


def test_no_vfork_off_linux_or_without_a_java(tmp_path) -> None:
    assert launch_options(java_of(tmp_path, 'JAVA_VERSION="17.0.1"\n'), "darwin") == ()
    assert launch_options(None, "linux") == ()


def test_the_client_compiler_comes_first() -> None:
    assert QUICK_OPTIONS[0] == "-XX:TieredStopAtLevel=1"
