"""Misspelt columns of row files read a batch at a time (`formats.stream`): the
warning `vertex.load_data` gives a file it loads whole, from each file's first rows."""

from __future__ import annotations

from collections.abc import Sequence

from assay.errors import InputError
from assay.formats._columns import SAMPLE_ROWS, columns_of, warn_misspelt_columns
from assay.formats.stream import RowFile, _parse
from assay.formats.vertex import KNOWN_COLUMNS


def warn_misspelt_row_columns(files: Sequence[RowFile]) -> None:
    """One warning per misspelt column of each file (`_columns.misspelt_columns`), read
    from its first rows. A row that does not parse is left to the run, which reports it
    with its line."""
    for row_file in files:
        try:
            for batch in row_file.batches(SAMPLE_ROWS):
                rows = [_parse(batch, lineno, raw) for lineno, raw in batch.rows]
                warn_misspelt_columns(columns_of(rows), KNOWN_COLUMNS, str(row_file.path))
                break
        except InputError:
            continue
