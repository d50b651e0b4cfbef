"""assay's warnings reach the terminal as one `warning:` line each, no file/line noise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"


def test_a_foreign_criterion_key_is_one_warning_line_and_the_eval_runs(tmp_path: Path) -> None:
    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps({"criteria": {"response_match_score": {"threshold": 0.1, "criteria": "x"}}})
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay.cli",
            "eval",
            str(DATA / "mlflow_qa.csv"),
            "--config",
            str(config),
            "--no-store",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    warning_lines = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning_lines) == 1, proc.stderr
    assert "response_match_score" in warning_lines[0] and "'criteria'" in warning_lines[0]
    assert "AssayWarning" not in proc.stderr and "warnings.warn" not in proc.stderr
    assert "Traceback" not in proc.stderr
