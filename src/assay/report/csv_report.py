"""CSV of the Vertex-style rows: one line per row/invocation, `{metric}/score` columns."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path

from assay.core.results import EvalResult
from assay.report.atomic import replaced_whole


def row_columns(rows: Sequence[dict[str, object]]) -> list[str]:
    """Every column of every row, in first-seen order (rows may differ in columns)."""
    columns: dict[str, None] = {}
    for row in rows:
        for key in row:
            columns.setdefault(key, None)
    return list(columns)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(value)
    if isinstance(value, str | int):
        return str(value)
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_none=True)
    # Lists and objects (trajectories, per-chunk ratings) stay machine-readable as JSON.
    return json.dumps(value, ensure_ascii=False, default=str)


def write_csv(result: EvalResult, path: str | Path) -> Path:
    """Write `result.rows` as CSV to `path`."""
    columns = row_columns(result.rows)
    target = Path(path)
    with (
        replaced_whole(target, "CSV") as tmp,
        tmp.open("w", encoding="utf-8", newline="") as handle,
    ):
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in result.rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
    return target
