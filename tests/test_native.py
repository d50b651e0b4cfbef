"""The compiled kernels of the row path (`assay._native`, built by hatch_build.py at
install time): only `.pyx` kernels are compiled, each loaded only while it matches its
sources (its own, and those of the Python modules whose behaviour it repeats), never
in place of an edited one, and off with ASSAY_PURE_PYTHON=1. That they score exactly as
the reference path does is tests/rows/test_compiled_rows.py and tests/rows/test_kernel.py."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import assay.core
import assay.rows
from assay import _native
from compiled import REQUIRED

SOURCES = Path(_native.__file__).parent.parent

SHOW = textwrap.dedent(
    """
    import importlib, json
    from assay import _native
    for name in _native.MODULES:
        importlib.import_module(name)
    for name in _native.KERNELS:
        try:
            importlib.import_module(name)
        except ImportError:  # a kernel exists only compiled
            pass
    print(json.dumps(_native.compiled_modules()))
    """
)
EVERY = (*_native.MODULES, *_native.KERNELS)


def _source(module: str) -> Path:
    suffix = ".pyx" if module in _native.KERNELS else ".py"
    return SOURCES / (module.replace(".", "/") + suffix)


def _identity(module: str) -> bytes:
    return _native.identity(module, _source(module).read_bytes())


def _compiled_in_subprocess(**env: str) -> dict[str, bool]:
    environment = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV} | env
    done = subprocess.run(
        [sys.executable, "-c", SHOW], env=environment, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    shown: dict[str, bool] = json.loads(done.stdout)
    assert set(_native.MODULES) <= set(shown) <= set(EVERY)
    return shown


def _built_for_current_sources() -> list[str]:
    return [
        name
        for name in EVERY
        if (_native.BUILT / _native.built_name(name, _identity(name))).is_file()
    ]


def test_every_built_module_is_loaded_compiled() -> None:
    built = _built_for_current_sources()
    if REQUIRED:
        # CI installs assay as the README says: the install compiled every module.
        assert built == list(EVERY), "pip install -e . compiled only " + str(built)
    shown = _compiled_in_subprocess()
    # A module runs compiled when built; a kernel is there only when built.
    assert shown == {name: name in built for name in EVERY if name in built or name in shown}
    assert {name for name in _native.KERNELS if name in shown} == {
        name for name in _native.KERNELS if name in built
    }


def test_pure_python_on_request() -> None:
    shown = _compiled_in_subprocess(**{_native.PURE_ENV: "1"})
    assert not any(shown.values())
    assert set(shown) == set(_native.MODULES), "no kernel without its compiled copy"


def test_a_kernel_is_loaded_only_from_a_copy_of_its_current_source(tmp_path: Path) -> None:
    """A kernel has no Python source to fall back on: without a copy built from its
    current `.pyx`, its import fails and the Python code it stands in for runs."""
    module = "assay.rows.kernel"
    assert module in _native.KERNELS
    finder = _native._CompiledFinder(tmp_path)
    package = assay.rows.__path__
    stale = tmp_path / _native.built_name(module, _identity(module) + b"\n# older\n")
    stale.write_bytes(b"not loaded")
    assert finder.find_spec(module, package) is None
    current = tmp_path / _native.built_name(module, _identity(module))
    current.write_bytes(b"a copy of this source")
    spec = finder.find_spec(module, package)
    assert spec is not None and spec.origin == str(current)


def test_only_kernels_are_compiled() -> None:
    """No plain `.py` module is compiled (issue #34): the build compiles the `.pyx`
    kernels only, and no `.pxd` declares a Python module's objects as C types."""
    assert _native.MODULES == ()
    assert _native.KERNELS and all(_source(name).suffix == ".pyx" for name in _native.KERNELS)
    assert not sorted(SOURCES.glob("assay/**/*.pxd"))
    # Modules not in the list are left to the usual finders.
    finder = _native._CompiledFinder(SOURCES)
    assert finder.find_spec("assay.core.verdict", assay.core.__path__) is None


def test_a_kernel_goes_stale_with_every_module_it_repeats() -> None:
    """The row kernel repeats in C what Python modules compute and write: their sources
    are part of its identity, so an edit of any of them leaves it unloaded."""
    mirrored = _native.MIRRORS["assay.rows.kernel"]
    assert "assay.metrics.trajectory" in mirrored and "assay.store._document" in mirrored
    base = _identity("assay.rows.kernel")
    for name in mirrored:
        source = (SOURCES / (name.replace(".", "/") + ".py")).read_bytes()
        assert source in base, name
    assert _native.cimported("assay.rows.kernel") == []


def test_names_carry_the_source_hash_and_this_python() -> None:
    name = _native.built_name("assay.core.verdict", b"x = 1\n")
    assert name.startswith("assay.core.verdict.")
    assert name.endswith(importlib.machinery.EXTENSION_SUFFIXES[0])
    assert name != _native.built_name("assay.core.verdict", b"x = 2\n")


def test_the_build_asks_for_cython_only_when_it_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """hatch_build.py's hook adds Cython and setuptools to the build requirements, so an
    install with ASSAY_BUILD_PURE=1 (an offline wheelhouse) needs only hatchling."""
    spec = importlib.util.spec_from_file_location("_hatch_build", SOURCES.parent / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    ask = hook.CompiledModulesHook.dependencies
    monkeypatch.delenv("ASSAY_BUILD_PURE", raising=False)
    assert {d.split(">=")[0] for d in ask(None)} == {"cython", "setuptools"}
    monkeypatch.setenv("ASSAY_BUILD_PURE", "1")
    assert ask(None) == []


STALE_SHOW = SHOW + "print(json.dumps(_native.stale_modules()))\n"


@pytest.mark.parametrize(
    "edited", ["rows/kernel.pyx", "rows/plan.py", "metrics/call_equal.py", "store/_document.py"]
)
def test_an_edited_row_source_runs_the_reference_path_and_says_so_once(
    tmp_path: Path, edited: str
) -> None:
    """The editable-install case: a row-path source edited without rebuilding (the
    kernel's own, or one it repeats). The kernel is left unloaded (the reference path
    runs, with the same results), and assay says once on stderr which command rebuilds
    it; the other kernel still loads."""
    if "assay.rows.kernel" not in _built_for_current_sources():
        pytest.skip("assay was installed without compiling its row kernel")
    copy = tmp_path / "src"
    shutil.copytree(SOURCES / "assay", copy / "assay", ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / "assay" / edited
    path.write_text(path.read_text(encoding="utf-8") + "\n# an edit, not rebuilt\n")
    environment = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
    environment["PYTHONPATH"] = str(copy)
    environment.pop("ASSAY_QUIET_STALE", None)
    done = subprocess.run(
        [sys.executable, "-c", STALE_SHOW], env=environment, capture_output=True, text=True,
        timeout=120, check=True, cwd=tmp_path,
    )  # fmt: skip
    shown, stale = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert "assay.rows.kernel" not in shown  # a kernel without a current copy
    assert stale == ["assay.rows.kernel"]
    if "assay.report.csv_kernel" in _built_for_current_sources():
        assert shown["assay.report.csv_kernel"] is True  # unrelated copies still load
    warnings = [line for line in done.stderr.splitlines() if "older than its source" in line]
    assert len(warnings) == 1, done.stderr
    assert _native.REBUILD in warnings[0]
