"""A CSV cell longer than Python csv's default limit (131,072 characters) is read.

The CSV format sets no limit on a cell; the limit was Python's (a process-wide
default), and `assay eval c.csv` and `assay convert` ended in a traceback "field larger
than field limit" with exit 1. Run as the real CLI, in a process of its own, so nothing
a test process set beforehand helps it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

CELL = 200_000


def _assay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _csv(path: Path) -> Path:
    long_text = "lorem ipsum " * (CELL // 12 + 1)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "response", "reference"])
        writer.writerow(["summarise", long_text, long_text])
        writer.writerow(["capital of France?", "Paris", "Paris"])
    return path


def test_eval_reads_a_200000_character_cell(tmp_path: Path) -> None:
    data = _csv(tmp_path / "c.csv")
    result = _assay("eval", str(data), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "field limit" not in result.stderr
    assert "2 passed" in result.stdout, result.stdout


def test_convert_keeps_the_whole_cell(tmp_path: Path) -> None:
    data = _csv(tmp_path / "c.csv")
    out = tmp_path / "rows.jsonl"
    result = _assay("convert", str(data), str(out), "--to", "vertex", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows[0]["response"]) >= CELL and rows[0]["response"] == rows[0]["reference"]
