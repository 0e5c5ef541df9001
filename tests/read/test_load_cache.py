"""The load cache (read/load_cache.py): what unchanged job and table files read as last time,
reused only while every input is unchanged, and the very objects an uncached load builds."""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from contextlib import chdir
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.errors import InvalidInput, Problem
from flink_sql_runner.read import catalog as catalog_module
from flink_sql_runner.read import manifest as manifest_module
from flink_sql_runner.read.load_cache import FORMAT, LoadCache, code_digest, storable
from flink_sql_runner.read.paths import SourceCheck
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.read.secrets import redact_text
from tests.support.cli import REPO, run_cli

EXAMPLES = REPO / "examples"


def typed(value: Any) -> Any:
    """`value` with every type spelt out: 1, 1.0 and True, a list and a tuple, differ."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, value)


def shape(jobs: list[Any]) -> Any:
    return typed([(j.spec, j.tables, j.source_tables, j.file, j.base, j.relative) for j in jobs])


class Counted:
    """Counts the YAML and SQL texts parsed (what the cache saves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.parsed = 0
        for module, name in (
            (manifest_module, "parse_yaml"),
            (catalog_module, "parse_yaml"),
            (catalog_module, "parse_sql_tables"),
        ):
            real = getattr(module, name)
            monkeypatch.setattr(module, name, self._counting(real))

    def _counting(self, real: Any) -> Any:
        def call(*args: Any) -> Any:
            self.parsed += 1
            return real(*args)

        return call


def settings(
    state: Path,
    paths: list[Path],
    tables: list[Path],
    template: Path | None = None,
    cache: bool = True,
    strict: bool = False,
) -> Settings:
    return Settings(
        paths=paths,
        table_paths=tables,
        template=template,
        state_dir=state,
        cache=cache,
        properties=PropertyRules(strict=strict),
    )


def load(
    state: Path, paths: list[Path], tables: list[Path], cache: bool = True, **kw: Any
) -> tuple[list[Any], list[Problem]]:
    """The jobs and the warnings of one load (a fresh Deployment, as each command makes)."""
    deployment = Deployment(settings(state, paths, tables, cache=cache, **kw))
    jobs = deployment.load(SourceCheck.LOCAL)
    return jobs, list(deployment.settings.properties.warnings)


def problems_of(state: Path, paths: list[Path], tables: list[Path], cache: bool) -> list[str]:
    with pytest.raises(InvalidInput) as raised:
        load(state, paths, tables, cache=cache)
    return [str(p) for p in raised.value.problems] + raised.value.hints


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


def cache_file(state: Path) -> Path:
    return state / "cache" / "load.json"


def cache_doc(state: Path) -> dict[str, Any]:
    """The cache file read as its lines say: the header's fields, and the entries by section
    and key (a later line replacing an earlier one, `null` dropping it)."""
    header, *lines = cache_file(state).read_text().splitlines()
    doc: dict[str, Any] = {**json.loads(header), "tables": {}, "jobs": {}}
    for line in filter(None, lines):
        section, key, entry = json.loads(line)
        if entry is None:
            del doc[section][key]
        else:
            doc[section][key] = entry
    return doc


def write_doc(state: Path, doc: dict[str, Any]) -> None:
    """`doc` (as `cache_doc` reads it) written as a cache file, one entry a line."""
    lines = [json.dumps({"format": doc["format"], "code": doc["code"]}, separators=(",", ":"))]
    for section in ("tables", "jobs"):
        lines += [json.dumps([section, k, e]) for k, e in doc[section].items()]
    cache_file(state).write_text("\n".join(lines) + "\n")


def project(root: Path) -> tuple[list[Path], list[Path]]:
    """A copy of the examples (jobs of both folders, YAML tables), with its data folder."""
    shutil.copytree(EXAMPLES / "queries", root / "jobs" / "queries")
    shutil.copytree(EXAMPLES / "pipeline" / "queries", root / "jobs" / "pipeline")
    shutil.copytree(EXAMPLES / "tables", root / "tables" / "main")
    shutil.copytree(EXAMPLES / "pipeline" / "tables", root / "tables" / "pipeline")
    shutil.copytree(EXAMPLES / "data", root / "examples" / "data")
    return [root / "jobs"], [root / "tables"]


# -- the same objects -------------------------------------------------------------------------


@pytest.mark.parametrize("tables", ["tables", "tables-sql"])
def test_the_examples_load_the_same_with_and_without_the_cache(
    tables: str, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the examples' relative paths resolve here, as the README runs them
    paths = [EXAMPLES / "queries", EXAMPLES / "pipeline" / "queries"]
    catalog = [EXAMPLES / tables, EXAMPLES / "pipeline" / "tables"]
    uncached = load(state, paths, catalog, cache=False)
    assert not cache_file(state).exists(), "--no-cache keeps nothing"
    counted = Counted(monkeypatch)
    cold = load(state, paths, catalog)
    parsed_cold = counted.parsed
    warm = load(state, paths, catalog)
    assert counted.parsed == parsed_cold, "the second load parses no file again"
    assert parsed_cold == 8  # 5 jobs, 3 table files
    assert shape(cold[0]) == shape(uncached[0]) == shape(warm[0])
    assert cold[1] == uncached[1] == warm[1]
    assert [j.name for j in warm[0]] == [
        "big-buyer-orders", "buyer-orders-code", "expensive-orders", "order-stats", "tick-log"
    ]  # fmt: skip


def test_the_test_catalogs_read_the_same_from_the_cache(state: Path) -> None:
    for folder in ("good", "good-as-yaml"):
        tables = [REPO / "tests" / "data" / "ddl" / folder]
        without = Deployment(settings(state, [], tables, cache=False)).catalog()
        first = Deployment(settings(state, [], tables)).catalog()
        again = Deployment(settings(state, [], tables)).catalog()
        for catalog in (first, again):
            assert catalog.broken == without.broken
            assert list(catalog.tables) == list(without.tables)
            for name, table in catalog.tables.items():
                known = without.tables[name]
                assert typed(table.definition) == typed(known.definition)
                assert (table.file, table.at, table.lines) == (known.file, known.at, known.lines)


def test_warnings_come_back_with_the_cached_job(tmp_path: Path, state: Path) -> None:
    paths, tables = project(tmp_path)
    job = tmp_path / "jobs" / "queries" / "tick-log.yaml"
    doc = yaml.safe_load(job.read_text())
    doc["sparkProperties"] = {"taskmanager.memory.process.size": "1g"}
    job.write_text(yaml.safe_dump(doc))
    with chdir(tmp_path):
        _, uncached = load(state, paths, tables, cache=False)
        _, cold = load(state, paths, tables)
        _, warm = load(state, paths, tables)
    assert len(uncached) == 1 and "taskmanager.memory.process.size" in uncached[0].field
    assert cold == warm == uncached


# -- never trusted over a changed input -------------------------------------------------------


def test_an_edited_job_is_read_again_and_only_it(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    job = tmp_path / "jobs" / "queries" / "expensive-orders.yaml"
    job.write_text(job.read_text().replace("9000", "9500"))
    counted = Counted(monkeypatch)
    jobs, _ = load(state, paths, tables)
    assert counted.parsed == 1
    edited = next(j for j in jobs if j.name == "expensive-orders")
    assert "9500" in edited.spec["sql"]
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_a_job_edited_elsewhere_than_in_its_query_is_not_parsed_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's tables and CTEs come from the last read of the same file while the text
    is the same; another text is parsed, and a query that does not parse says so again."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    parsed: list[str] = []
    real = manifest_module.query_tables
    monkeypatch.setattr(
        manifest_module, "query_tables", lambda sql: parsed.append(sql) or real(sql)
    )
    job = tmp_path / "jobs" / "queries" / "expensive-orders.yaml"
    job.write_text(job.read_text().replace("description:", "description: edited,"))
    jobs, _ = load(state, paths, tables)
    assert parsed == []
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])
    parsed.clear()
    job.write_text(job.read_text().replace("9000", "9500"))
    jobs, _ = load(state, paths, tables)
    assert len(parsed) == 1 and "9500" in parsed[0]
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])
    job.write_text(job.read_text().replace("9500", "9500 AND"))
    assert any("does not parse" in p for p in problems_of(state, paths, tables, cache=True))
    job.write_text(job.read_text().replace("description:", "description: again,"))
    assert any("does not parse" in p for p in problems_of(state, paths, tables, cache=True))


