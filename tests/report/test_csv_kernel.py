"""The CSV report of spooled rows of several shapes, made by the compiled CSV kernel
(`report.csv_kernel`) and by the Python loop it stands in for: the same bytes, whatever
the fields hold (commas, quotes, line ends) and wherever the spool's chunks end."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from assay.report import json_report
from assay.report.json_report import RowSpool, csv_line, dumps, write_csv_from
from compiled import kernel

remap_csv = kernel("assay.report.csv_kernel", "remap_csv", "the CSV kernel")

TEXTS = ["plain", "a, b", 'say "hi"', "two\nlines", "\r\nx", '",", ""', "", "é 東", "x" * 300]


def _rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"eval_set_id": "rows", "case_id": f"c{i}", "run": 0}
        row["prompt"] = rng.choice(TEXTS)
        for metric in ("m1", "m2", "m3"):
            if rng.random() < 0.9:
                row[f"{metric}/score"] = rng.choice([0.0, 1.0, 0.5, None, 1 / 3])
            if rng.random() < 0.4:  # an explanation for some rows only: several shapes
                row[f"{metric}/explanation"] = rng.choice(TEXTS)
        rows.append(row)
    return rows


def _spool(tmp_path: Path, rows: list[dict[str, Any]]) -> RowSpool:
    spool = RowSpool(tmp_path / "report.json", csv=True)
    batch = []
    for row in rows:
        shape = tuple(row)
        batch.append((shape, dumps(row) + b"\n", csv_line(row)))
        if len(batch) == 37:
            spool.add_encoded_rows(batch)
            batch = []
    spool.add_encoded_rows(batch)
    return spool


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("first_shape_rows", [0, 50])
def test_the_kernel_writes_the_python_loops_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, first_shape_rows: int
) -> None:
    rows = _rows(2_000, seed)
    # Rows of one shape first (spooled without their shape's number), then any.
    shape = tuple(rows[0])
    rows = [dict(rows[0], case_id=f"p{i}") for i in range(first_shape_rows)] + rows
    assert len({tuple(r) for r in rows}) > 3 and tuple(rows[0]) == shape
    spool = _spool(tmp_path, rows)
    made = write_csv_from(spool, tmp_path / "kernel.csv").read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(json_report, "_remapped_in_c", lambda *a: False)
        python = write_csv_from(spool, tmp_path / "python.csv").read_bytes()
    spool.close()
    assert made == python
    assert made.count(b"\r\n") >= len(rows) + 1


def test_records_cut_anywhere_give_the_same_lines() -> None:
    """A chunk of the spool ends anywhere, inside a quoted field too: the record cut
    there is left for the next chunk."""
    fields = [b"a", b'"x, ""y""\r\nz"', b"", b"3"]
    record = b"1," + b",".join(fields) + b"\r\n"
    data = b"".join([record, b"0,q,w,e,r\r\n"] * 40)
    picks = [(3, 2, 1, 0, 4), (0, 4, 1, 2, 3)]
    whole = remap_csv(data, 0, picks, 5, True)
    assert whole is not None and whole[1] == len(data)
    for cut in range(0, len(data), 7):
        first = remap_csv(data[:cut], 0, picks, 5, False)
        assert first is not None
        lines, used, plain = first
        rest = remap_csv(data[used:], plain, picks, 5, True)
        assert rest is not None
        assert lines + rest[0] == whole[0]


def test_a_record_it_does_not_know_is_left_to_python() -> None:
    assert remap_csv(b"x,1,2\r\n", 0, [(0, 1)], 2, True) is None  # no shape number
    assert remap_csv(b"5,1,2\r\n", 0, [(0, 1)], 2, True) is None  # an unknown shape
    assert remap_csv(b"0,1,2\n", 0, [(0, 1)], 2, True) is None  # not the csv line end
    assert remap_csv(b"0,1\r\n", 0, [(0, 4)], 2, True) is None  # a field it lacks
