"""The house as ARCHITECTURE.md draws it: every import runs the way its folder table allows, no
module imports itself through others, the top package keeps only its face, and runner/ imports
nothing of the deployer. The rules are read from ARCHITECTURE.md itself, so the page and the code
cannot drift apart."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import REPO

PACKAGE = "flink_sql_runner"
#: The top package's own modules beside its folders: its face, its entry point and errors.py.
TOP_MODULES_AT_MOST = 5


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    line: int
    imported: str  # the imported module, dotted (a name imported from a package, if a module)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, package: str) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """Every import in the module, at any depth (inside functions and `if TYPE_CHECKING:` too),
    resolved to a module of `known` where it names one."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        found += [Import(name, node.lineno, target) for target in targets]
    return found


def rules(architecture: str) -> dict[str, set[str]]:
    """ARCHITECTURE.md's folder table: each part (`act/`, `errors.py`, ...) and the parts it may
    import."""
    table: dict[str, set[str]] = {}
    for line in architecture.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"`[\w.]+/?`", cells[0]):
            continue
        part = cells[0].strip("`")
        table[part] = set(re.findall(r"`([\w.]+/?)`", cells[2])) - {PACKAGE}
    return table


def part_of(module: str) -> str:
    """`flink_sql_runner.decide.tree` -> `decide/`; `flink_sql_runner.errors` -> `errors.py`;
    the top package's face and entry point -> `(face)`; `runner.x` -> `runner/`."""
    parts = module.split(".")
    if parts[:2] == [PACKAGE, "_runner"]:  # runner/ as the deployer's package installs it
        return "runner/"
    if parts[0] != PACKAGE:
        return f"{parts[0]}/"
    if len(parts) == 1 or parts[1] in ("__main__", "__init__"):
        return "(face)"
    return f"{parts[1]}/" if len(parts) > 2 or not parts[1].startswith("errors") else "errors.py"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def architecture_problems(root: Path) -> list[str]:
    """Every way the code under `root` differs from its ARCHITECTURE.md; [] when none."""
    allowed = rules((root / "ARCHITECTURE.md").read_text())
    allowed["(face)"] = {"cli/"}
    deployer = modules(root, PACKAGE)
    runner = modules(root, "runner")
    known = set(deployer) | set(runner)
    problems = []
    folders = {f"{p.name}/" for p in (root / PACKAGE).iterdir() if p.is_dir() and p.name[0] != "_"}
    folders -= {"__pycache__/"}
    for folder in sorted(folders - set(allowed)):
        problems.append(f"{PACKAGE}/{folder}: no row in ARCHITECTURE.md's folder table")
    for part in sorted(set(allowed) - folders - {"errors.py", "runner/", "(face)"}):
        problems.append(f"ARCHITECTURE.md names {part}, which is not a folder of {PACKAGE}/")
    top = sorted(p.name for p in (root / PACKAGE).glob("*.py"))
    if len(top) > TOP_MODULES_AT_MOST:
        problems.append(f"{PACKAGE}/ holds {len(top)} modules ({', '.join(top)}): at most five")
    graph: dict[str, set[str]] = {}
    for name, path in {**deployer, **runner}.items():
        for found in imports_of(name, path, known):
            if found.imported.split(".")[0] not in (PACKAGE, "runner"):
                continue  # the standard library, pyspark, ...
            if found.imported in known and found.imported != name:
                graph.setdefault(name, set()).add(found.imported)
            source, target = part_of(name), part_of(found.imported)
            if source == target or target == "(face)" and found.imported == PACKAGE:
                continue
            if target not in allowed.get(source, set()):
                where = path.relative_to(root)
                may = ", ".join(sorted(allowed.get(source, set()))) or "nothing"
                problems.append(
                    f"{where}:{found.line} imports {found.imported}: {source} may import {may}"
                )
    for circle in circles(graph):
        problems.append("import circle: " + " -> ".join(circle))
    return problems


def test_the_code_keeps_the_house_architecture_md_draws() -> None:
    assert architecture_problems(REPO) == []


def test_the_check_sees_an_upward_import_a_circle_and_an_unlisted_folder(tmp_path: Path) -> None:
    """A house of four modules that breaks three rules, each reported on its own line."""

    def write(path: str, text: str = "") -> None:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)

    write(
        "ARCHITECTURE.md",
        "| folder | holds | may import |\n|---|---|---|\n"
        "| `errors.py` | errors | nothing |\n"
        "| `decide/` | deciding | `errors.py` |\n"
        "| `act/` | acting | `decide/`, `errors.py` |\n",
    )
    write(f"{PACKAGE}/__init__.py")
    write(f"{PACKAGE}/errors.py")
    write(f"{PACKAGE}/decide/__init__.py")
    write(f"{PACKAGE}/decide/tree.py", f"from {PACKAGE}.act import executor\n")
    write(f"{PACKAGE}/act/__init__.py")
    write(f"{PACKAGE}/act/executor.py", f"from {PACKAGE}.decide.tree import x\n")
    write(f"{PACKAGE}/watch/__init__.py")
    write("runner/__init__.py")
    problems = architecture_problems(tmp_path)
    assert problems == [
        f"{PACKAGE}/watch/: no row in ARCHITECTURE.md's folder table",
        f"{PACKAGE}/decide/tree.py:1 imports {PACKAGE}.act.executor: decide/ may import errors.py",
        f"import circle: {PACKAGE}.act.executor -> {PACKAGE}.decide.tree",
    ]


def test_the_folder_table_is_read_as_written() -> None:
    table = rules((REPO / "ARCHITECTURE.md").read_text())
    assert table["decide/"] == {"read/", "model/", "runner/"}
    assert table["errors.py"] == set()
    assert table["runner/"] == set()
    assert "act/" in table["watch/"] and "watch/" not in table["act/"]


#: The runner's modules both sides run: pure Python, importing only one another.
SHARED_RUNNER = ("schema_rules", "sink_walk", "parquet_footer")


def test_the_deployer_imports_only_the_shared_modules_of_the_runner() -> None:
    """The runner's rules for a sink's schema, its walk of what a file sink holds and its
    parquet footer reader are the modules both sides run; nothing else of the runner (Spark,
    its run) leaks into the deployer, not even through them."""
    deployer = modules(REPO, PACKAGE)
    known = set(deployer) | set(modules(REPO, "runner"))
    used = {
        found.imported
        for name, path in deployer.items()
        for found in imports_of(name, path, known)
        if found.imported.startswith(f"{PACKAGE}._runner")
    }
    assert used <= {f"{PACKAGE}._runner.{name}" for name in SHARED_RUNNER}
    runner = modules(REPO, "runner")
    for name in SHARED_RUNNER:
        for found in imports_of(f"runner.{name}", runner[f"runner.{name}"], known):
            if found.imported in runner:
                assert found.imported in {f"runner.{n}" for n in SHARED_RUNNER}, (name, found)