def test_a_command_whose_queries_were_all_read_before_does_not_import_the_sql_parser(
    tmp_path: Path, state: Path
) -> None:
    paths, tables = project(tmp_path)
    script = (
        "import sys\n"
        "from flink_sql_runner.act.deployment import Deployment\n"
        "from flink_sql_runner.act.settings import Settings\n"
        "from flink_sql_runner.read.paths import SourceCheck\n"
        "from pathlib import Path\n"
        f"settings = Settings(paths=[Path({str(paths[0])!r})],\n"
        f"    table_paths=[Path({str(tables[0])!r})],\n"
        f"    template=None, state_dir=Path({str(state)!r}), cache=True)\n"
        "Deployment(settings).load(SourceCheck.LOCAL)\n"
        "print('sqlglot' in sys.modules)\n"
    )

    def imports_the_parser() -> bool:
        found = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True
        )
        assert found.returncode == 0, found.stderr
        return found.stdout.strip() == "True"

    assert imports_the_parser(), "the first read parses every query"
    job = tmp_path / "jobs" / "queries" / "expensive-orders.yaml"
    job.write_text(job.read_text().replace("description:", "description: edited,"))
    assert not imports_the_parser()
    job.write_text(job.read_text().replace("9000", "9500"))
    assert imports_the_parser()


