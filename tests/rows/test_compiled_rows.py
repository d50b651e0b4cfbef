"""The compiled kernels (`assay._native`) write exactly what the reference path writes:
`assay eval` run as a user runs it, in a subprocess with two workers, once with the
kernels and once with ASSAY_PURE_PYTHON=1 (no kernel), on plain rows, edge rows and
rows the reference path takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_rows_end_to_end import CRITERIA, EDGE_ROWS, _plain_rows, _write, stored_rows

from assay import _native
from compiled import REQUIRED

# The CLI, then which of the row path's kernels ran compiled (on stderr's last line).
EVAL = textwrap.dedent(
    """
    import json, sys
    from assay import _native
    from assay.cli import main
    sys.argv = ["assay", *sys.argv[1:]]
    try:
        main()
    finally:
        print(json.dumps(_native.compiled_modules()), file=sys.stderr)
    """
)


def _eval(tmp_path: Path, data: Path, tag: str, *, pure: bool) -> dict[str, Any]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    out, csv_path, db = tmp_path / f"{tag}.json", tmp_path / f"{tag}.csv", tmp_path / f"{tag}.db"
    env = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
    if pure:
        env[_native.PURE_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-c", EVAL, "eval", str(data), "--config", str(config),
         "--out", str(out), "--csv", str(csv_path), "--store", f"sqlite:///{db}",
         "--workers", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # some rows fail their thresholds
    compiled = json.loads(done.stderr.strip().splitlines()[-1])
    run_id = json.loads(out.read_bytes())["run_id"]
    return {
        "compiled": compiled,
        "json": out.read_bytes().replace(run_id.encode(), b"RUN"),
        "csv": csv_path.read_bytes(),
        "stored": stored_rows(db),
        "stdout": done.stdout.replace(run_id, "RUN"),
    }


def test_compiled_rows_write_what_the_reference_path_writes(tmp_path: Path) -> None:
    rows = _plain_rows(3_000, seed=11)
    for i, edge in enumerate(EDGE_ROWS):
        rows.insert(170 * i + 3, edge)
    data = _write(tmp_path / "rows.jsonl", rows)
    compiled = _eval(tmp_path, data, "compiled", pure=False)
    pure = _eval(tmp_path, data, "pure", pure=True)
    assert not any(pure["compiled"].values())
    ran_compiled = [name for name, yes in compiled["compiled"].items() if yes]
    if REQUIRED:
        # The CSV kernel (this run's CSV has rows of several shapes); the row kernel runs
        # in the workers (tests/rows/test_kernel.py).
        assert set(ran_compiled) == {*_native.MODULES, "assay.report.csv_kernel"}
    elif not ran_compiled:
        pytest.skip("assay was installed without compiling its row path (no C compiler)")
    assert compiled["json"] == pure["json"]
    assert compiled["csv"] == pure["csv"]
    assert compiled["stored"] == pure["stored"]
    assert len(compiled["stored"]) == len(rows) + 2  # the two odd lines too
    # The console shows timings (rows/s) besides the results: compare its results.
    assert compiled["stdout"].splitlines()[-3:] == pure["stdout"].splitlines()[-3:]
