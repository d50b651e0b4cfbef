"""A binary wheel built as a publisher builds it (`pip wheel . --no-deps`, through the
build hook `hatch_build.py`) carries the compiled row path, and installed into a fresh
environment runs it compiled: the wheel is platform-tagged, holds one compiled copy of
every module of `assay._native.MODULES` and `KERNELS` named after its current source,
and, installed, passes tests/wheel_smoke.py (cibuildwheel's test-command) and prints
what the source tree prints for `assay eval` of the recorded example.

Offline: the build runs without build isolation on this interpreter's hatchling, Cython
and setuptools (`dev`), and the fresh environment reads assay's dependencies from this
interpreter's site-packages, so nothing is downloaded."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from assay import _native
from compiled import REQUIRED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "tests" / "wheel_smoke.py"
EVAL = ["-m", "assay", "eval", str(ROOT / "examples" / "recorded" / "home_rows.jsonl")]
EVAL += ["-m", "trajectory_exact_match", "--no-store"]


def _build_tools() -> None:
    """Skip (fail under ASSAY_REQUIRE_COMPILED) where the build's tools are missing."""
    missing = [name for name in ("hatchling", "Cython", "setuptools") if not _importable(name)]
    if not missing:
        return
    if REQUIRED:
        raise AssertionError(f"cannot build a wheel offline: {missing} not installed")
    pytest.skip(f"cannot build a wheel offline here: {', '.join(missing)} not installed")


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what would change the build or the import:
    no checkout on PYTHONPATH, no pure-Python switches."""
    drop = {"PYTHONPATH", "ASSAY_BUILD_PURE", _native.PURE_ENV, "COLUMNS"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _run(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=1200)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _build_tools()
    dist, scratch = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("scratch")
    command = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "-w", str(dist)]
    # CFLAGS as [tool.cibuildwheel] sets them; a scratch TMPDIR to see what is left there.
    cflags = (os.environ.get("CFLAGS", "") + " -g0").strip()
    env = _env(CFLAGS=cflags, TMPDIR=str(scratch), TEMP=str(scratch), TMP=str(scratch))
    done = _run(command, env=env, cwd=dist)
    assert done.returncode == 0, done.stdout + done.stderr
    # The build hook compiled into a scratch directory and removed it with the wheel made.
    assert not list(scratch.rglob("*_built*")), list(scratch.rglob("*"))
    (built,) = dist.glob("assay-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel installed and, for its dependencies, this
    interpreter's site-packages after its own (a path line, so this interpreter's
    editable install of assay stays out of it). Its python."""
    root = tmp_path_factory.mktemp("venv")
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    assert done.returncode == 0, done.stderr
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    shared = sysconfig.get_paths()["purelib"]
    (Path(site.stdout.strip()) / "_assay_test_deps.pth").write_text(shared + "\n")
    command = [sys.executable, "-m", "pip", "--python", str(python), "install"]
    command += ["--no-deps", "--no-index", str(wheel)]
    done = _run(command, env=_env())
    assert done.returncode == 0, done.stdout + done.stderr
    return python


def test_the_wheel_is_platform_tagged(wheel: Path) -> None:
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/WHEEL")]
        metadata = archive.read(name).decode()
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert "Root-Is-Purelib: false" in metadata
    assert f"Tag: {python}-{python}-{platform}" in metadata, metadata


def test_the_wheel_holds_every_compiled_module_of_its_source(wheel: Path) -> None:
    expected = set()
    for module in (*_native.MODULES, *_native.KERNELS):
        suffix = ".pyx" if module in _native.KERNELS else ".py"
        source = (ROOT / "src" / (module.replace(".", "/") + suffix)).read_bytes()
        expected.add("assay/_built/" + _native.built_name(module, _native.identity(module, source)))
    with zipfile.ZipFile(wheel) as archive:
        built = {n for n in archive.namelist() if n.startswith("assay/_built/")}
        sources = set(archive.namelist())
    # Exactly the copies built for this wheel: none packed from the checkout's _built/.
    assert built == expected
    # The sources the loader hashes travel with them (a kernel's .pyx).
    for module in _native.KERNELS:
        assert module.replace(".", "/") + ".pyx" in sources


def test_the_installed_wheel_runs_compiled(venv: Path, tmp_path: Path) -> None:
    done = _run([str(venv), str(SMOKE), str(ROOT)], env=_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not Path(seen["assay"]).is_relative_to(ROOT)
    assert seen["compiled"] == dict.fromkeys((*_native.MODULES, *_native.KERNELS), True)


def test_the_installed_wheel_prints_what_the_source_prints(venv: Path, tmp_path: Path) -> None:
    installed = _run([str(venv), *EVAL], env=_env(), cwd=tmp_path)
    source = _run([sys.executable, *EVAL], env=_env(PYTHONPATH=str(ROOT / "src")), cwd=tmp_path)
    assert installed.returncode == source.returncode == 1, installed.stderr + source.stderr
    assert installed.stdout == source.stdout
    assert "Result: 2 passed, 2 failed" in installed.stdout


def test_the_smoke_test_fails_on_the_source_and_on_pure_python(venv: Path, tmp_path: Path) -> None:
    """cibuildwheel's test-command catches a wheel whose copies do not load, and an assay
    imported from the checkout instead of the wheel."""
    pure = _run([str(venv), str(SMOKE), str(ROOT)], env=_env(**{_native.PURE_ENV: "1"}))
    assert pure.returncode == 1
    assert "not compiled: " + ", ".join(_native.KERNELS) in pure.stderr, pure.stderr
    source = _run([sys.executable, str(SMOKE), str(ROOT)], env=_env(PYTHONPATH=str(ROOT / "src")))
    assert source.returncode == 1
    assert "assay was imported from the source at" in source.stderr, source.stderr
