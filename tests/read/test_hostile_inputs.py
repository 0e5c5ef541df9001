"""The hostile-input corpus: manifests, templates and table catalogs written to break the deployer.

Each case gives its exact one-line problems (file, field, message), in process and through the
real CLI: exit code 2, no traceback, no secret printed, nothing touched (no state folder).

- `tests/data/hostile/jobs/*.yaml`: job manifests; first lines `# expect: <field>: <message>`.
- `tests/data/hostile/templates/*.yaml`: templates, used with one valid job; `# expect:` lines
  are about the template, `# expect job:` lines about the job.
- `tests/data/hostile/catalogs/*`: table files or folders of them; `{case}` in an expected
  line stands for the case's path.
- `generated_cases()`: what cannot live in git as a plain file (10 MB, binary, FIFO, symlink
  loops, file names with control characters or undecodable bytes, a billion-laughs bomb).

Every secret value in the corpus contains SECRET; it must never be printed.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flink_sql_runner.cli.main import main
from flink_sql_runner.errors import InvalidInput, Problem, printable
from flink_sql_runner.read.catalog import load_catalog, read_catalog
from flink_sql_runner.read.manifest import load_jobs
from tests.support.cli import REPO, run_cli

HOSTILE = REPO / "tests" / "data" / "hostile"
JOB_CASES = sorted((HOSTILE / "jobs").glob("*.yaml"))
TEMPLATE_CASES = sorted((HOSTILE / "templates").glob("*.yaml"))
CATALOG_CASES = sorted((HOSTILE / "catalogs").iterdir())
TABLES = REPO / "examples" / "tables"
GOOD_JOB = REPO / "examples" / "queries" / "expensive-orders.yaml"
SECRET = "S3CR3T"
VALID_JOB = "target-table: expensive_orders\nsql: SELECT order_id FROM orders\n"
NAME_RULE = (
    "is not allowed: Unique job name: lowercase letters, digits, '-' and '_' (at most 63 "
    "characters). Used as S3 key, folder name and Spark app name."
)


def expected(path: Path, tag: str = "expect") -> list[str]:
    """The `# <tag>: ...` lines at the top of a case file."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# expect"):
            break
        if line.startswith(f"# {tag}: "):
            lines.append(line.removeprefix(f"# {tag}: "))
    return lines


def job_lines(case: Path) -> list[str]:
    return [f"{case}: {line}" for line in expected(case)]


def template_lines(case: Path) -> list[str]:
    return [f"{case}: {line}" for line in expected(case)] + [
        f"{GOOD_JOB}: {line}" for line in expected(case, "expect job")
    ]


def catalog_lines(case: Path) -> list[str]:
    files = [case] if case.is_file() else sorted(case.glob("*.yaml"))
    return [
        f"{file}: {line.replace('{case}', str(case))}" for file in files for line in expected(file)
    ]


def problems_of(call: Callable[[], object]) -> list[str]:
    """The problem lines of the InvalidInput that `call` raises."""
    with pytest.raises(InvalidInput) as raised:
        call()
    return [str(p) for p in raised.value.problems]


