"""The import graph of src/assay: no cycles, and every arrow points down the layers.

The floors below are the layer order of ARCHITECTURE.md, bottom first. A room (a
top-level module or package of assay) may import rooms on lower floors only; rooms on
one floor do not import each other. Imports are read with `ast`, including those made
inside functions and under TYPE_CHECKING: a lazy or type-only import is still an arrow
of the picture. A new room must be given its floor here.

Cython sources count too: a `.pyx` kernel's and a `.pxd` declaration's `import` and
`cimport` lines are arrows of the module they compile to. And a package's private parts
stay its own: importing a private module (`assay.x._y`) or a private name (`from
assay.x.y import _z`) from another package fails unless `PRIVATE_CROSSINGS` lists it
with the reason it is allowed.
"""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"

FLOORS: list[set[str]] = [
    {"errors", "_version", "_native", "_lazy", "_malloc", "redact"},
    {"core"},
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


PRIVATE_CROSSINGS: dict[tuple[str, str], str] = {
    # (importing module, imported private module or module.name): why it is allowed.
    # formats' helpers the callers above it share; to be made public in formats.
    ("assay.api", "assay.formats._common.gc_paused"): "the loaders' pause of the collector",
    ("assay.session.streaming", "assay.formats._common.gc_paused"): "the loaders' GC pause",
    ("assay.cli.convert", "assay.formats._loss.by_field"): "convert's report of lost fields",
    ("assay.engine.calibrate", "assay.formats._common.read_text"): "labels read as data are",
    ("assay.engine.calibrate", "assay.formats._common.type_name"): "the same error wording",
    ("assay.service.wire.ces_csv", "assay.formats._common.read_any_csv_cell"): (
        "CES CSV cells read as the CES reader reads them"
    ),
    ("assay.service.wire.ces_generate", "assay.formats._fit_ces.fit"): (
        "generated CES cases fitted as loaded ones are"
    ),
    ("assay.service._results", "assay.formats._ces_write._dump_call"): (
        "CES results carry calls as the CES writer writes them"
    ),
    ("assay.service._results", "assay.formats._ces_write._dump_expectation"): (
        "CES results carry expectations as the CES writer writes them"
    ),
    ("assay.simulation.personas", "assay.formats._adk_content.read_persona"): (
        "personas read as ADK's files carry them"
    ),
    ("assay.simulation.personas", "assay.formats._common.Loc"): "errors located as formats do",
    ("assay.simulation.personas", "assay.formats._common.read_structured"): "YAML/JSON reading",
    ("assay.rows.batch", "assay.formats._common.gc_paused"): "the loaders' GC pause",
    ("assay.cli.labels", "assay.formats._common.read_text"): "labels read as data are",
    ("assay.cases.generate_definition", "assay.formats._common.read_structured"): (
        "an agent's description file read as YAML/JSON eval files are"
    ),
    ("assay.cases.sources", "assay.formats._common.Loc"): "errors located as formats do",
    ("assay.cases.generate_write", "assay.formats._loss.refuse"): (
        "what a format cannot hold refused as `assay convert` refuses it"
    ),
    ("assay.cases.edit", "assay.formats._vertex_write.rows"): (
        "Vertex rows of new cases written as the Vertex writer writes them"
    ),
    ("assay.cases.sources", "assay.formats._ces_parts.read_call"): (
        "a CES conversation's calls read as the CES reader reads them"
    ),
    ("assay.cases.sources", "assay.formats._ces_parts.read_response"): (
        "a CES conversation's responses read as the CES reader reads them"
    ),
    ("assay.store.labels", "assay.formats._vertex_history.dump_history"): (
        "a labelled case's earlier turns as the Vertex history column holds them"
    ),
    # agents' loader: an agent's definition is imported as `--agent` imports it.
    ("assay.cases.generate_definition", "assay.agents.loader._import_object"): (
        "`--agent MODULE:ATTR` resolved as assay eval resolves it"
    ),
    # The row kernel writes the store's and the JSON report's documents byte for byte
    # (tests/rows/test_kernel.py): it reuses their encoders rather than copy them.
    ("assay.rows.kernel", "assay.report.json_report._metric_entry"): "a report metric",
    ("assay.rows.kernel", "assay.report.json_report._overall_entry"): "a report metric",
    ("assay.rows.kernel", "assay.store._document.FORMAT"): "the stored format's tag",
    ("assay.rows.kernel", "assay.store._document.metric_entry"): "a stored metric entry",
    ("assay.rows.kernel", "assay.store._json.dumps_bytes"): "the store's JSON encoding",
    ("assay.rows.plan", "assay.metrics.trajectory._ALGORITHMS"): (
        "the trajectory metrics' matching modes the kernel computes itself"
    ),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, list[Path]]:
    """module -> its source files: the `.py`, or a kernel's `.pyx`, and any `.pxd`."""
    found: dict[str, list[Path]] = {}
    for suffix in ("*.py", "*.pyx", "*.pxd"):
        for path in SRC.rglob(suffix):
            if "_built" not in path.relative_to(SRC).parts:
                found.setdefault(_module_name(path), []).append(path)
    return found


SOURCES = _sources()
MODULES = {module: paths[0] for module, paths in SOURCES.items()}


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


_CYTHON_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<module>[\w.]+)[ \t]+c?import[ \t]+(?P<names>[^#\n]+)"
    r"|c?import[ \t]+(?P<modules>[^#\n]+))",
    re.MULTILINE,
)


def _one_line(match: re.Match[str]) -> str:
    """A parenthesized import list on one line, the newlines it had after it (so later
    lines keep their numbers)."""
    names = match.group(2)
    return f"{match.group(1)} {names.replace(chr(10), ' ')}" + "\n" * names.count("\n")


def _statements(path: Path) -> Iterator[tuple[str, list[str], int, int]]:
    """(module, names, level, line) per import: `import a.b` is ("", ["a.b"], 0, line)."""
    if path.suffix == ".py":
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                yield "", [alias.name for alias in node.names], 0, node.lineno
            elif isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
                yield node.module or "", names, node.level, node.lineno
        return
    # Cython: one import per line (parenthesized lists joined first); no relative ones.
    text = re.sub(r"(c?import[ \t]*)\(([^)]*)\)", _one_line, path.read_text())
    for match in _CYTHON_IMPORT.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match.group("module"):
            names = [n.split(" as ")[0].strip() for n in match.group("names").split(",")]
            names = [n for n in names if n]
            yield match.group("module"), names, 0, line
        else:
            yield (
                "",
                [n.split(" as ")[0].strip() for n in match.group("modules").split(",")],
                0,
                line,
            )


def _imported(module: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """(imported assay module, what exactly: a module or `module.name`, line)."""
    is_package = path.stem == "__init__"
    package = module if is_package else module.rpartition(".")[0]
    for source, names, level, line in _statements(path):
        if not source and not level:
            for name in names:
                target = _known(name)
                if target is not None:
                    yield target, name, line
            continue
        if level:
            base = package.split(".")[: len(package.split(".")) - level + 1]
            source = ".".join([*base, *([source] if source else [])])
        for name in names:
            # `from assay.service import runs` imports the module assay.service.runs.
            target = _known(f"{source}.{name}") or _known(source)
            if target is not None:
                yield target, f"{source}.{name}", line


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """(imported assay module, line) for every import statement of `module`'s sources."""
    for path in SOURCES[module]:
        for target, _, line in _imported(module, path):
            yield target, line


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}; a module's own packages left out
    (importing a submodule runs its package's __init__ anyway: not an arrow), except
    the root package `assay`, whose __init__ re-exports the top of the house: a module
    importing a name from it (`from assay import x`) leans on the floor above all."""
    graph: dict[str, dict[str, int]] = {}
    for module in MODULES:
        arrows: dict[str, int] = {}
        for target, line in _imports(module):
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
    assert "assay.core.cases" in graph["assay.engine.runner"]
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


def _private_crossings() -> list[tuple[str, str, str]]:
    """(importer, private thing imported from another room, where) for every import
    of a private module or name across rooms."""
    found = []
    for module, paths in sorted(SOURCES.items()):
        for path in paths:
            for target, what, line in _imported(module, path):
                if _room(target) == _room(module):
                    continue
                inner = what.split(".")[2:]  # below the room: assay.<room>.<...>
                if any(part.startswith("_") and not part.startswith("__") for part in inner):
                    where = f"{path.relative_to(SRC.parents[1])}:{line}"
                    found.append((module, what, where))
    return found


def test_the_walk_reads_cython_sources(tmp_path: Path) -> None:
    kernels = [m for m, paths in SOURCES.items() if paths[0].suffix == ".pyx"]
    assert kernels, "no .pyx kernel found: the walk of Cython sources reads nothing"
    graph = _graph()
    assert any(graph[kernel] for kernel in kernels), "no import read from any .pyx"
    probe = tmp_path / "probe.pyx"
    probe.write_text(
        "from a.b cimport (c,\n    d)\nimport x.y as z, w  # note\ncdef f(int (x)):\n    pass\n"
    )
    assert list(_statements(probe)) == [("a.b", ["c", "d"], 0, 1), ("", ["x.y", "w"], 0, 3)]


def test_no_private_part_is_imported_from_another_package() -> None:
    crossings = _private_crossings()
    unlisted = [f"{where} {m} imports {what}" for m, what, where in crossings
                if (m, what) not in PRIVATE_CROSSINGS]  # fmt: skip
    assert not unlisted, (
        "private modules or names imported across packages (make them public in their "
        "package, or list them in PRIVATE_CROSSINGS with the reason):\n" + "\n".join(unlisted)
    )
    stale = sorted(set(PRIVATE_CROSSINGS) - {(m, what) for m, what, _ in crossings})
    assert not stale, f"PRIVATE_CROSSINGS lists imports that no longer exist: {stale}"


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
