"""The import graph of src/assay: no cycles, and every arrow points down the layers.

The floors below are the layer order of ARCHITECTURE.md, bottom first. A room (a
top-level module or package of assay) may import rooms on lower floors only; rooms on
one floor do not import each other. Imports are read with `ast`, including those made
inside functions and under TYPE_CHECKING: a lazy or type-only import is still an arrow
of the picture. A new room must be given its floor here.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"

FLOORS: list[set[str]] = [
    {"errors", "_version", "_native", "_lazy", "_malloc", "redact"},
    {"model"},
    # Calling models: backends, the per-run registry of limits and retries, the reply
    # cache, reading model APIs' answers (below every caller).
    {"models"},
    {"config"},
    {"formats", "agents"},
    # Judges and the simulated user: both users of the model layer, neither of the other.
    {"judges", "simulation"},
    {"metrics"},
    {"engine"},
    {"store", "report"},
    # The fast tier of the recorded-row path: the row kernel, its plan and batches.
    {"rows"},
    # Above the engine and the store: a run's life (its sinks' protocol included) ...
    {"session"},
    # Authoring eval sets from stored runs, traces and conversations (`assay.cases`).
    {"cases"},
    # ... then the viewer and the sinks to other tools, which implement that protocol.
    {"view", "interop"},
    # `assay.adk` (and later `assay.mlflow`): public faces of interop for other tools' users.
    {"api_inputs", "service", "adk"},
    # `evaluate`'s streamed agent runs over row files, from its resolved inputs ...
    {"api_stream"},
    # ... and its streamed recorded rows, which share their row-file checks.
    {"api_rows"},
    {"api"},
    # assay.mlflow.scorers run `assay.evaluate` per row.
    # assay.red_team runs its attacks through `assay.aevaluate`.
    {"mlflow", "red_team"},
    {"assay"},  # the package itself: `import assay` re-exports the Python API
    {"cli", "testing"},
    {"__main__"},
]
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module `name` is, or the innermost module containing it (None: not assay)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _parse(path: Path) -> ast.Module:
    # The collector paused while the tree is built: CPython 3.11's AST conversion can
    # report a false "recursion depth mismatch" (SystemError) when a collection runs
    # finalizers in the middle of it, which earlier tests' garbage can make happen.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(), str(path))
    finally:
        if enabled:
            gc.enable()


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported assay module, line) for every import statement of `module`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            for alias in node.names:
                # `from assay.service import runs` imports the module assay.service.runs.
                target = _known(f"{name}.{alias.name}") or _known(name)
                if target is not None:
                    yield target, node.lineno


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}; a module's own packages left out
    (importing a submodule runs its package's __init__ anyway: not an arrow), except
    the root package `assay`, whose __init__ re-exports the top of the house: a module
    importing a name from it (`from assay import x`) leans on the floor above all."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        arrows: dict[str, int] = {}
        for target, line in _imports(module, path):
            own_package = module.startswith(target + ".") and target != "assay"
            if target != module and not own_package:
                arrows.setdefault(target, line)
        graph[module] = arrows
    return graph


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_walk_sees_the_imports_it_should() -> None:
    # Guards the test itself: relative, package, lazy and TYPE_CHECKING imports.
    graph = _graph()
    assert "assay.engine.runner" in graph["assay.engine"]  # relative or absolute re-export
    assert "assay.model.core" in graph["assay.engine.runner"]
    assert "assay.formats" in graph["assay.api_inputs"]  # `from assay import formats`, lazy
    assert len(MODULES) > 100


def test_every_room_has_a_floor() -> None:
    rooms = {_room(m) for m in MODULES}
    missing = sorted(rooms - FLOOR.keys())
    assert not missing, (
        f"rooms {missing} have no floor in FLOORS of {Path(__file__).name}: add each on"
        " the floor ARCHITECTURE.md gives it (above everything it imports)"
    )


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, f"modules importing each other in a circle: {cycles}"


def test_the_simulated_user_and_the_judges_do_not_lean_on_each_other() -> None:
    # One floor: an arrow either way between them is refused by the test below.
    assert FLOOR["simulation"] == FLOOR["judges"]
    assert FLOOR["models"] < FLOOR["judges"]
    graph = _graph()
    assert not [
        m for m in graph if _room(m) == "simulation" and any(_room(t) == "judges" for t in graph[m])
    ]


def test_every_import_points_down_the_layers() -> None:
    wrong = []
    for module, arrows in sorted(_graph().items()):
        here = _room(module)
        for target, line in sorted(arrows.items()):
            there = _room(target)
            if here != there and FLOOR.get(there, 0) >= FLOOR.get(here, 0):
                path = MODULES[module].relative_to(SRC.parents[1])
                wrong.append(f"{path}:{line} {module} imports {target} ({here} -> {there})")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)