def test_an_edited_template_reads_every_job_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    template = tmp_path / "template.yaml"
    shutil.copy(EXAMPLES / "job-template.yaml", template)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables, template=template)
    template.write_text(template.read_text().replace("10 seconds", "20 seconds"))
    counted = Counted(monkeypatch)
    jobs, _ = load(state, paths, tables, template=template)
    assert counted.parsed == 5  # the jobs, not the unchanged table files
    assert {j.spec["trigger"]["processingTime"] for j in jobs if j.name != "tick-log"} == {
        "20 seconds"
    }
    assert shape(jobs) == shape(load(state, paths, tables, False, template=template)[0])


def test_a_changed_table_reads_again_the_jobs_using_it_and_only_them(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    sinks = tmp_path / "tables" / "main" / "sinks.yaml"
    text = sinks.read_text().replace("output/tick_log", "output/ticks_logged")
    sinks.write_text(text)
    counted = Counted(monkeypatch)
    jobs, _ = load(state, paths, tables)
    assert counted.parsed == 2  # sinks.yaml, and tick-log, the one job writing tick_log
    tick = next(j for j in jobs if j.name == "tick-log")
    assert tick.tables["tick_log"]["options"]["path"].endswith("/output/ticks_logged")
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])
    # A table added elsewhere in the catalog (a new job's sink) costs no job its entry.
    sinks.write_text(text + "\n  - name: other\n    format: parquet\n    options: {path: /o}\n")
    counted.parsed = 0
    jobs, _ = load(state, paths, tables)
    assert counted.parsed == 1
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_a_table_moved_in_its_file_reads_the_job_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a table is declared is part of what a job got from it (a missing source's problem
    names that place)."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    sources = tmp_path / "tables" / "main" / "sources.yaml"
    doc = yaml.safe_load(sources.read_text())
    sources.write_text(yaml.safe_dump({"tables": doc["tables"][::-1]}, sort_keys=False))
    shutil.rmtree(tmp_path / "examples" / "data" / "orders")
    assert problems_of(state, paths, tables, cache=True) == problems_of(
        state, paths, tables, cache=False
    )


def test_a_name_resolving_to_another_table_reads_the_job_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog's answer for a name, not only the tables used, is part of the key: a name
    that resolved to `orders` may resolve to a newly declared `ORDERS` ... or to none."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    sources = tmp_path / "tables" / "main" / "sources.yaml"
    sources.write_text(sources.read_text().replace("- name: orders", "- name: orders_v2"))
    assert problems_of(state, paths, tables, cache=True) == problems_of(
        state, paths, tables, cache=False
    )


def test_environment_variables_are_kept_as_written_so_they_need_no_key(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading reads no environment variable: `${OUT}` stays as written until a run starts
    (model/runtime.py), so a cached job is right whatever the variable says."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    sinks = tmp_path / "tables" / "main" / "sinks.yaml"
    sinks.write_text(sinks.read_text().replace("{state_dir}/output/tick_log", "${OUT}/tick_log"))
    monkeypatch.setenv("OUT", "/one")
    load(state, paths, tables)
    monkeypatch.setenv("OUT", "/two")
    jobs, _ = load(state, paths, tables)
    tick = next(j for j in jobs if j.name == "tick-log")
    assert tick.tables["tick_log"]["options"]["path"] == "${OUT}/tick_log"
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_another_working_folder_resolves_relative_paths_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path / "one")
    shutil.copytree(tmp_path / "one" / "examples", tmp_path / "two" / "examples")
    monkeypatch.chdir(tmp_path / "one")
    load(state, paths, tables)
    monkeypatch.chdir(tmp_path / "two")
    jobs, _ = load(state, paths, tables)
    orders = next(j for j in jobs if j.name == "expensive-orders").tables["orders"]
    assert orders["options"]["path"] == str(tmp_path / "two" / "examples" / "data" / "orders")
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_another_state_folder_or_strictness_reads_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    shutil.copytree(state, tmp_path / "elsewhere")
    counted = Counted(monkeypatch)
    jobs, _ = load(tmp_path / "elsewhere", paths, tables)
    assert counted.parsed == 5  # {state_dir} differs: the jobs are read again (not the tables)
    assert all(str(tmp_path / "elsewhere") in j.spec["checkpoint-root"] for j in jobs)
    counted.parsed = 0
    load(state, paths, tables, strict=True)
    assert counted.parsed == 5


