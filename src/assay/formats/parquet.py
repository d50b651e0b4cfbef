"""Row files in Parquet (Vertex or MLflow rows), read with pyarrow (`assay[parquet]`).

A Parquet file is a table: each row is one Vertex row (`prompt`, `response`,
`reference`, `predicted_trajectory`, ...) or one MLflow row (`inputs`, `outputs`,
`expectations`), exactly as the same row in JSON lines. Rows are read a record batch
at a time (`iter_rows`), so a streamed run (`formats.stream`) never holds the file;
`read_rows` reads them all for the formats that load a file whole (MLflow rows).

Cells become Python values as pyarrow gives them (`to_pylist`): lists, nested objects
(struct and map columns) and JSON strings (trajectories written as text) are all
read as the JSON lines reader would read them. A null cell counts as an absent
column, as an empty CSV cell does. A struct column gives every row all the struct's
fields, null where a row had none: write tool arguments that vary from call to call as
a map or as JSON text so that a call does not gain null arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import InputError

if TYPE_CHECKING:
    from pyarrow.parquet import ParquetFile

PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
INSTALL_HINT = "pip install -e '.[parquet]'"
READ_ROWS = 1000
"""Rows per record batch read (a few hundred KB of rows at a time)."""


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def _open(path: Path) -> ParquetFile:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"reading Parquet needs pyarrow: {INSTALL_HINT}", file=str(path)) from None
    try:
        return pq.ParquetFile(path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    except Exception as exc:  # pyarrow's ArrowInvalid & co: not a Parquet file
        raise InputError(
            f"not a readable Parquet file ({_one_line(exc)})",
            file=str(path),
            expected="a Parquet file of Vertex or MLflow rows (one row per case)",
        ) from None


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def count_rows(path: Path) -> int:
    """The number of rows, from the file's footer (nothing is decoded)."""
    return int(_open(path).metadata.num_rows)


def iter_rows(path: Path, batch_rows: int = READ_ROWS) -> Iterator[tuple[int, dict[str, object]]]:
    """Each row as `(row number, cells)`, numbered from 1, null cells left out."""
    parquet = _open(path)
    number = 0
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                number += 1
                yield number, {k: v for k, v in row.items() if v is not None}
    except InputError:
        raise
    except Exception as exc:  # a corrupt page: the rows before it were read
        raise InputError(
            f"cannot decode the Parquet data after row {number} ({_one_line(exc)})",
            file=str(path),
            path=f"row {number + 1}",
        ) from None


def head_rows(path: Path, count: int = 20) -> list[dict[str, object]]:
    """The first `count` rows (enough to tell the format)."""
    rows = []
    for _, cells in iter_rows(path, batch_rows=count):
        rows.append(cells)
        if len(rows) >= count:
            break
    return rows


def read_rows(path: Path) -> list[dict[str, object]]:
    """Every row of the file (for formats loaded whole)."""
    return [cells for _, cells in iter_rows(path)]
