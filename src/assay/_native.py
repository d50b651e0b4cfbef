"""The compiled kernels of the recorded-row path, used only while they match their source.

Installing assay (`pip install .` or `pip install -e .`) compiles the Cython kernels in
`KERNELS` (`.pyx` sources: the row kernel, `assay/rows/kernel.pyx`, and the CSV
report's kernel, `assay/report/csv_kernel.pyx`) into `assay/_built/` (see
`hatch_build.py` at the project's root). No plain `.py` module is compiled: the
kernels are the only compiled code, and each stands in for Python code that does the
same thing (the reference path), which runs whenever the kernel is missing: no C
compiler or Cython at install time, another Python, `ASSAY_PURE_PYTHON=1`.

A compiled kernel is named after the SHA-256 of what it was built from (`identity`:
its source, every `.pxd` file of `KERNELS` and the source of every module it
`cimport`s; `assay.rows.kernel.<hash>.cpython-311-x86_64-linux-gnu.so`), and `install`
hooks an import finder that loads it only when that hash is the current one. A kernel
whose sources changed (an editable install, a patch) is therefore never loaded: assay
says once, on stderr, which command rebuilds it (`REBUILD`, or `pip install -e .`), and
runs the reference path meanwhile, with the same results.

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

MODULES: tuple[str, ...] = ()
"""Plain `.py` modules compiled with Cython: none. Compiling them gained nothing the
kernels do not (bench/README.md) and cost most of the build's time; the list stays
(empty) for the code and tests that read it."""

KERNELS = ("assay.report.csv_kernel", "assay.rows.kernel")
"""The modules compiled: Cython sources (`.pyx`) with no Python copy of their own, each
standing in for the reference path's Python code that does the same thing (the row
kernel for the ordinary metrics and writers of a plain row, the CSV report's
remapping of spooled lines). Loaded only while the compiled copy matches the source;
without it the import fails and the reference path runs."""

MIRRORS: dict[str, tuple[str, ...]] = {
    "assay.rows.kernel": (
        "assay.engine.aggregate",  # the report row (`case_rows`)
        "assay.metrics.call_equal",  # how two calls compare
        "assay.metrics.calldiff",  # the call diff that explains a trajectory score
        "assay.metrics.lexical",  # response_match_score
        "assay.metrics.tokenize",  # ROUGE-1's tokens
        "assay.metrics.trajectory",  # the trajectory algorithms
        "assay.core.verdict",  # a case's status from its metrics'
        "assay.report.json_report",  # the report's case (`case_to_adk`), the CSV line
        "assay.rows.plan",  # which metric the kernel computes
        "assay.store._document",  # the store's document
    ),
}
"""Per kernel, the Python modules whose behaviour it repeats in C (their arithmetic, or
the bytes they write). Their sources are part of the kernel's identity: an edit of any
of them leaves the built kernel unloaded until it is rebuilt (the reference path runs
meanwhile, and assay says so once), so an edit never changes a score or an output
through a kernel built before it."""

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
    """The compiled modules (`KERNELS`, `MODULES`) whose compiled layout `module`'s copy
    depends on: those it cimports (from its `.pyx` or `.pxd`), and theirs, in a stable
    order."""
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
                if other in (*MODULES, *KERNELS) and other != module and other not in seen:
                    seen.append(other)
                    todo.append(other)
    return sorted(seen)


def identity(module: str, source: bytes) -> bytes:
    """What `module`'s compiled copy is built from: its source, every `.pxd` file of the
    compiled modules (Cython's declarations: types and fields, which one module's
    compiled code may read from another's), the source of every module it cimports, and
    of every module whose behaviour it repeats (`MIRRORS`). So an edit of a module makes
    stale every copy that reads its objects as C structs or repeats what it does, not
    only its own: no compiled code ever reads an object at the offsets of an older
    layout, nor scores or writes a row as an older source did."""
    if not _DECLARATIONS:
        parts = []
        for name in (*MODULES, *KERNELS):
            pxd = _path_of(name, ".pxd")
            if pxd.is_file():
                parts.append(name.encode() + b"\0" + pxd.read_bytes())
        _DECLARATIONS.append(b"\0".join(parts))
    linked = [
        other.encode() + b"\0" + _path_of(other, suffix).read_bytes()
        for other in [*cimported(module), *MIRRORS.get(module, ())]
        for suffix in (".py", ".pyx")
        if _path_of(other, suffix).is_file()
    ]
    return b"\0".join([source, _DECLARATIONS[0], *linked])


REBUILD = "python hatch_build.py"
"""The command that compiles the copies again in a source checkout (or `pip install -e .`)."""

_stale: list[str] = []


def stale_modules() -> list[str]:
    """The modules found with a compiled copy built from an older source (so, for a
    kernel, not loaded: the reference path runs), in this process so far."""
    return list(_stale)


def _say_stale(module: str) -> None:
    """Say once per process that compiled copies are out of date: the results are the
    same, the row path is slower, and which command rebuilds them."""
    first = not _stale
    _stale.append(module)
    if first and os.environ.get("ASSAY_QUIET_STALE", "").strip() in ("", "0"):
        sys.stderr.write(
            f"assay: the compiled copy of {module} is older than its source (or a module it "
            f"reads from); running the reference Python path instead: same results, slower. "
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
