"""The tree is the architecture (docs/design.md): every import points down, and no module
imports itself back through others. Read from the source with `ast`, so a lazy import inside a
function counts as much as one at the top; an import under `if TYPE_CHECKING:` never runs, so it
may close a loop, but it still has to point down."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_no_module_imports_itself_back():
    edges = {
        module: {target for target, runs in imports if runs and target != module}
        for module, imports in GRAPH.items()
    }
    # a package's __init__ runs before its modules: `memsync.sync` → its modules is no loop
    cycles = []
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            walk(module, [module])
    assert cycles == []


def test_the_graph_is_read():
    """The test above passes for the right reason: the imports are there to check."""
    engine = {target for target, _ in GRAPH["memsync.sync.engine"]}
    assert "memsync.sync.planner" in engine and "memsync.privacy.gate" in engine
    assert ("memsync.sync.walk", True) in GRAPH["memsync.admin.forget"]  # a lazy import
    assert ("memsync.sync.engine", False) in GRAPH["memsync.sync.tombstones"]  # TYPE_CHECKING
