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


def test_the_minicluster_takes_the_options_of_the_java_it_runs(tmp_path, monkeypatch) -> None:
    """The minicluster runs `java` on PATH: a Java 17 as JAVA_HOME (which Spark's scripts run)
    says nothing of it."""
    from tests.support.hadoop_cluster import minicluster_options

    old = java_of(tmp_path / "old", 'JAVA_VERSION="17.0.15"\n')
    new = java_of(tmp_path / "new", 'JAVA_VERSION="26"\n')
    Path(new).chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(Path(old).parent.parent))
    monkeypatch.setenv("PATH", str(Path(new).parent))
    assert minicluster_options() == ("-XX:TieredStopAtLevel=1",)
    Path(new).parent.joinpath("release").write_text("")  # not a Java home's release file
    (Path(new).parent.parent / "release").write_text('JAVA_VERSION="21.0.2"\n')
    assert minicluster_options() == ("-XX:TieredStopAtLevel=1", *VFORK)


def test_a_java_reached_through_links_is_read_from_its_home(tmp_path) -> None:
    """/usr/bin/java -> /etc/alternatives/java -> <home>/bin/java, as Debian installs it."""
    real = java_of(tmp_path / "jdk17", 'JAVA_VERSION="17.0.15"\n')
    (tmp_path / "alternatives").mkdir()
    (tmp_path / "alternatives" / "java").symlink_to(real)
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "bin" / "java").symlink_to(tmp_path / "alternatives" / "java")
    (tmp_path / "usr" / "release").write_text('JAVA_VERSION="26"\n')  # not its home
    assert launch_options(str(tmp_path / "usr" / "bin" / "java"), "linux") == VFORK


def test_every_spark_jvm_of_the_suite_gets_the_launch_options() -> None:
    """Drivers, probes and sessions (`java_options`), a cluster's drivers and executors
    (`cluster_conf`): the options of the Java Spark's scripts run."""
    from flink_sql_runner.targets.jvm_archive import java_binary
    from tests.support.jvm import cluster_conf, java_options

    wanted = launch_options(java_binary())
    given = [java_options(make=False), *cluster_conf().values()]
    for options in given:
        assert all(option in options.split() for option in wanted), options
    assert set(wanted) <= set(QUICK_OPTIONS)
