"""The tree is the architecture (docs/design.md): every import points down, and no module
imports itself back through others. Read from the source with `ast`, so a lazy import inside a
function counts as much as one at the top.

Modules, package `__init__` modules included, form the graph: `from memsync.stores import Entry`
is an edge to the `memsync.stores` package module, `from memsync.cli import checks` one to the
submodule `memsync.cli.checks`. An import under `if TYPE_CHECKING:` never runs, but it still
means one module knows the other, so it counts both for direction and for loops: two modules
that name each other, even only in annotations, cannot be read or changed apart. A submodule
never takes a name from its own package's `__init__` (the package runs its `__init__` first, so
that is a loop through the package however it is written); it imports the defining module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memsync"

# Lowest first. A module may import from its own subpackage, from its tier and from below.
TIERS = [
    {"util"},  # file system, platforms, errors, packaged resources
    {"stores", "memory"},  # remotes behind one protocol; what a memory file is
    {"context"},  # where this run stands: memory dir, remote, project identity, settings
    {"privacy"},  # what may leave the machine and what may land (the gate, the secret scanner)
    {"sync"},  # making two sides the same
    {"retention", "admin", "claude"},  # what uses a sync: compaction, archives, forget, Claude Code
    {"cli"},  # Typer and Rich: parse, call, render
    {"entry", "__main__", ""},  # the console script and `python -m memsync`
]
TIER = {part: n for n, parts in enumerate(TIERS) for part in parts}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["memsync", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str:
    """The module an import names (`memsync.sync.engine.Engine` → `memsync.sync.engine`)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module imported, whether it runs), for every memsync import in the file."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, runs: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                # the branches' statements themselves, not only what is inside them
                visit(ast.Module(body=child.body, type_ignores=[]), False)
                visit(ast.Module(body=child.orelse, type_ignores=[]), runs)
                continue
            if isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                if child.module.split(".")[0] == "memsync":
                    for alias in child.names:
                        found.append((_resolve(f"{child.module}.{alias.name}"), runs))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "memsync":
                        found.append((_resolve(alias.name), runs))
            visit(child, runs)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return found


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to: `memsync.sync.engine` → sync."""
    return module.split(".")[1] if "." in module else ""


def test_every_part_of_the_tree_has_a_tier():
    assert {_part(m) for m in MODULES} <= set(TIER)


def test_every_import_points_down():
    upward = [
        f"{module} imports {target} ({_part(module)} may not use {_part(target)})"
        for module, imports in GRAPH.items()
        for target, _ in imports
        if _part(target) != _part(module) and TIER[_part(target)] > TIER[_part(module)]
    ]
    assert upward == []


def _cycles(edges: dict[str, list[str]]) -> list[set[str]]:
    """The loops as strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in edges.get(module, []):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_back():
    """No loop between modules, package `__init__` modules included. An import that runs
    counts, at the top or inside a function; one under `if TYPE_CHECKING:` never runs (a
    stage of the sync engine names `Engine` in its signatures that way), so it may close a
    loop, but it still has to point down (the test above)."""
    runtime = {
        module: sorted({target for target, runs in imports if runs and target != module})
        for module, imports in GRAPH.items()
    }
    assert [sorted(c) for c in _cycles(runtime)] == []


def test_the_cycle_search_finds_a_loop():
    """The loop test passes for the right reason: the search sees a loop when there is one."""
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert _cycles(edges) == [{"a", "b", "c"}]


def test_no_module_takes_a_name_from_its_own_package():
    through_init = [
        f"{module} imports from {target}"
        for module, imports in GRAPH.items()
        if MODULES[module].name != "__init__.py"
        for target, _ in imports
        if target == module.rpartition(".")[0]
    ]
    assert through_init == []


def _defined(path: Path) -> set[str]:
    """The names a module defines itself at its top level (not those it imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


# Packages whose `__init__` is their one door: the rest of memsync calls the merge through
# `memsync.memory.merge` and nothing deeper (docs/merge.md).
FACADES = {"memsync.memory.merge"}


def test_names_come_from_the_module_that_defines_them():
    """A package `__init__` may re-export names for callers outside memsync; inside it, an
    import names the defining module, so the graph above shows the real dependency."""
    found: dict[str, list[str]] = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            package = MODULES.get(node.module)
            if package is None or package.name != "__init__.py" or node.module in FACADES:
                continue
            defined = _defined(package)
            for alias in node.names:
                if f"{node.module}.{alias.name}" not in MODULES and alias.name not in defined:
                    found.setdefault(module, []).append(f"{node.module}.{alias.name}")
    assert found == {}


MAX_LINES = 800


def test_no_module_is_over_the_size_limit():
    sizes = {
        path.relative_to(PACKAGE.parent).as_posix(): sum(
            1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        )
        for path in MODULES.values()
    }
    over = {name for name, lines in sizes.items() if lines > MAX_LINES}
    assert sorted(over) == []


def test_the_graph_is_read():
    """The test above passes for the right reason: the imports are there to check."""
    engine = {target for target, _ in GRAPH["memsync.sync.engine"]}
    assert "memsync.sync.planner" in engine and "memsync.context.identity" in engine
    assert ("memsync.sync.walk", True) in GRAPH["memsync.admin.forget"]  # a lazy import
    assert ("memsync.sync.engine", False) in GRAPH["memsync.sync.tombstones"]  # TYPE_CHECKING


def test_every_package_ships():
    """pyproject.toml lists the packages by hand (templates/ and skills/ ship from outside the
    tree): a package missing there works in an editable install and is gone from a real one."""
    tomllib = pytest.importorskip("tomllib")
    project = PACKAGE.parent / "pyproject.toml"
    settings = tomllib.loads(project.read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(settings["packages"])
    packages = {
        ".".join(["memsync", *init.parent.relative_to(PACKAGE).parts])
        for init in PACKAGE.rglob("__init__.py")
    }
    assert sorted(packages - listed) == []
