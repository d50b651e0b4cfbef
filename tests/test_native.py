"""The compiled copies of the row path's modules (`assay._native`, built by
hatch_build.py at install time): loaded only while they match their source, never in
place of an edited one, and off with ASSAY_PURE_PYTHON=1. That they score exactly as
the source does is tests/session/test_compiled_rows.py."""

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

import assay.model
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
    module = "assay.session.row_kernel"
    assert module in _native.KERNELS
    import assay.session

    finder = _native._CompiledFinder(tmp_path)
    package = assay.session.__path__
    stale = tmp_path / _native.built_name(module, _identity(module) + b"\n# older\n")
    stale.write_bytes(b"not loaded")
    assert finder.find_spec(module, package) is None
    current = tmp_path / _native.built_name(module, _identity(module))
    current.write_bytes(b"a copy of this source")
    spec = finder.find_spec(module, package)
    assert spec is not None and spec.origin == str(current)


def test_a_copy_built_from_another_source_is_never_loaded(tmp_path: Path) -> None:
    """An edited module (an editable install) runs as edited, not as its old build."""
    module = "assay.model.verdict"
    source = _identity(module)
    finder = _native._CompiledFinder(tmp_path)
    package = assay.model.__path__  # as the import system asks: within the package
    stale = tmp_path / _native.built_name(module, source + b"\n# an older version\n")
    stale.write_bytes(b"not loaded")
    assert finder.find_spec(module, package) is None
    current = tmp_path / _native.built_name(module, source)
    current.write_bytes(b"a copy of this source")
    spec = finder.find_spec(module, package)
    assert spec is not None and spec.origin == str(current)
    assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
    # Modules not in the list are left to the usual finders.
    assert finder.find_spec("assay.model.core", package) is None


def test_an_edited_declaration_makes_every_copy_stale() -> None:
    """The .pxd files (C types and fields shared between compiled modules) are part of
    every copy's identity, not only of their own module's."""
    declarations = sorted(SOURCES.glob("assay/**/*.pxd"))
    assert declarations, "the row path's modules declare their per-row types"
    for pxd in declarations:
        assert pxd.read_bytes() in _identity("assay.model.verdict")


def test_names_carry_the_source_hash_and_this_python() -> None:
    name = _native.built_name("assay.model.verdict", b"x = 1\n")
    assert name.startswith("assay.model.verdict.")
    assert name.endswith(importlib.machinery.EXTENSION_SUFFIXES[0])
    assert name != _native.built_name("assay.model.verdict", b"x = 2\n")


def test_the_compiled_modules_define_no_pydantic_models() -> None:
    """Cython's functions are not Python functions: pydantic cannot build a model whose
    methods are compiled, so such a module must stay out of the list (the options of
    the trajectory metrics live in `trajectory_options` for this)."""
    for name in _native.MODULES:
        text = _source(name).read_text(encoding="utf-8")
        assert "BaseModel" not in text and "MetricOptions)" not in text, name


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


def test_a_copy_reading_another_modules_objects_goes_stale_with_that_module() -> None:
    """A compiled module that cimports another (reads its objects as C structs) carries
    that module's Python source in its identity: editing `lean_rows.py` makes the copies
    of `lean_score`, `lean_encode` and the row kernel stale too, so no compiled code
    reads a Python object at C offsets."""
    base = _identity("assay.session.lean_score")
    assert _source("assay.session.lean_rows").read_bytes() in base
    assert "assay.session.lean_rows" in _native.cimported("assay.session.row_kernel")
    assert _native.cimported("assay.model.verdict") == []


STALE_SHOW = SHOW + "print(json.dumps(_native.stale_modules()))\n"


def test_an_edited_row_module_runs_as_python_and_says_so_once(tmp_path: Path) -> None:
    """The editable-install case: a row-path source edited without rebuilding. Every
    copy that depends on it is left unloaded (the Python source runs, with the same
    results), and assay says once on stderr which command rebuilds them."""
    if not _built_for_current_sources():
        pytest.skip("assay was installed without compiling its row path")
    copy = tmp_path / "src"
    shutil.copytree(SOURCES / "assay", copy / "assay", ignore=shutil.ignore_patterns("__pycache__"))
    edited = copy / "assay" / "session" / "lean_rows.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# an edit, not rebuilt\n")
    environment = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
    environment["PYTHONPATH"] = str(copy)
    done = subprocess.run(
        [sys.executable, "-c", STALE_SHOW], env=environment, capture_output=True, text=True,
        timeout=120, check=True, cwd=tmp_path,
    )  # fmt: skip
    shown, stale = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    for name in ("lean_rows", "lean_score", "lean_encode"):
        name = f"assay.session.{name}"
        assert shown[name] is False, name
    assert "assay.session.row_kernel" not in shown  # a kernel without a current copy
    assert shown["assay.model.verdict"] is True  # unrelated copies still load
    assert set(stale) >= {"assay.session.lean_rows", "assay.session.lean_score"}
    warnings = [line for line in done.stderr.splitlines() if "older than its source" in line]
    assert len(warnings) == 1, done.stderr
    assert _native.REBUILD in warnings[0]
