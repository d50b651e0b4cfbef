"""Write the report files a run asked for (`--out`, `--junit`, `--csv`) in one call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assay.core.results import EvalResult
from assay.report.csv_report import write_csv
from assay.report.json_report import write_json
from assay.report.junit import write_junit


def write_reports(
    result: EvalResult,
    *,
    out: Path | None = None,
    junit: Path | None = None,
    csv_path: Path | None = None,
    eval_set_ids: Sequence[str] | None = None,
    eval_set_files: dict[str, str] | None = None,
) -> list[Path]:
    """Write each requested report; returns the paths written."""
    written = []
    if out is not None:
        written.append(
            write_json(result, out, eval_set_ids=eval_set_ids, eval_set_files=eval_set_files)
        )
    if junit is not None:
        written.append(write_junit(result, junit))
    if csv_path is not None:
        written.append(write_csv(result, csv_path))
    return written
