"""`jvm-archive` and the local target's use of it, with a stand-in for spark-submit: the archive
is made once, whole or not at all, keyed by the Java and the Spark it was made for, and a local
driver starts from it only when it is there (the real JVM's use of it:
tests/e2e/test_local_jvm_archive.py)."""

from __future__ import annotations

import json
import os
import pwd
import time
from pathlib import Path

import pytest

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import owned
from flink_sql_runner.host import processes as procs
from flink_sql_runner.targets.jvm_archive import (
    archive_path,
    java_option,
    make_archive,
    trusted_option,
    untrusted,
    user_archive_folder,
)
from flink_sql_runner.targets.local import LocalTarget
from tests.support.cli import run_cli
from tests.support.fakes import stand_in
from tests.targets.test_local import submission

#: Stands in for spark-submit's training run: records its arguments and its JVM options, and
#: writes the archive `-XX:ArchiveClassesAtExit` names, as a JVM does at its exit.
TRAINING = """#!{python}
import json, os, sys
opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
with open(os.environ["FAKE_CALLS"], "a") as out:
    out.write(json.dumps({{"args": sys.argv[1:], "opts": opts}}) + "\\n")
if os.environ.get("FAKE_FAIL"):
    print("Exception in thread main: no memory", file=sys.stderr)
    sys.exit(1)
path = opts.split("-XX:ArchiveClassesAtExit=", 1)[1].split()[0]
with open(path, "wb") as archive:
    archive.write(b"classes")
"""
#: Stands in for a local driver: writes the JVM options it was given, then waits.
DRIVER = """#!{python}
import os, sys, time
with open(os.environ["FAKE_CALLS"] + ".part", "w") as out:
    out.write(os.environ.get("SPARK_SUBMIT_OPTS", "<none>"))
os.replace(os.environ["FAKE_CALLS"] + ".part", os.environ["FAKE_CALLS"])
time.sleep(60)
"""


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls"
    monkeypatch.setenv("FAKE_CALLS", str(path))
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    return path


def test_jvm_archive_makes_the_archive_once_and_whole(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "state"
    (state / "jvm").mkdir(parents=True)
    (state / "jvm" / "spark-of-an-older-spark.jsa").write_bytes(b"old")

    made = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))

    assert made.returncode == 0, made.stderr
    path = archive_path(state / "jvm", str(submit))
    assert path is not None and path.read_bytes() == b"classes"
    assert made.stdout.startswith(f"made {path} (7 B) in "), made.stdout
    assert "local drivers of this Spark and Java start from it" in made.stdout
    assert sorted(p.name for p in (state / "jvm").iterdir()) == [path.name], "old one gone"
    (call,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert call["args"][:2] == ["--master", "local[2]"]
    assert call["args"][-2].endswith("jvm_training.py") and Path(call["args"][-2]).is_file()
    assert call["opts"].startswith("-XX:ArchiveClassesAtExit="), "nothing else, not ours"

    again = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"already made: {path} (7 B)"), again.stdout
    assert len(calls.read_text().splitlines()) == 1, "not made twice"


def test_a_training_run_that_fails_leaves_no_archive(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "state"
    failed = run_cli(
        "jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit),
        env={"FAKE_FAIL": "1"},
    )  # fmt: skip
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        "error: the training run exited 1 without an archive: Exception in thread main: no memory"
    )
    assert list((state / "jvm").iterdir()) == [], "no archive, no half-made one"


def test_a_path_with_spaces_is_refused_before_anything_runs(tmp_path: Path, calls: Path) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state = tmp_path / "my state"
    refused = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))
    assert refused.returncode == 1
    assert "a path with spaces cannot be given to Java as an option" in refused.stderr
    assert not calls.exists() and not state.exists()


def test_a_training_run_past_its_time_is_killed_with_its_children(
    tmp_path: Path, calls: Path
) -> None:
    pids = tmp_path / "pids"
    submit = stand_in(
        tmp_path / "spark-submit",
        "#!{python}\nimport os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n",
    )
    began = time.monotonic()
    with pytest.raises(FsrError, match="the training run did not end in 2 s"):
        make_archive(tmp_path / "jvm", str(submit), timeout=2)
    assert time.monotonic() - began < 30
    child = int(pids.read_text())
    assert procs.wait_gone(child, procs.start_marker(child) or "gone", 10), "its child too"
    assert list((tmp_path / "jvm").iterdir()) == []


