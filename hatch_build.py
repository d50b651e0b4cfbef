"""Build hook: compile the recorded-row path's kernels with Cython (see src/assay/_native.py).

hatchling runs it for every wheel, editable or not (`pip install .`, `pip install -e .`).
The kernels listed in `assay._native.KERNELS` (Cython `.pyx` sources; no plain `.py`
module is compiled) are compiled with `-O2 -g0` into `assay/_built/`, each named after
its sources' hash, so a copy is used only while its sources are unchanged. When
compiling is not possible (no C compiler, no Cython, `ASSAY_BUILD_PURE=1`) the install
goes on without them and assay runs the reference Python path, with the same results.

Rebuild the copies of a source checkout by hand, e.g. after editing a kernel (or a
module it cimports) in an editable install:

    python hatch_build.py
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"


def _native() -> Any:
    # Loaded by path: the build environment has none of assay's dependencies.
    spec = importlib.util.spec_from_file_location("_assay_native", SRC / "assay" / "_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_modules(out: Path, *, jobs: int | None = None) -> list[Path]:
    """Compile `_native.KERNELS` (and `_native.MODULES`, none today) into `out`
    (replacing the copies there); the files."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    native = _native()
    jobs = jobs or min(4, os.cpu_count() or 1)
    sources = {name: SRC / (name.replace(".", "/") + ".py") for name in native.MODULES}
    sources.update({name: SRC / (name.replace(".", "/") + ".pyx") for name in native.KERNELS})
    _say(f"compiling {len(sources)} kernels with Cython ({jobs} jobs): " + ", ".join(sources))
    with tempfile.TemporaryDirectory(prefix="assay-build-") as tmp:
        extensions = cythonize(  # type: ignore[no-untyped-call]
            [
                Extension(name, [str(path)], extra_compile_args=_FLAGS)
                for name, path in sources.items()
            ],
            build_dir=str(Path(tmp) / "c"),
            include_path=[str(SRC)],  # the .pxd files one module cimports from another
            language_level=3,
            nthreads=jobs,
            quiet=True,
            # The source's annotations are for mypy: the compiled copies check types
            # only where a .pxd file declares them, so they accept what the source does.
            compiler_directives={"annotation_typing": False},
        )
        dist = Distribution({"ext_modules": extensions, "script_name": "hatch_build.py"})
        command = build_ext(dist)
        command.build_lib = str(Path(tmp) / "lib")
        command.build_temp = str(Path(tmp) / "obj")
        command.parallel = jobs
        command.ensure_finalized()
        command.run()
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("assay.*"):
            old.unlink()
        built = []
        for name, path in sources.items():
            target = out / native.built_name(name, native.identity(name, path.read_bytes()))
            shutil.copyfile(command.get_ext_fullpath(name), target)
            built.append(target)
    return built


_FLAGS = [] if sys.platform == "win32" else ["-O2", "-g0"]
"""The C compiler's flags (GCC, Clang): -g0, no debug information (most of the
compiler's time and of the copies' size); -O2 as Python's own builds. MSVC's defaults
already leave the debug information out."""


def _pure() -> bool:
    return os.environ.get("ASSAY_BUILD_PURE", "").strip() not in ("", "0")


def _say(message: str) -> None:
    print(f"assay build: {message}", file=sys.stderr)


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script, outside a build
    BuildHookInterface = object  # type: ignore[assignment,misc]


class CompiledModulesHook(BuildHookInterface):  # type: ignore[misc,valid-type,type-arg]
    """Compile the modules for the wheel being built (see the module docstring)."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        # Build requirements of their own, asked for only when compiling: with
        # ASSAY_BUILD_PURE=1 an offline install needs nothing beyond hatchling.
        return [] if _pure() else ["cython>=3.1", "setuptools>=70"]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if _pure():
            _say("ASSAY_BUILD_PURE is set: pure Python only")
            return
        editable = version == "editable"
        # An editable install imports the package from src/: the copies go there. A
        # wheel gets them from a scratch directory, removed once the wheel holds them.
        self._scratch = None if editable else Path(tempfile.mkdtemp(prefix="assay-wheel-"))
        out = SRC / "assay" / "_built" if self._scratch is None else self._scratch / "_built"
        try:
            built = compile_modules(out)
        except Exception as error:  # no compiler, no Cython, ...: the source runs as is
            _say(f"the row path's kernels were not compiled ({error}); the reference path runs")
            return
        _say(f"compiled {len(built)} kernels into {out}")
        if not editable:
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
            for path in built:
                build_data["force_include"][str(path)] = f"assay/_built/{path.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch: Path | None = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
            self._scratch = None


if __name__ == "__main__":
    for path in compile_modules(SRC / "assay" / "_built"):
        print(path.relative_to(ROOT))
