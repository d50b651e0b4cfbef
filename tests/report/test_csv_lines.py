"""The CSV report from rows' pre-encoded CSV lines (`RowSpool(csv=True)`): the same
bytes as the CSV made from the JSON rows, whatever the rows' shapes and cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.report.json_report import RowSpool, csv_line, dumps, write_csv_from

ROWS: list[dict[str, Any]] = [
    {"eval_set_id": "s", "case_id": "a", "run": 0, "invocation_id": None, "m/score": 1.0},
    {"eval_set_id": "s", "case_id": "b,c", "run": 0, "invocation_id": None, "m/score": 0.5,
     "m/explanation": 'missing call f(x="1, 2")'},
    {"eval_set_id": "s", "case_id": "ü 東京", "run": 0, "invocation_id": "i\r\n2",
     "reference": "", "m/score": None, "m/explanation": "line one\nline two"},
    {"eval_set_id": "s", "case_id": " lead", "run": 1, "invocation_id": None,
     "m/score": float("nan"), "n/score": 2.0, "n/total": [1, {"k": None}], "flag": True},
    {"eval_set_id": "s", "case_id": "d", "run": 0, "invocation_id": None, "m/score": 1.0},
]  # fmt: skip


def _csv(tmp_path: Path, rows: list[dict[str, Any]], *, lines: bool, tag: str) -> bytes:
    spool = RowSpool(tmp_path / f"{tag}.json", csv=lines)
    for row in rows:
        line = dumps(row) + b"\n"
        spool.add_encoded(tuple(row), line, csv_line(row) if lines else None)
    target = write_csv_from(spool, tmp_path / f"{tag}.csv")
    spool.close()
    return target.read_bytes()


def test_csv_lines_make_the_csv_the_json_rows_make(tmp_path: Path) -> None:
    made = _csv(tmp_path, ROWS, lines=True, tag="lines")
    assert made == _csv(tmp_path, ROWS, lines=False, tag="json")
    header = made.split(b"\r\n")[0].decode()
    # The union of the columns, first seen first.
    assert header.split(",")[-3:] == ["n/score", "n/total", "flag"]
    assert not list(tmp_path.glob(".*partial"))  # the spool's files are gone


@pytest.mark.parametrize(
    "rows",
    [
        # A row without a CSV line (a resumed run's earlier rows) ...
        "missing",
        # ... or with a field too long to read back: the CSV comes from the JSON rows.
        "long",
    ],
)
def test_the_json_rows_make_the_csv_when_lines_cannot(tmp_path: Path, rows: str) -> None:
    data = [dict(r) for r in ROWS]
    spool = RowSpool(tmp_path / "r.json", csv=True)
    if rows == "long":
        data[1]["m/explanation"] = "x" * 200_000
    for i, row in enumerate(data):
        given = None if rows == "missing" and i == 2 else csv_line(row)
        spool.add_encoded(tuple(row), dumps(row) + b"\n", given)
    assert spool.csv_lines is None
    made = write_csv_from(spool, tmp_path / "r.csv").read_bytes()
    spool.close()
    assert made == _csv(tmp_path, data, lines=False, tag="json")


_WIDE = {"eval_set_id": "s", "case_id": "a", "run": 0, "invocation_id": None,
         "reference": "r", "m/score": 1.0, "m/explanation": None}  # fmt: skip
_ODD_CELLS = ["plain", 'say "hi", then\r\nleave', "ü 東京\n", "", " lead", "nul\x00here",
              'half " quote', "comma, only", "cr\ronly"]  # fmt: skip


@pytest.mark.parametrize(
    "order",
    [
        # One shape, the usual run: its lines are spooled and copied as they are.
        "one shape",
        # The first shape has every column; a narrower one comes later, then the first
        # again: the first rows are copied, the rest put under the columns.
        "wide first",
        # A narrower shape first: its lines cannot be copied under the union.
        "narrow first",
    ],
)
def test_rows_of_one_shape_are_copied_as_the_json_rows_make_them(
    tmp_path: Path, order: str
) -> None:
    wide = [
        {**_WIDE, "case_id": f"c{i}", "m/explanation": cell} for i, cell in enumerate(_ODD_CELLS)
    ]
    narrow = {k: v for k, v in _WIDE.items() if k != "reference"}
    rows = {
        "one shape": wide,
        "wide first": [*wide[:3], narrow, *wide[3:]],
        "narrow first": [narrow, *wide],
    }[order]
    spool = RowSpool(tmp_path / "plain.json", csv=True)
    for row in rows:
        spool.add_encoded(tuple(row), dumps(row) + b"\n", csv_line(row))
    copied = {"one shape": sum(len(csv_line(r)) for r in wide), "wide first": None,
              "narrow first": len(csv_line(narrow))}[order]  # fmt: skip
    if copied is None:
        copied = sum(len(csv_line(r)) for r in wide[:3])
    assert spool.plain_csv_bytes == copied
    made = write_csv_from(spool, tmp_path / "plain.csv").read_bytes()
    spool.close()
    assert made == _csv(tmp_path, rows, lines=False, tag="json")
    assert made.count(b'"say ""hi"", then\r\nleave"') == 1


@pytest.mark.parametrize("seed", range(4))
def test_random_cells_and_shapes_make_the_csv_the_json_rows_make(tmp_path: Path, seed: int) -> None:
    import random

    rng = random.Random(seed)
    alphabet = ['"', ",", "\r", "\n", " ", "a", "é", "\x00", '""', ",,"]
    keys = ["eval_set_id", "case_id", "m/score", "m/explanation", "n/score", "n/explanation"]
    rows = []
    for i in range(60):
        shape = [k for k in keys if k in keys[:3] or rng.random() < 0.5]
        rows.append({
            k: "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            if k.endswith(("explanation", "case_id")) else (i if k == "m/score" else "s")
            for k in shape
        })  # fmt: skip
    made = _csv(tmp_path, rows, lines=True, tag=f"lines{seed}")
    assert made == _csv(tmp_path, rows, lines=False, tag=f"json{seed}")
