"""Smoke test of an installed assay wheel: cibuildwheel's `test-command` (pyproject.toml)
and `tests/test_wheel.py`, after each builds and installs a wheel.

    python tests/wheel_smoke.py PROJECT_DIR

Checks that `assay` is imported from the installed copy (not from PROJECT_DIR's
source), that every kernel of the row path (`assay._native.KERNELS`)
loads compiled, and that one `assay eval` of PROJECT_DIR's recorded example scores as
it does from the source. Prints one JSON line (where assay was imported from, which
modules run compiled) and exits 0, or says what is wrong and exits 1."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path("examples") / "recorded" / "home_rows.jsonl"
EXPECTED = "Result: 2 passed, 2 failed, 0 not evaluated (4 cases)"
"""The last line `assay eval EXAMPLE -m trajectory_exact_match` prints (from the source)."""


def compiled() -> dict[str, bool]:
    """Each module of the row path, imported: whether it runs compiled (a kernel that
    fails to import was not compiled: it exists only compiled)."""
    from assay import _native

    missing: dict[str, bool] = {}
    for name in (*_native.MODULES, *_native.KERNELS):
        try:
            importlib.import_module(name)
        except ImportError:
            missing[name] = False
    return {**_native.compiled_modules(), **missing}


def eval_example(project: Path) -> subprocess.CompletedProcess[str]:
    """`assay eval` of the recorded example, as a user runs it, in this interpreter."""
    command = [sys.executable, "-m", "assay", "eval", str(project / EXAMPLE)]
    command += ["-m", "trajectory_exact_match", "--no-store"]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        command, capture_output=True, text=True, encoding="utf-8", env=env, timeout=600
    )


def problems(project: Path) -> tuple[list[str], dict[str, object]]:
    """What is wrong with the installed wheel (nothing: an empty list), and what was seen."""
    import assay

    location = Path(assay.__file__).resolve().parent
    modules = compiled()
    seen: dict[str, object] = {"assay": str(location), "compiled": modules}
    found = []
    if project in location.parents:
        found.append(f"assay was imported from the source at {location}, not the wheel")
    not_compiled = [name for name, yes in modules.items() if not yes]
    if not_compiled:
        found.append("not compiled: " + ", ".join(not_compiled))
    done = eval_example(project)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 1 or not lines or lines[-1].strip() != EXPECTED:
        found.append(
            f"`assay eval {EXAMPLE}` exited {done.returncode} (expected 1: two cases fail)"
            f" and printed {lines[-1:] or 'nothing'} instead of {EXPECTED!r}; "
            f"stderr: {done.stderr.strip()[-2000:]}"
        )
    return found, seen


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python wheel_smoke.py PROJECT_DIR", file=sys.stderr)
        return 2
    found, seen = problems(Path(argv[1]).resolve())
    print(json.dumps(seen))
    for problem in found:
        print(f"wheel smoke test: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