def test_a_source_gone_since_is_still_a_problem(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a source's path exists is looked at on every load, never kept."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    shutil.rmtree(tmp_path / "examples" / "data" / "orders")
    with_cache = problems_of(state, paths, tables, cache=True)
    assert any("examples/data/orders" in p and "does not exist" in p for p in with_cache)
    assert with_cache == problems_of(state, paths, tables, cache=False)


def test_a_file_that_fails_fails_the_same_way_with_the_cache(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    kept = cache_file(state).read_bytes()
    job = tmp_path / "jobs" / "queries" / "expensive-orders.yaml"
    job.write_text(job.read_text().replace("FROM orders", "FROM nowhere"))
    shutil.copytree(REPO / "tests" / "data" / "broken", tmp_path / "jobs" / "broken")
    shutil.copytree(REPO / "tests" / "data" / "hostile" / "jobs", tmp_path / "jobs" / "hostile")
    with_cache = problems_of(state, paths, tables, cache=True)
    assert any("nowhere" in p for p in with_cache)
    assert with_cache == problems_of(state, paths, tables, cache=False)
    assert with_cache == problems_of(state, paths, tables, cache=True)
    assert cache_file(state).read_bytes() == kept, "invalid inputs touch nothing"


# -- the file ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xff not json",
        b'{"format": 1, "code": "',
        b"[]",
        json.dumps({"format": FORMAT + 1, "code": "x"}).encode() + b"\n[]\n",
        json.dumps({"format": FORMAT, "code": "other code"}).encode() + b"\n",
        json.dumps({"format": 1, "code": "x", "tables": {}, "jobs": {}}).encode(),
        b"",
    ],
    ids=["garbage", "truncated", "a-list", "another-format", "another-code", "format-1", "empty"],
)
def test_a_broken_or_foreign_cache_file_is_ignored_and_rebuilt(
    content: bytes, tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    cache_file(state).parent.mkdir()
    cache_file(state).write_bytes(content)
    jobs, _ = load(state, paths, tables)
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])
    doc = cache_doc(state)
    assert (doc["format"], doc["code"], len(doc["jobs"])) == (FORMAT, code_digest(), 5)


def test_broken_entries_are_read_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    doc = cache_doc(state)
    for entry in doc["jobs"].values():
        entry["canonical"] = "not a list of pairs"
    for entry in doc["tables"].values():
        entry["tables"] = [{"entry": 3}]
    write_doc(state, doc)
    counted = Counted(monkeypatch)
    jobs, _ = load(state, paths, tables)
    assert counted.parsed == 8
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_no_secret_is_written_to_the_cache(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tables" / "main" / "secret.yaml").write_text(
        "tables:\n  - name: vault\n    format: parquet\n"
        "    options: {path: /v, password: hunter2-in-a-table}\n"
    )
    job = tmp_path / "jobs" / "queries" / "tick-log.yaml"
    doc = yaml.safe_load(job.read_text())
    doc["sparkProperties"] = {"spark.hadoop.fs.s3a.secret.key": "hunter2-in-a-job"}
    job.write_text(yaml.safe_dump(doc))
    cold, _ = load(state, paths, tables)
    warm, _ = load(state, paths, tables)
    kept = cache_file(state).read_text()
    assert "hunter2" not in kept
    assert "expensive-orders" in kept  # the others are kept
    assert shape(warm) == shape(cold) == shape(load(state, paths, tables, cache=False)[0])


