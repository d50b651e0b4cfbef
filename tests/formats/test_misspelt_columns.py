"""`misspelt_columns`: a column that is a near miss of one the format reads, and absent."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from assay.errors import AssayWarning
from assay.formats import load
from assay.formats._columns import misspelt_columns
from assay.formats.vertex import KNOWN_COLUMNS


@pytest.mark.parametrize(
    ("columns", "found"),
    [
        (["prompt", "response", "refrence"], [("refrence", "reference")]),
        (["promt", "respone", "reference"], [("promt", "prompt"), ("respone", "response")]),
        (["prompt", "predicted_trajectroy"], [("predicted_trajectroy", "predicted_trajectory")]),
        # the real column is there too: the other is ordinary metadata
        (["prompt", "reference", "refrence"], []),
        # not close to any column: metadata
        (["prompt", "response", "reference", "category", "topic", "difficulty"], []),
        ([], []),
    ],
)
def test_near_misses_of_absent_columns(columns: list[str], found: list[tuple[str, str]]) -> None:
    assert misspelt_columns(columns, KNOWN_COLUMNS) == found


def test_loading_warns_once_per_column_and_keeps_the_cell_as_metadata(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(f'{{"prompt": "q{i}", "response": "a", "refrence": "a"}}\n' for i in range(250))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (evalset,) = [load(path)]
    said = [str(w.message) for w in caught if issubclass(w.category, AssayWarning)]
    assert said == [
        f"{path}: column 'refrence' is not one assay reads (did you mean 'reference'?); it is"
        " kept as case metadata, and no case has a reference"
    ]
    assert evalset.cases[0].metadata["refrence"] == "a"