def generated_cases(folder: Path) -> dict[Path, list[str]]:
    """Write the cases that cannot be plain files in git; return each file's expected lines."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: dict[Path, list[str]] = {}

    def case(name: str, content: bytes | str, *lines: str) -> None:
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        cases[path] = list(lines)

    case(
        "ten-megabytes.yaml",
        b"# " + b"x" * (10 * 1024 * 1024),
        "file is 10485762 bytes; the limit is 1048576",
    )
    case("binary.yaml", bytes(range(256)) * 4, "binary file, expected YAML text")
    case("nul-in-text.yaml", f"name: a\x00b\n{VALID_JOB}", "binary file, expected YAML text")
    case(
        "utf-16.yaml",
        f"name: utf-16\n{VALID_JOB}".encode("utf-16"),
        "UTF-16 text; save the file as UTF-8",
    )
    case(
        "latin-1.yaml",
        "name: café\n".encode("latin-1"),
        "line 1: not UTF-8 text (byte 0xe9); save the file as UTF-8",
    )
    case("empty.yaml", b"", "(document): must be a mapping, got empty")
    case("bom-then-bad-name.yaml", f"\ufeffname: ..\n{VALID_JOB}", f"name: '..' {NAME_RULE}")
    laughs = "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'lol'] * 10)}]\n" for i in range(9)
    )
    case(
        "billion-laughs.yaml",
        laughs,
        "line 4: invalid YAML: YAML aliases expand to more than 10000 values",
    )
    case(
        "deep-nesting.yaml",
        "x: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "line 1: invalid YAML: nested more than 32 levels deep",
    )
    case(
        "huge-sql.yaml",
        f"name: huge-sql\ntarget-table: expensive_orders\nsql: SELECT 1 -- {'x' * 300_000}\n",
        "sql: length must be between 1 and 262144 characters",
    )
    case("new\nline.yaml", f"name: ..\n{VALID_JOB}", f"name: '..' {NAME_RULE}")
    undecodable = Path(os.fsdecode(os.fsencode(folder) + b"/undecodable-\xff.yaml"))
    undecodable.write_text(f"name: ..\n{VALID_JOB}")
    cases[undecodable] = [f"name: '..' {NAME_RULE}"]

    os.mkfifo(folder / "fifo.yaml")
    cases[folder / "fifo.yaml"] = ["not a regular file"]
    os.symlink("self-loop.yaml", folder / "self-loop.yaml")
    cases[folder / "self-loop.yaml"] = [f"cannot read: {os.strerror(errno.ELOOP)}"]
    os.symlink("nowhere", folder / "dangling.yaml")
    cases[folder / "dangling.yaml"] = [f"cannot read: {os.strerror(errno.ENOENT)}"]
    # A valid job in a folder with symlink loops: found once, so no duplicate-name problem.
    looped = folder / "looped"
    looped.mkdir()
    (looped / "ok.yaml").write_text(f"name: looped-ok\n{VALID_JOB}")
    os.symlink("..", looped / "up")
    os.symlink(".", looped / "self")
    (folder / "folder.yaml").mkdir()  # a folder named like a job file is not a job
    return {path: [f"{path}: {line}" for line in lines] for path, lines in cases.items()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("hostile") / "generated"
    cases = generated_cases(folder)
    return folder, [line for lines in cases.values() for line in lines]


def test_the_corpus_is_large_enough() -> None:
    assert len(JOB_CASES) + len(TEMPLATE_CASES) + len(CATALOG_CASES) >= 40
    for case in JOB_CASES + TEMPLATE_CASES:
        assert expected(case) + expected(case, "expect job"), f"{case} expects nothing"
    for case in CATALOG_CASES:
        assert catalog_lines(case), f"{case} expects nothing"


# -- in process -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", JOB_CASES, ids=[c.stem for c in JOB_CASES])
def test_job_case(case: Path, tmp_path: Path) -> None:
    catalog = load_catalog([TABLES])
    found = problems_of(lambda: load_jobs([case], None, catalog, tmp_path))
    assert sorted(found) == sorted(job_lines(case))


@pytest.mark.parametrize("case", TEMPLATE_CASES, ids=[c.stem for c in TEMPLATE_CASES])
def test_template_case(case: Path, tmp_path: Path) -> None:
    catalog = load_catalog([TABLES])
    found = problems_of(lambda: load_jobs([GOOD_JOB], case, catalog, tmp_path))
    assert sorted(found) == sorted(template_lines(case))


@pytest.mark.parametrize("case", CATALOG_CASES, ids=[c.stem for c in CATALOG_CASES])
def test_catalog_case(case: Path) -> None:
    _, problems = read_catalog([case])
    assert sorted(str(p) for p in problems) == sorted(catalog_lines(case))
    assert sorted(problems_of(lambda: load_catalog([case]))) == sorted(catalog_lines(case))


def test_generated_cases(generated: tuple[Path, list[str]], tmp_path: Path) -> None:
    folder, lines = generated
    catalog = load_catalog([TABLES])
    found = problems_of(lambda: load_jobs([folder], None, catalog, tmp_path))
    assert sorted(found) == sorted(printable(line) for line in lines)


def test_thousands_of_jobs_with_one_name(tmp_path: Path) -> None:
    for i in range(2000):
        (tmp_path / f"job-{i:04d}.yaml").write_text(f"name: twin\n{VALID_JOB}")
    found = problems_of(lambda: load_jobs([tmp_path], None, load_catalog([TABLES]), tmp_path))
    first = tmp_path / "job-0000.yaml"
    assert found == [
        f"{tmp_path / f'job-{i:04d}.yaml'}: name: job 'twin' is already defined in {first}"
        for i in range(1, 2000)
    ]


def test_a_broken_table_is_reported_once_not_by_every_job_that_uses_it(tmp_path: Path) -> None:
    (tmp_path / "tables.yaml").write_text(
        "tables:\n"
        "  - {name: good_source, format: rate}\n"
        "  - {name: bad_sink, format: parquet, options: [oops]}\n"
        "  - {name: good_sink, format: noop}\n"
    )
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name, target in (("uses-bad", "bad_sink"), ("uses-good", "good_sink")):
        (jobs / f"{name}.yaml").write_text(
            f"name: {name}\ntarget-table: {target}\nsql: SELECT value FROM good_source\n"
        )
    catalog, problems = read_catalog([tmp_path / "tables.yaml"])
    assert sorted(catalog.tables) == ["good_sink", "good_source"]
    assert catalog.broken == {"bad_sink"}
    assert [str(p) for p in problems] == [
        f"{tmp_path / 'tables.yaml'}: tables[1].options: must be a mapping, got a list"
    ]
    assert [j.name for j in load_jobs([jobs], None, catalog, tmp_path)] == ["uses-good"]
    result = run_cli(
        "validate", "--path", str(jobs), "--table-definition-path", str(tmp_path / "tables.yaml")
    )
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {problems[0]}"
    ]


def test_an_unreadable_folder_is_a_problem_not_a_missing_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, where chmod does not lock a folder: refuse to list it instead.
    (tmp_path / "jobs" / "locked").mkdir(parents=True)
    (tmp_path / "jobs" / "ok.yaml").write_text(f"name: ok\n{VALID_JOB}")
    locked, scandir = str(tmp_path / "jobs" / "locked"), os.scandir

    def refusing(path: str = ".") -> object:
        if str(path) == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    found = problems_of(
        lambda: load_jobs([tmp_path / "jobs"], None, load_catalog([TABLES]), tmp_path)
    )
    assert found == [f"{locked}: cannot read folder: {os.strerror(errno.EACCES)}"]


def test_paths_that_are_not_files_or_folders(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    os.symlink("loop", tmp_path / "loop")
    paths = [tmp_path / "missing", tmp_path / "pipe", tmp_path / "loop"]
    found = problems_of(lambda: load_jobs(paths, None, load_catalog([TABLES]), tmp_path))
    assert found == [
        f"{tmp_path / 'loop'}: cannot read: {os.strerror(errno.ELOOP)}",
        f"{tmp_path / 'missing'}: no such file or folder",
        f"{tmp_path / 'pipe'}: not a regular file",
    ]


def test_what_looks_odd_but_is_fine_is_accepted(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    # Each job writes its own folder: one sink has one writer.
    own = VALID_JOB.replace("expensive_orders", "out_per_job")
    (jobs / "bom.yaml").write_bytes(f"\ufeffname: bom\n{own}".encode())
    (jobs / "crlf.yaml").write_bytes(f"name: crlf\n{own}".replace("\n", "\r\n").encode())
    (jobs / "quoted-yes.yaml").write_text(
        f'name: quoted-yes\ndescription: "yes"\n{own}'
        "sparkProperties: {'1.5': x, spark.enabled: yes, spark.when: '2024-01-01'}\n"
    )
    (jobs / "anchors.yaml").write_text(
        "name: anchors\n"
        "sparkProperties: &props {spark.a: '1', spark.b: '2'}\n"
        "metadata-columns: {<<: {enabled: true}, create-timestamp-column: at}\n"
        f"{own}"
    )
    (jobs / "explicit-str.yaml").write_text(f"name: explicit-str\ndescription: !!str 42\n{own}")
    tables = tmp_path / "tables.yaml"
    tables.write_text(
        "tables:\n  - {name: pulsar_in, format: pulsar, options: {topic: t}}\n"
        "  - {name: via_class, format: org.example.spark.Source}\n"
        "  - {name: out_per_job, format: parquet, options: {path: 'out/{job_name}'}}\n"
    )
    found = load_jobs([jobs], None, load_catalog([TABLES, tables]), tmp_path)
    assert [j.name for j in found] == ["anchors", "bom", "crlf", "explicit-str", "quoted-yes"]
    props = {j.name: j.spec.get("sparkProperties", {}) for j in found}
    assert props["quoted-yes"]["1.5"] == "x"
    assert props["quoted-yes"]["spark.enabled"] == "true"
    assert props["anchors"]["spark.b"] == "2"
    assert next(j for j in found if j.name == "explicit-str").spec["description"] == "42"


# -- through the CLI ------------------------------------------------------------------------------


def assert_refused(
    result: subprocess.CompletedProcess[str] | Result, lines: list[str], state: Path
) -> None:
    """Exit 2, exactly these problems (one line each), no traceback, no secret, nothing made."""
    output = result.stdout + result.stderr
    code = result.exit_code if isinstance(result, Result) else result.returncode
    assert code == 2, output
    assert "Traceback" not in output
    assert SECRET not in output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert sorted(errors) == sorted(f"error: {printable(line)}" for line in lines)
    count = len(lines)
    assert result.stderr.splitlines()[-1] == (
        f"{count} problem{'s' if count != 1 else ''}; nothing was touched."
    )
    assert not state.exists()


def test_every_job_case_through_the_cli(generated: tuple[Path, list[str]], tmp_path: Path) -> None:
    folder, generated_lines = generated
    state = tmp_path / "state"
    result = run_cli(
        "validate",
        "--path",
        str(HOSTILE / "jobs"),
        "--path",
        str(folder),
        "--table-definition-path",
        str(TABLES),
        "--state-dir",
        str(state),
    )
    lines = [line for case in JOB_CASES for line in job_lines(case)] + generated_lines
    assert_refused(result, lines, state)


def test_every_catalog_case_through_the_cli(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tables = [arg for case in CATALOG_CASES for arg in ("--table-definition-path", str(case))]
    result = run_cli(
        "validate",
        "--path",
        str(GOOD_JOB),
        "--table-definition-path",
        str(TABLES),
        *tables,
        "--state-dir",
        str(state),
    )
    assert_refused(result, [line for case in CATALOG_CASES for line in catalog_lines(case)], state)


@pytest.mark.parametrize("case", TEMPLATE_CASES, ids=[c.stem for c in TEMPLATE_CASES])
def test_template_case_through_the_cli(case: Path, tmp_path: Path) -> None:
    """A run takes one template: these run the CLI's own code in this process (click's
    runner), which spares a Python start per case; the runs above are real processes."""
    state = tmp_path / "state"
    result = CliRunner().invoke(
        main,
        [
            "validate",
            "--path", str(GOOD_JOB),
            "--table-definition-path", str(TABLES),
            "--template-file", str(case),
            "--state-dir", str(state),
        ],
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert_refused(result, template_lines(case), state)


@pytest.mark.parametrize("command", ["plan", "deploy", "deploy-job"])
def test_invalid_input_never_reaches_the_store(command: str, tmp_path: Path) -> None:
    """With an S3 store nobody answers at, the refusal comes before any request."""
    state = tmp_path / "state"
    case = HOSTILE / "jobs" / "secret-beside-unknown-field.yaml"
    where = ["--job-config-path" if command == "deploy-job" else "--path", str(case)]
    result = run_cli(
        command,
        *where,
        "--table-definition-path",
        str(TABLES),
        "--state-dir",
        str(state),
        "--manifest-store",
        "s3://nobody-answers/jobs/",
        env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"},
    )
    assert_refused(result, job_lines(case), state)


def test_problem_lines_escape_what_a_terminal_would_hide() -> None:
    problem = Problem("jobs/a\nb.yaml", "'\\x1b[2J'", "zero\u200bwidth \ud800 tab\t")
    assert str(problem) == "jobs/a\\nb.yaml: '\\x1b[2J': zero\\u200bwidth \\ud800 tab\\t"


def test_numbers_in_ddl_options_that_no_option_can_mean(tmp_path: Path) -> None:
    """A number of 5,000 digits was a traceback (Python's int conversion limit); 1e999 became
    `inf` and 1e-999 became 0.0 silently. Each is now one line naming the file, line, table
    and option, exit 2; a number written as a string stays as written."""
    tables = tmp_path / "tables.sql"
    big = "9" * 5000
    tables.write_text(
        f"CREATE TABLE huge USING parquet OPTIONS (path '/tmp/a', digits {big});\n"
        "CREATE TABLE infinite USING parquet OPTIONS (path '/tmp/b', rate 1e999);\n"
        "CREATE TABLE vanishing USING parquet OPTIONS (path '/tmp/c', rate -1E-999);\n"
        "CREATE TABLE beyond USING parquet OPTIONS (path '/tmp/d', id 9223372036854775808);\n"
        f"CREATE TABLE fine USING parquet OPTIONS (path '/tmp/e', digits '{big}', rate 1e3,\n"
        "  id -9223372036854775808, zero 0e-999, half .5);\n"
    )
    state = tmp_path / "state"
    result = run_cli(
        "validate", "--path", str(GOOD_JOB), "--table-definition-path", str(TABLES),
        "--table-definition-path", str(tables), "--state-dir", str(state),
    )  # fmt: skip
    rule = "is not a number Spark reads as one; quote it to pass it as text"
    assert_refused(
        result,
        [
            f"{tables}: line 1: table huge: option 'digits': 99999999999999999999… (5000 digits) "
            f"{rule}",
            f"{tables}: line 2: table infinite: option 'rate': 1e999 {rule}",
            f"{tables}: line 3: table vanishing: option 'rate': -1E-999 {rule}",
            f"{tables}: line 4: table beyond: option 'id': 9223372036854775808 {rule}",
        ],
        state,
    )