def test_entries_of_files_no_longer_there_are_dropped(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    (tmp_path / "jobs" / "queries" / "tick-log.yaml").unlink()
    load(state, paths, tables)
    doc = cache_doc(state)
    assert sorted(Path(k).name for k in doc["jobs"]) == [
        "big-buyer-orders.yaml", "buyer-orders-code.yaml", "expensive-orders.yaml",
        "order-stats.yaml",
    ]  # fmt: skip
    # One job loaded alone (deploy-job) keeps the others' entries: their files are there.
    deployment = Deployment(settings(state, paths, tables))
    deployment.load_one(tmp_path / "jobs" / "queries" / "order-stats.yaml")
    assert cache_doc(state)["jobs"].keys() == doc["jobs"].keys()


def test_nothing_is_written_when_nothing_changed_nor_without_a_state_folder(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    before = cache_file(state).stat().st_mtime_ns
    cache_file(state).chmod(0o400)
    load(state, paths, tables)
    assert cache_file(state).stat().st_mtime_ns == before
    load(tmp_path / "no-state", paths, tables)
    assert not (tmp_path / "no-state").exists(), "a command that only reads makes no folder"


def test_a_cache_of_plain_values_only() -> None:
    """What JSON would not give back as it was (a tuple, a date) is not kept."""
    import datetime

    cache = LoadCache()
    for value in ({"when": datetime.date(2024, 1, 1)}, {"pair": (1, 2)}):
        cache.keep_table_file("t.yaml", "text", [(value, "tables[0]", None)])
    assert not cache.changed


def test_no_cache_on_the_command_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    args = ["--path", "examples/queries", "--table-definition-path", "examples/tables"]
    args += ["--state-dir", str(state)]
    result = run_cli("validate", *args, "--no-cache")
    assert result.returncode == 0, result.stderr
    assert not cache_file(state).exists()
    result = run_cli("validate", *args)
    assert result.returncode == 0, result.stderr
    assert cache_file(state).exists()
    for command in ("plan", "deploy", "deploy-job", "validate", "lineage", "status"):
        assert "--no-cache" in run_cli(command, "--help").stdout, command
    for command in ("stop", "forget", "logs"):
        assert "--no-cache" not in run_cli(command, "--help").stdout, command


@pytest.mark.parametrize(
    "value",
    [
        {"options": {"password": "x"}},
        {"sparkProperties": {"spark.hadoop.fs.s3a.secret.key": ["x"]}},
        {"options": {"url": "jdbc:x;password=abc"}},
        {"options": {"kafka.sasl.jaas.config": "org... required;"}},
        {"sql": "SELECT 1 -- token: abc"},
        {"a": [{"b": {"AccessKey": 1}}]},
        # Review of issue 57, 4: a URL's user and password, and a PEM private key, which mask
        # hides wherever they are; a user and password before a host without its scheme, which
        # an error's text shows masked.
        {"sparkProperties": {"spark.mongodb.read.connection.uri": "mongodb://u:Hunter2@db/x"}},
        {"options": {"pem": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----"}},
        {"options": {"path": "key:Hunter2@bucket/x"}},
    ],
)
def test_what_mask_would_hide_is_not_kept(value: dict[str, Any]) -> None:
    from flink_sql_runner.read.load_cache import storable
    from flink_sql_runner.read.secrets import mask, redact_all

    assert mask(value) != value or redact_all(value) != value
    assert not storable(value)
    assert storable({"options": {"path": "/p", "user": "me"}, "n": [1, 2.5, True, None]})


def test_what_changed_is_appended_and_the_rest_copied_when_written_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command appends a line per entry it added, replaced or dropped; read back, the later
    line wins. Writing the file whole copies the line of every entry read and not replaced."""
    from flink_sql_runner.read import load_cache

    first = LoadCache()
    for n in range(5):
        first.keep_table_file(f"/t/{n}é.yaml", f"text {n}", [({"n": n, "s": "a\nb"}, "x", None)])
    assert first.appendix() is None, "no file was read: it is written whole"
    raw = first.to_bytes()
    assert raw.count(b"\n") == 6 and raw.endswith(b"\n")
    encoded: list[Any] = []
    compact = load_cache._compact
    monkeypatch.setattr(load_cache, "_compact", lambda v: encoded.append(v) or compact(v))
    again = LoadCache.from_bytes(raw)
    assert again._tables == first._tables
    assert again.to_bytes() == raw and encoded == []
    again.keep_table_file("/t/2é.yaml", "new text", [({"n": 22}, "x", None)])
    again.prune(lambda key: "4" not in key)
    appendix = again.appendix()
    assert appendix is not None and appendix.count(b"\n") == 3, appendix
    assert len(encoded) == 2, "only the replaced entry and the dropped one are encoded"
    read = LoadCache.from_bytes(raw + appendix)
    assert read._tables == again._tables and len(read._tables) == 4
    assert read._tables["/t/2é.yaml"]["tables"][0]["entry"] == {"n": 22}
    encoded.clear()
    whole = read.to_bytes()
    assert encoded == [] and whole.count(b"\n") == 5
    assert LoadCache.from_bytes(whole)._tables == again._tables


def test_a_line_cut_short_is_skipped_and_the_lines_after_it_read() -> None:
    """A write interrupted leaves part of a line; the next command's lines start on a line of
    their own, and only the entry of the cut line is lost (its file is read again)."""
    cache = LoadCache()
    for n in range(3):
        cache.keep_table_file(f"/t/{n}.yaml", f"text {n}", [({"name": "t", "n": n}, "x", None)])
    raw = cache.to_bytes()
    cut = LoadCache.from_bytes(raw)
    cut.keep_table_file("/t/1.yaml", "text 1 edited", [({"name": "t", "n": 11}, "x", None)])
    appendix = cut.appendix()
    assert appendix is not None
    later = LoadCache.from_bytes(raw)
    later.keep_table_file("/t/3.yaml", "text 3", [({"name": "t", "n": 3}, "x", None)])
    later_lines = later.appendix()
    assert later_lines is not None
    read = LoadCache.from_bytes(raw + appendix[:-9] + later_lines)
    assert sorted(read._tables) == ["/t/0.yaml", "/t/1.yaml", "/t/2.yaml", "/t/3.yaml"]
    assert read._tables["/t/1.yaml"] == cache._tables["/t/1.yaml"], "the line before the cut"
    assert read.table_file("/t/1.yaml", "text 1 edited") is None
    assert read.table_file("/t/3.yaml", "text 3") == [({"name": "t", "n": 3}, "x", None)]


def test_the_file_is_written_whole_once_its_lines_outnumber_its_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flink_sql_runner.read import load_cache

    monkeypatch.setattr(load_cache, "REWRITE_SLACK", 0)
    cache = LoadCache()
    for n in range(8):
        cache.keep_table_file(f"/t/{n}.yaml", "text", [({"n": n}, "x", None)])
    raw = cache.to_bytes()
    appended = 0
    while (appendix := cache.appendix()) is not None or appended == 0:
        if appendix is not None:
            raw += appendix
        cache = LoadCache.from_bytes(raw)
        cache.keep_table_file("/t/0.yaml", f"text {appended}", [({"n": appended}, "x", None)])
        appended += 1
    # 8 entries on 10 lines (a quarter more) were appended to; the 11th is written whole.
    assert appended == 3
    whole = cache.to_bytes()
    assert whole.count(b"\n") == 9
    assert LoadCache.from_bytes(whole)._tables == cache._tables


def test_an_edit_appends_to_the_file_it_read(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)
    before = cache_file(state).read_bytes()
    job = tmp_path / "jobs" / "queries" / "expensive-orders.yaml"
    job.write_text(job.read_text().replace("9000", "9500"))
    load(state, paths, tables)
    after = cache_file(state).read_bytes()
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].decode().splitlines() if line]
    assert [(section, Path(key).name) for section, key, _ in added] == [
        ("jobs", "expensive-orders.yaml")
    ]
    counted = Counted(monkeypatch)
    jobs, _ = load(state, paths, tables)
    assert counted.parsed == 0
    assert shape(jobs) == shape(load(state, paths, tables, cache=False)[0])


def test_an_entry_is_never_appended_to_the_file_of_another_code(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40, item 4: a command of code X read the file (X's), a command of code Y wrote it
    again whole meanwhile (Y's header), then X appended its entries: Y read them back as its
    own. The append lands only on a file headed by the appender's code."""
    from flink_sql_runner.read import load_cache

    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load_cache, "code_digest", lambda: "X")
    load(state, paths, tables)
    made_by_x = tmp_path / "made-by-x.yaml"
    made_by_x.write_text("text")
    deployment = Deployment(settings(state, paths, tables))
    with deployment._cache() as cache:  # a command of code X, loading
        assert cache is not None and cache.hits == 0
        cache.keep_table_file(str(made_by_x), "text", [({"by": "X"}, "x", None)])
        monkeypatch.setattr(load_cache, "code_digest", lambda: "Y")
        load(state, paths, tables)  # a command of code Y, meanwhile
        assert cache_doc(state)["code"] == "Y"
        monkeypatch.setattr(load_cache, "code_digest", lambda: "X")
    monkeypatch.setattr(load_cache, "code_digest", lambda: "Y")
    read_by_y = LoadCache.from_bytes(cache_file(state).read_bytes())
    assert read_by_y.table_file(str(made_by_x), "text") is None


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("jobs", "job", ["not", "a", "mapping"]),
        ("jobs", "job", {"spec": [], "tables": {}, "source_tables": [], "file": "f", "base": "b",
                         "relative": []}),
        ("jobs", "job", {"spec": {}, "tables": {}, "source_tables": [1], "file": "f", "base": "b",
                         "relative": [["a"]]}),
        ("jobs", "warnings", [["a", "b"]]),
        ("jobs", "embedded", 5),
        ("tables", "tables", [{"entry": ["not", "a", "mapping"], "at": "x", "lines": None}]),
        ("tables", "tables", [{"entry": {"name": 5}, "at": "x", "lines": None}]),
    ],
)  # fmt: skip
def test_a_cache_entry_of_another_shape_is_read_again_not_a_traceback(
    tmp_path: Path,
    state: Path,
    monkeypatch: pytest.MonkeyPatch,
    section: str,
    field: str,
    value: Any,
) -> None:
    """A cache a CI step restored is a file anyone with the same release could have written:
    an entry whose fields have another shape is a miss, its file read again (review of issue
    57, 5: a job entry that was a list ended `validate` with a traceback)."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    first, _ = load(state, paths, tables)
    header, *lines = cache_file(state).read_text().splitlines()
    rows = [json.loads(line) for line in lines if line]
    for row in rows:
        if row[0] == section:
            row[2][field] = value
    cache_file(state).write_text("\n".join([header, *map(json.dumps, rows)]) + "\n")
    again, _ = load(state, paths, tables)
    assert shape(again) == shape(first)


def test_storable_answers_as_the_walk_of_every_value_does() -> None:
    """`storable` answers from the value's JSON text where that is safe; on values made of
    every word the secret rules hold (in other cases, Unicode's case folds among them), keys
    that JSON would turn to text, tuples, dates and NaN, it answers as walking the value does."""
    import datetime
    import random

    from flink_sql_runner.read import load_cache

    words = [
        "secret", "PassWord", "passwd", "tOken", "access.key", "accesskey", "credential",
        "jaas.config", "account.key", "private_key", "sas-token", "fs.azure.sas.x",
        "keystore.key", "ſecret", "\u212aeystore.key", "-----BEGIN RSA PRIVATE KEY-----", "@",
        "u:p@host", "mongodb://", "=", ":", " '", '"', ",", "é", "path", "user", "kansas", "\n",
    ]  # fmt: skip
    rng = random.Random(57)

    def text() -> str:
        return "".join(rng.choice(words) for _ in range(rng.randint(0, 3)))

    def value(depth: int = 0) -> Any:
        kind = rng.randint(0, 9 if depth < 3 else 4)
        if kind <= 2:
            return text()
        if kind == 3:
            return rng.choice([None, True, False, 0, 7, 2.5, float("nan"), 10**30])
        if kind == 4:
            return rng.choice([(1, 2), datetime.date(2026, 1, 1), b"x", [], {}])
        if kind <= 6:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        keys = [text(), text(), rng.choice([1, 2.5, None, True, "k"])]
        return {k: value(depth + 1) for k in keys[: rng.randint(0, 3)]}

    fast = 0
    for _ in range(20_000):
        v, key = value(), rng.choice(["", "", "path", "password", "x.sas.token"])
        expected = load_cache._storable_walked(v, key)
        assert load_cache.storable(v, key) is expected, (v, key)
        fast += expected
    assert fast > 2_000, "the values the fast answer takes are among those drawn"


# -- review findings of issue 57's tenth part ---------------------------------------------------


def test_options_reordered_in_a_table_file_reach_the_job(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of two spellings of one option Spark takes the last: a table file that only reorders
    them changes what its jobs pass, and a job kept in the cache is read again."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    sources = tmp_path / "tables" / "main" / "sources.yaml"
    doc = yaml.safe_load(sources.read_text())
    orders = next(t for t in doc["tables"] if t["name"] == "orders")
    orders["options"] = {**orders["options"], "maxFilesPerTrigger": "1", "maxfilespertrigger": "5"}
    sources.write_text(yaml.safe_dump(doc, sort_keys=False))
    load(state, paths, tables)
    options = orders["options"]
    lower, upper = options.pop("maxfilespertrigger"), options.pop("maxFilesPerTrigger")
    options["maxfilespertrigger"], options["maxFilesPerTrigger"] = lower, upper  # "1" last now
    sources.write_text(yaml.safe_dump(doc, sort_keys=False))
    cached, _ = load(state, paths, tables)
    fresh, _ = load(state, paths, tables, cache=False)

    def last_option(jobs: list[Any]) -> dict[str, Any]:
        return {j.name: list(j.tables["orders"]["options"].items())[-1]
                for j in jobs if "orders" in j.tables}  # fmt: skip

    assert last_option(fresh) and set(last_option(fresh).values()) == {("maxFilesPerTrigger", "1")}
    assert last_option(cached) == last_option(fresh)
    assert shape(cached) == shape(fresh)


#: Secrets a PySpark job gives in its code, each in a form Spark's own redaction misses.
CODE_SECRETS = [
    'spark.sparkContext._jsc.hadoopConfiguration().set("fs.s3a.secret.key", "hunter2")\n',
    'spark.conf.set("spark.hadoop.fs.s3a.access.key", "hunter2")\n',
    "spark.sql(\"CREATE TEMPORARY VIEW pg USING jdbc OPTIONS ('url' 'jdbc:postgresql://db/x', "
    "'dbtable' 't', 'password' 'hunter2')\")\n",
    "spark.sql('''CREATE TEMPORARY VIEW pg USING jdbc OPTIONS (url \"jdbc:postgresql://db/x\", "
    'dbtable "t", password "hunter2")\'\'\')\n',
    # The credential keys Spark's rule misses (secrets.CREDENTIAL_KEYS), given in code:
    'spark.conf.set("fs.azure.account.key.acct.dfs.core.windows.net", "hunter2==")\n',
    'sc._jsc.hadoopConfiguration().set("fs.gs.auth.service.account.private.key", "hunter2")\n',
    'spark.conf.set("fs.azure.sas.box.acct.blob.core.windows.net", "sv=1&sig=hunter2")\n',
    'reader = spark.read.option("credentials", "hunter2")\n',
]


@pytest.mark.parametrize(
    "line",
    CODE_SECRETS,
    ids=["hadoop-conf-set", "conf-set", "sql-quoted-key", "sql-double-quoted", "azure-key",
         "gcs-key", "sas", "credentials"],
)  # fmt: skip
def test_a_secret_in_a_code_job_is_not_written_to_the_cache_file(
    line: str, tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code is not kept (the CI cache uploads the file); nor shown (`redact_text`)."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    job = {
        "name": "s3-copy",
        "target-table": "buyer_orders",
        "source-tables": ["orders"],
        "code": line + "execution_output = spark.table('orders')\n",
    }
    (paths[0] / "queries" / "s3-copy.yaml").write_text(yaml.safe_dump(job))
    (paths[0] / "queries" / "buyer-orders-code.yaml").unlink()
    jobs, _ = load(state, paths, tables)
    assert "s3-copy" in {j.name for j in jobs}
    assert "hunter2" not in cache_file(state).read_text()
    assert "hunter2" not in redact_text(line) and not storable({"code": line})


def test_the_code_digest_changes_with_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A code job is checked with `ast.parse`, whose syntax changes with Python's version: a
    cache another Python wrote is not trusted."""
    from flink_sql_runner.read import load_cache

    before = load_cache.code_digest.__wrapped__()
    version = collections.namedtuple("version", "major minor micro releaselevel serial")
    monkeypatch.setattr(sys, "version_info", version(3, 99, 0, "final", 0))
    assert load_cache.code_digest.__wrapped__() != before


def outcome(state: Path, paths: list[Path], tables: list[Path], cache: bool) -> Any:
    """What one load gives: its jobs' shape and warnings, its problems, or what escaped."""
    try:
        jobs, warnings = load(state, paths, tables, cache=cache)
        return ("jobs", shape(jobs), [str(w) for w in warnings])
    except InvalidInput as exc:
        return ("invalid", [str(p) for p in exc.problems])
    except Exception as exc:  # noqa: BLE001 - a traceback the command's boundary would show
        return ("traceback", f"{type(exc).__name__}: {exc}")


def _job_entry(rows: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for (s, k), e in rows.items() if s == "jobs" and k.endswith(name))


def _sql_to_1(rows: dict[str, Any]) -> None:
    spec = _job_entry(rows, "expensive-orders.yaml")["job"]["spec"]
    spec["sql"] = spec["sql"].replace("9000", "1")


def _sink_elsewhere(rows: dict[str, Any]) -> None:
    job = _job_entry(rows, "tick-log.yaml")["job"]
    job["tables"]["tick_log"]["options"]["path"] = "/prod/someone-elses-sink"


def _no_name(rows: dict[str, Any]) -> None:
    del _job_entry(rows, "expensive-orders.yaml")["job"]["spec"]["name"]


def _table_moved(rows: dict[str, Any]) -> None:
    for (section, _), entry in rows.items():
        for table in entry["tables"] if section == "tables" else []:
            if table["entry"]["name"] == "tick_log":
                table["entry"]["options"]["path"] = "/prod/someone-elses-sink"


PLAN_KEY = "k3y-" * 16


@pytest.mark.parametrize("signature", ["kept", "none"])
@pytest.mark.parametrize(
    "alter", [_sql_to_1, _sink_elsewhere, _no_name, _table_moved],
    ids=["sql-changed", "sink-moved", "no-name", "table-moved"],
)  # fmt: skip
def test_with_the_plan_key_a_cache_line_someone_else_wrote_is_read_again(
    alter: Any, signature: str, tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the plan key is set (CI), the cache's lines are signed with a key derived from
    it: a line altered by whoever could write the cache folder (its signature kept, or a
    file of unsigned lines under the signed file's header) is not the job, nor a traceback:
    the file is read again."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    load(state, paths, tables)
    header, *lines = cache_file(state).read_text().splitlines()
    assert PLAN_KEY not in cache_file(state).read_text() and '"key":' in header
    rows = {}
    macs = {}
    for line in filter(None, lines):
        section, key, entry = json.loads(line[64:])
        rows[(section, key)], macs[(section, key)] = entry, line[:64]
    alter(rows)
    forged = [header] + [
        (macs[k] if signature == "kept" else "") + json.dumps([*k, e]) for k, e in rows.items()
    ]
    cache_file(state).write_text("\n".join(forged) + "\n")
    assert outcome(state, paths, tables, cache=True) == outcome(state, paths, tables, cache=False)
    again, _ = load(state, paths, tables)  # and the cache works again, signed
    assert shape(again) == outcome(state, paths, tables, cache=False)[1]


def test_a_cache_signed_with_another_key_or_none_is_not_used(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    load(state, paths, tables)  # unsigned
    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    raw = cache_file(state).read_bytes()
    assert LoadCache.from_bytes(raw).hits == 0 and LoadCache.from_bytes(raw)._jobs
    from flink_sql_runner.read.cache_signing import cache_key

    assert not LoadCache.from_bytes(raw, cache_key(PLAN_KEY.encode()))._jobs
    load(state, paths, tables)  # now signed with it
    signed_raw = cache_file(state).read_bytes()
    assert LoadCache.from_bytes(signed_raw, cache_key(PLAN_KEY.encode()))._jobs
    assert not LoadCache.from_bytes(signed_raw, cache_key(b"another" * 8))._jobs
    assert not LoadCache.from_bytes(signed_raw)._jobs


def test_with_the_plan_key_a_forged_fingerprint_does_not_hide_a_query_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQL fingerprints beside the load cache: one mapping a new query's text to the old
    query's fingerprint would make the plan see no query change."""
    import hashlib

    from flink_sql_runner.act.input_caches import fingerprints_at
    from flink_sql_runner.read.sqlinfo import sql_fingerprint

    monkeypatch.setenv("FLINK_SQL_RUNNER_PLAN_KEY", PLAN_KEY)
    old = "SELECT order_id, price FROM orders WHERE price > 9000"
    new = "SELECT order_id, price FROM orders WHERE price > 1"
    kept = tmp_path / "fingerprints.json"
    with fingerprints_at(kept, None):
        old_fingerprint = sql_fingerprint(old)
    signed_line = kept.read_text()
    doc = json.loads(signed_line[64:])
    doc["sql"][hashlib.sha256(new.encode()).hexdigest()] = old_fingerprint
    for forged in (signed_line[:64] + json.dumps(doc), json.dumps(doc)):
        kept.write_text(forged)
        with fingerprints_at(kept, None):
            assert sql_fingerprint(new) != sql_fingerprint(old)
    from flink_sql_runner.read.cache_signing import cache_key, signed

    key = cache_key(PLAN_KEY.encode(), "fingerprints")
    kept.write_text(signed(json.dumps(doc, separators=(",", ":")), key))
    with fingerprints_at(kept, None):  # signed with the key: taken as it is
        assert sql_fingerprint(new) == old_fingerprint
