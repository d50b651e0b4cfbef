"""Compiled copies of the recorded-row path's modules, used only while they match.

Installing assay (`pip install .` or `pip install -e .`) compiles the modules in
`MODULES` with Cython into `assay/_built/` (see `hatch_build.py` at the project's root).
They are the same Python source, compiled: the same code, the same results, about a
quarter less CPU per row on the recorded-row path (bench/README.md). Nothing else
changes, and assay runs the pure Python source whenever the compiled copy is missing:
no C compiler or Cython at install time, another Python, `ASSAY_PURE_PYTHON=1`.

A few `.pxd` files beside the sources (Cython's augmenting declarations) give the
compiled copies C types for the per-row objects and their fields; the pure Python
source ignores them.

A compiled copy is named after the SHA-256 of the source it was built from and of the
`.pxd` files (`identity`; `assay.session.lean_score.<hash>.cpython-311-x86_64-linux-gnu
.so`), and `install` hooks an import finder that loads it only when that hash is the
current one. An edited module (an editable install, a patch) therefore runs as edited,
never as a stale build; `pip install -e .` (or `python hatch_build.py`) compiles it
again.

This module imports only the standard library: the build hook loads it by path, in an
environment without assay's dependencies.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

MODULES = (
    "assay.engine.tally",
    "assay.formats.stream",
    "assay.metrics.call_equal",
    "assay.metrics.calldiff",
    "assay.metrics.lexical",
    "assay.metrics.stats",
    "assay.metrics.tokenize",
    "assay.metrics.trajectory",
    "assay.model.jsonvalue",
    "assay.model.verdict",
    "assay.report.json_stream",
    "assay.session.lean_encode",
    "assay.session.lean_rows",
    "assay.session.lean_score",
    "assay.session.stream_batch",
)
"""The modules compiled: the recorded-row path's per-row code (reading the rows, a
worker's batch loop, the lean row's reading, scoring and encoders, the trajectory
metrics and their call matching, ROUGE, the call diffs, the tally). Each
must be plain Python classes and functions: Cython's functions are not Python functions,
so a module defining pydantic models cannot be compiled."""

KERNELS = ("assay.report.csv_kernel", "assay.session.row_kernel")
"""Modules that exist only compiled: Cython sources (`.pyx`) for code with no Python
counterpart of its own, each standing in for pure Python code that does the same thing
(the row kernel for the lean row path, the CSV report's remapping of spooled lines).
Loaded, like `MODULES`, only while the compiled copy matches the source; without it the
import fails and the Python code runs."""

BUILT = Path(__file__).with_name("_built")
"""Where the compiled copies are (inside the package, in a source tree or installed)."""

PURE_ENV = "ASSAY_PURE_PYTHON"
"""Set to 1 to run the pure Python source even where compiled copies are installed."""

_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def source_hash(source: bytes) -> str:
    """The part of a compiled copy's name that ties it to its source."""
    return hashlib.sha256(source).hexdigest()[:16]


def built_name(module: str, source: bytes) -> str:
    """The file name of `module`'s compiled copy built from `source` (`identity`), for
    this Python."""
    return f"{module}.{source_hash(source)}{_SUFFIX}"


_DECLARATIONS: list[bytes] = []

_CIMPORT = re.compile(
    rb"^\s*(?:from\s+(assay(?:\.\w+)+)\s+cimport\b|cimport\s+(assay(?:\.\w+)+))", re.M
)


def _path_of(module: str, suffix: str) -> Path:
    return Path(__file__).parent.parent / (module.replace(".", "/") + suffix)


def cimported(module: str) -> list[str]:
    """The modules of `MODULES` whose compiled layout `module`'s compiled copy depends
    on: those it cimports (from its `.pyx` or `.pxd`), and theirs, in a stable order."""
    seen: list[str] = []
    todo = [module]
    while todo:
        name = todo.pop()
        for suffix in (".pyx", ".pxd"):
            path = _path_of(name, suffix)
            if not path.is_file():
                continue
            for match in _CIMPORT.finditer(path.read_bytes()):
                other = (match.group(1) or match.group(2)).decode()
                if other in MODULES and other != module and other not in seen:
                    seen.append(other)
                    todo.append(other)
    return sorted(seen)


def identity(module: str, source: bytes) -> bytes:
    """What `module`'s compiled copy is built from: its source, every `.pxd` file of
    `MODULES` (Cython's declarations: types and fields, which one module's compiled code
    may read from another's), and the Python source of every module it cimports. So an
    edit of a module makes stale every copy that reads its objects as C structs, not only
    its own: an edited `lean_rows.py` runs as Python, and so do the modules that would
    otherwise read its (now Python) objects at C offsets."""
    if not _DECLARATIONS:
        parts = []
        for name in MODULES:
            pxd = _path_of(name, ".pxd")
            if pxd.is_file():
                parts.append(name.encode() + b"\0" + pxd.read_bytes())
        _DECLARATIONS.append(b"\0".join(parts))
    linked = [
        other.encode() + b"\0" + _path_of(other, ".py").read_bytes()
        for other in cimported(module)
        if _path_of(other, ".py").is_file()
    ]
    return b"\0".join([source, _DECLARATIONS[0], *linked])


REBUILD = "python hatch_build.py"
"""The command that compiles the copies again in a source checkout (or `pip install -e .`)."""

_stale: list[str] = []


def stale_modules() -> list[str]:
    """The modules found with a compiled copy built from an older source (so running as
    pure Python, or, for a kernel, not at all), in this process so far."""
    return list(_stale)


def _say_stale(module: str) -> None:
    """Say once per process that compiled copies are out of date: the results are the
    same, the row path is slower, and which command rebuilds them."""
    first = not _stale
    _stale.append(module)
    if first and os.environ.get("ASSAY_QUIET_STALE", "").strip() in ("", "0"):
        sys.stderr.write(
            f"assay: the compiled copy of {module} is older than its source (or a module it "
            f"reads from); running the Python source instead: same results, slower. "
            f"Rebuild with `{REBUILD}` (or `pip install -e .`).\n"
        )


class _CompiledFinder:
    """Finds a compiled copy of a module in `MODULES` when its name carries the hash of
    the module's current source; otherwise leaves the module to the usual finders."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in KERNELS:
            origin = kernel_source(fullname, path)
        elif fullname in MODULES:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
                return None
            origin = Path(spec.origin)
        else:
            return None
        try:
            source = origin.read_bytes() if origin is not None else None
        except OSError:
            return None
        if source is None:
            return None
        built = self.directory / built_name(fullname, identity(fullname, source))
        if not built.is_file():
            # Not built, or built from another version of the source (or of a module
            # whose objects it reads as C structs): the Python source runs.
            if fullname not in _stale and any(self.directory.glob(f"{fullname}.*{_SUFFIX}")):
                _say_stale(fullname)
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(built))
        return importlib.machinery.ModuleSpec(fullname, loader, origin=str(built))


def kernel_source(fullname: str, path: Any = None) -> Path | None:
    """Where the `.pyx` source of the kernel module `fullname` is (beside its package's
    modules), or None."""
    package, _, name = fullname.rpartition(".")
    for directory in path or [str(Path(__file__).parent.parent / package.replace(".", "/"))]:
        candidate = Path(directory) / f"{name}.pyx"
        if candidate.is_file():
            return candidate
    return None


def install() -> None:
    """Hook the finder in (once), unless `ASSAY_PURE_PYTHON` asks for the source."""
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        return
    if not BUILT.is_dir():
        return
    if any(isinstance(finder, _CompiledFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _CompiledFinder(BUILT))


def compiled_modules() -> dict[str, bool]:
    """For each module of `MODULES` and `KERNELS` imported so far: whether it runs
    compiled (a kernel imported at all is compiled)."""
    return {
        name: not str(getattr(sys.modules[name], "__file__", "")).endswith(".py")
        for name in (*MODULES, *KERNELS)
        if name in sys.modules
    }