def test_another_java_or_spark_finds_no_archive(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    jar = home / "jars" / "spark-core_2.13-4.3.0.jar"
    jar.write_bytes(b"core")
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    monkeypatch.setenv("SPARK_HOME", str(home))
    made = make_archive(tmp_path / "jvm", str(submit))
    assert java_option(tmp_path / "jvm", str(submit)) == f"-XX:SharedArchiveFile={made.path}"

    original = jar.stat().st_mtime_ns
    jar.write_bytes(b"core, patched")
    assert java_option(tmp_path / "jvm", str(submit)) is None, "another Spark"
    jar.write_bytes(b"core")
    os.utime(jar, ns=(original, original))
    assert java_option(tmp_path / "jvm", str(submit)) is not None, "that Spark again"

    (tmp_path / "other-java" / "bin").mkdir(parents=True)
    stand_in(tmp_path / "other-java" / "bin" / "java", "#!{python}\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "other-java"))
    assert java_option(tmp_path / "jvm", str(submit)) is None, "another Java"


def test_a_local_driver_starts_from_the_archive_only_when_there_is_one(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submit = stand_in(tmp_path / "spark-submit", DRIVER)
    target = LocalTarget(tmp_path / "state", spark_submit=str(submit), master="local[2]")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")

    def options_of_a_run(run_id: str) -> str:
        calls.unlink(missing_ok=True)
        target.submit(submission(tmp_path, run_id=run_id))
        try:
            deadline = time.monotonic() + 20
            while not calls.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return calls.read_text()
        finally:
            record = json.loads(target._record_path("job", run_id).read_text())
            procs.kill_group(int(record["pid"]), str(record["started"]))

    assert options_of_a_run("run-1") == "-Xss4m", "no archive: the options as they were"
    path = archive_path(tmp_path / "state" / "jvm", str(submit))
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"classes")
    assert options_of_a_run("run-2") == f"-XX:SharedArchiveFile={path} -Xss4m", (
        "the archive first: options already there win"
    )


def test_a_relative_state_folder_gives_java_absolute_paths(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default state folder is relative (`.flink-sql-runner`), and Java reads the archive's
    path from the JVM's working folder: the training run works in a folder of its own, a probe
    or a driver in theirs (a hostile review found both relative)."""
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    monkeypatch.chdir(tmp_path)
    made = make_archive(Path(".flink-sql-runner") / "jvm", str(submit))
    assert made.made and made.path.is_absolute() and made.path.read_bytes() == b"classes"
    assert made.path.parent == tmp_path / ".flink-sql-runner" / "jvm"
    option = java_option(Path(".flink-sql-runner") / "jvm", str(submit))
    assert option == f"-XX:SharedArchiveFile={made.path}"


def test_a_jar_that_links_to_nothing_or_an_unreadable_folder_means_no_archive_not_a_failure(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    submit = stand_in(home / "bin" / "spark-submit", TRAINING)
    (home / "jars" / "gone.jar").symlink_to(tmp_path / "no-such.jar")
    folder = tmp_path / "state" / "jvm"
    assert java_option(folder, str(submit)) is None  # before: FileNotFoundError
    made = make_archive(folder, str(submit))
    assert java_option(folder, str(submit)) == f"-XX:SharedArchiveFile={made.path}"

    def refused(self: Path) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_file", refused)
    assert java_option(folder, str(submit)) is None


def test_the_plans_archive_is_made_in_the_users_own_folder_and_private(
    tmp_path: Path, calls: Path
) -> None:
    """`--for-plan`: in this user's cache folder (never the state folder), the folder 0700 and
    the archive 0600; one that is there but not only this user's, a relative folder, one in a
    checkout or a `jvm/` that is a link is refused with a line that says so."""
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    state, user = tmp_path / "state", tmp_path / "user-cache"
    env = {"FLINK_SQL_RUNNER_USER_CACHE": str(user)}
    args = ("jvm-archive", "--for-plan", "--state-dir", str(state), "--spark-submit", str(submit))
    made = run_cli(*args, env=env)  # the umask: the in-process test below
    assert made.returncode == 0, made.stderr
    path = archive_path(user / "jvm", str(submit))
    assert path is not None and path.read_bytes() == b"classes"
    assert "the plan's probes of this Spark and Java start from it" in made.stdout
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert not state.exists(), "nothing in the state folder"

    path.chmod(0o602)  # writable by others: a probe would not map it
    refused = run_cli(*args, env=env)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: {path}: it may be written by others: remove it and run this again"
    )
    relative = run_cli(*args, env={"FLINK_SQL_RUNNER_USER_CACHE": "cache"})
    assert relative.returncode == 1
    assert relative.stderr.strip() == (
        "error: FLINK_SQL_RUNNER_USER_CACHE must be an absolute path (or this user has no home)"
    )
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    inside = run_cli(*args, env={"FLINK_SQL_RUNNER_USER_CACHE": str(checkout / ".cache")})
    assert inside.returncode == 1
    assert inside.stderr.strip() == (
        f"error: {checkout / '.cache' / 'jvm'}: it is in the git work tree {checkout}: the "
        "plan's probes would map no archive there"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "jvm").symlink_to(elsewhere)
    linked = run_cli(*args, env={"FLINK_SQL_RUNNER_USER_CACHE": str(tmp_path / "linked")})
    assert linked.returncode == 1
    assert "a link: the plan's probes map no archive through one" in linked.stderr
    assert stat_mode(elsewhere) == 0o755 and not list(elsewhere.iterdir()), "left as it was"
    assert len(calls.read_text().splitlines()) == 1, "made once"


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_plans_archive_and_the_folders_made_for_it_are_private_whatever_the_umask(
    tmp_path: Path, calls: Path
) -> None:
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    folder = tmp_path / "a" / "b" / "jvm"
    old = os.umask(0o002)
    try:
        made = make_archive(folder, str(submit), private=True)
    finally:
        os.umask(old)
    assert made.made and made.path.read_bytes() == b"classes"
    modes = [stat_mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", folder, made.path)]
    assert modes == [0o700, 0o700, 0o700, 0o600]
    folder.chmod(0o755)
    made.path.chmod(0o644)
    again = make_archive(folder, str(submit), private=True)
    assert not again.made and [stat_mode(folder), stat_mode(made.path)] == [0o700, 0o600]


def test_the_users_cache_folder_is_named_by_the_environment_or_xdg_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLINK_SQL_RUNNER_USER_CACHE", str(tmp_path / "mine"))
    assert user_archive_folder() == tmp_path / "mine" / "jvm"
    monkeypatch.setenv("FLINK_SQL_RUNNER_USER_CACHE", "relative")
    assert user_archive_folder() is None, "never a folder that follows where a command runs"
    monkeypatch.delenv("FLINK_SQL_RUNNER_USER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_archive_folder() == tmp_path / "xdg" / "flink-sql-runner" / "jvm"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored, as XDG says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a CI job's checkout, say: not read
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert user_archive_folder() == home / ".cache" / "flink-sql-runner" / "jvm"


def test_an_archive_is_trusted_only_while_it_and_its_folder_are_this_users_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(owned, "_own_group", lambda gid: False)  # its group: others
    submit = str(stand_in(tmp_path / "spark-submit", TRAINING))
    folder = tmp_path / "jvm"
    folder.mkdir(mode=0o700)
    path = archive_path(folder, submit)
    assert path is not None
    assert trusted_option(folder, submit) is None, "none there"
    path.write_bytes(b"classes")
    path.chmod(0o600)
    assert trusted_option(folder, submit) == f"-XX:SharedArchiveFile={path}"
    assert trusted_option(None, submit) is None
    for mode in (0o620, 0o602):
        path.chmod(mode)
        assert trusted_option(folder, submit) is None, oct(mode)
    path.chmod(0o644)
    assert trusted_option(folder, submit) is not None, "readable by others is fine"
    folder.chmod(0o770)
    assert trusted_option(folder, submit) is None, "a folder others may write in"
    folder.chmod(0o755)
    uid = os.getuid()
    with monkeypatch.context() as patched:
        patched.setattr(os, "getuid", lambda: uid + 1)
        assert trusted_option(folder, submit) is None, "another user's"
    elsewhere = tmp_path / "elsewhere.jsa"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert trusted_option(folder, submit) == f"-XX:SharedArchiveFile={elsewhere}", "followed"
    elsewhere.chmod(0o666)
    assert trusted_option(folder, submit) is None, "a link to a file others may write"
    elsewhere.chmod(0o644)
    path.unlink()
    elsewhere.rename(path)
    linked = tmp_path / "linked"
    linked.symlink_to(folder)
    assert trusted_option(linked, submit) == f"-XX:SharedArchiveFile={path}", "the real path"
    tmp_path.chmod(0o777)
    assert trusted_option(folder, submit) is None, "a folder above it others may write in"
    tmp_path.chmod(0o1777)
    assert trusted_option(folder, submit) is not None, "unless sticky, as /tmp is"
    tmp_path.chmod(0o755)
    (tmp_path / ".git").mkdir()
    assert trusted_option(folder, submit) is None, "in a checkout"


def test_a_java_path_that_loops_or_a_quote_means_no_archive_and_one_line(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile review's findings: a JAVA_HOME whose `bin/java` is a link loop escaped as a
    traceback (plan, deploy, `jvm-archive`); a quote in the archive's path, which Spark's
    launcher reads as its own syntax, failed the probe's spark-submit."""
    submit = str(stand_in(tmp_path / "spark-submit", TRAINING))
    folder = tmp_path / "jvm"
    folder.mkdir(mode=0o700)
    path = archive_path(folder, submit)
    assert path is not None
    path.write_bytes(b"classes")
    path.chmod(0o600)
    quoted = tmp_path / "o'brien"
    folder.rename(quoted)
    assert trusted_option(quoted, submit) is None and java_option(quoted, submit) is None
    with pytest.raises(FsrError, match="a quote or a backslash cannot be given to Java"):
        make_archive(quoted, submit, private=True)
    loop = tmp_path / "java-home" / "bin"
    loop.mkdir(parents=True)
    (loop / "java").symlink_to(loop / "java")
    monkeypatch.setenv("JAVA_HOME", str(loop.parent))
    assert trusted_option(quoted, submit) is None and java_option(quoted, submit) is None
    refused = run_cli(
        "jvm-archive", "--for-plan", "--spark-submit", submit,
        env={"FLINK_SQL_RUNNER_USER_CACHE": str(tmp_path / "user"), "JAVA_HOME": str(loop.parent)},
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: cannot tell which Java and Spark to make it for: ")
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_checkout_without_git_is_told_by_ci_or_by_where_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second hostile review: a checkout from a tarball has no `.git`. The folder a CI system
    names as its checkout, and the folder the command runs in (not the home folder: `cd ~` on a
    laptop), count as checkouts too."""
    submit = str(stand_in(tmp_path / "spark-submit", TRAINING))
    checkout = tmp_path / "checkout"
    folder = checkout / ".cache" / "flink-sql-runner" / "jvm"
    folder.mkdir(parents=True)
    for part in (checkout, *folder.parents[:3], folder):
        part.chmod(0o755)
    path = archive_path(folder, submit)
    assert path is not None
    path.write_bytes(b"classes")
    path.chmod(0o644)
    for name in owned.CHECKOUTS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert trusted_option(folder, submit) is not None
    monkeypatch.setenv("GITHUB_WORKSPACE", str(checkout))
    assert untrusted(path) == (
        f"its folder: it is in $GITHUB_WORKSPACE ({checkout}), which may be a checkout"
    )
    monkeypatch.delenv("GITHUB_WORKSPACE")
    monkeypatch.chdir(checkout)
    assert trusted_option(folder, submit) is None, "the folder the command runs in"
    monkeypatch.setattr(owned, "home", lambda: checkout)
    assert trusted_option(folder, submit) is not None, "unless that is the home folder"


def test_a_group_may_write_only_where_it_is_the_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Umask 002 systems give each user a group of their own: its write is no one else's."""
    submit = str(stand_in(tmp_path / "spark-submit", TRAINING))
    folder = tmp_path / "jvm"
    folder.mkdir()
    folder.chmod(0o775)
    path = archive_path(folder, submit)
    assert path is not None
    path.write_bytes(b"classes")
    path.chmod(0o664)
    monkeypatch.setattr(owned, "_own_group", lambda gid: True)
    assert trusted_option(folder, submit) is not None
    monkeypatch.setattr(owned, "_own_group", lambda gid: False)
    assert trusted_option(folder, submit) is None


def test_the_users_cache_keeps_every_sparks_archive_and_a_dot_dot_is_resolved(
    tmp_path: Path, calls: Path
) -> None:
    """One cache folder serves every project of the user, whatever its Spark: making one
    Spark's archive leaves the others'. A `..` in the folder named is resolved, not followed
    into a folder that does not exist."""
    submit = stand_in(tmp_path / "spark-submit", TRAINING)
    user = tmp_path / "user"
    (user / "jvm").mkdir(parents=True, mode=0o700)
    user.chmod(0o700)
    (user / "jvm" / "spark-of-another-spark.jsa").write_bytes(b"theirs")
    (user / "jvm" / "spark-a-folder.jsa").mkdir()
    named = str(tmp_path / "missing" / ".." / "user")
    made = run_cli(
        "jvm-archive", "--for-plan", "--spark-submit", str(submit),
        env={"FLINK_SQL_RUNNER_USER_CACHE": named},
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    path = archive_path(user / "jvm", str(submit))
    assert path is not None and path.read_bytes() == b"classes"
    assert (user / "jvm" / "spark-of-another-spark.jsa").read_bytes() == b"theirs"
    assert not (tmp_path / "missing").exists()
    state = tmp_path / "state"
    (state / "jvm").mkdir(parents=True)
    (state / "jvm" / "spark-a-folder.jsa").mkdir()
    drivers = run_cli("jvm-archive", "--state-dir", str(state), "--spark-submit", str(submit))
    assert drivers.returncode == 0, drivers.stderr
    assert (state / "jvm" / "spark-a-folder.jsa").is_dir(), "what cannot be removed is left"
