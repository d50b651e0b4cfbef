"""Vertex row files read lazily, a batch of rows at a time (`assay eval` at scale).

`formats.load` reads a file whole into one `EvalSet`; a million recorded rows are then
gigabytes of objects held for the whole run. A `RowFile` (JSON lines or CSV of Vertex
rows) is instead read in batches of raw lines: the lines travel cheaply to worker
processes, which parse them and build the cases (`batch_cases`) exactly as `load`
would — the same case ids (`row-{index}` for rows without one), fields and checks — so
the scores, store and reports of a streamed run equal those of a loaded one.

A malformed row stops the batch at that row: `batch_cases` returns the cases before it
with an `InputError` naming the file, the line, the case and the field.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from assay.core.cases import EvalCase
from assay.errors import InputError
from assay.formats._common import NESTED_TOO_DEEP, read_any_csv_cell

ROW_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_PEEK_ROWS = 20

RawRow = tuple[int, bytes | dict[str, Any]]
"""A row's line number (1-based; the row number in Parquet) and its text (JSON lines)
or its cells (CSV, Parquet)."""
RowKind = Literal["jsonl", "csv", "parquet"]


@dataclass(frozen=True, slots=True)
class RawBatch:
    """Consecutive rows of one file; `start` is the index of the first among all rows."""

    file: str
    kind: RowKind
    start: int
    rows: list[RawRow]
    no_big_ints: bool = field(default=False, compare=False)
    """True when no line may hold an integer beyond 64 bits (`may_hold_big_int` of
    the whole chunk, once, instead of each line's)."""


@dataclass(frozen=True, slots=True)
class LineChunk:
    """`rows` consecutive rows of a JSON-lines file as the bytes of their lines
    (blank lines included), the first on line `first_line`; `start` is the index of the
    first row among all rows. What a process that only reads the file sends to the one
    that scores it: one bytes object, not a tuple per line (`batch` makes the rows)."""

    file: str
    start: int
    first_line: int
    data: bytes
    rows: int

    def batch(self) -> RawBatch:
        """The chunk's rows, numbered, as `RowFile.batches` gives them."""
        rows: list[RawRow] = []
        append = rows.append
        for lineno, line in enumerate(io.BytesIO(self.data).readlines(), self.first_line):
            if not line.isspace():  # blank lines are skipped, as `formats.load` skips them
                append((lineno, line))
        # A run of digits never crosses a line end: a chunk without 19 digits in a row
        # has no line with them.
        clean = not may_hold_big_int(self.data)
        return RawBatch(self.file, "jsonl", self.start, rows, clean)


_READ_BYTES = 1 << 20
_OPEN_BRACE = ord("{")


@dataclass(frozen=True)
class RowFile:
    """A file of Vertex rows that can be read in batches."""

    path: Path
    kind: RowKind

    @property
    def eval_set_id(self) -> str:
        """The id `formats.load` gives the set of a row file: the file's stem."""
        return self.path.stem

    def count_rows(self) -> int:
        """The number of rows, for progress (a quick pass that builds no objects)."""
        if self.kind == "parquet":
            from assay.formats.parquet import count_rows

            return count_rows(self.path)
        if self.kind == "csv":
            read_any_csv_cell()
            with self.path.open(encoding="utf-8", newline="") as handle:
                return max(sum(1 for _ in csv.reader(handle)) - 1, 0)
        count = 0
        with self.path.open("rb") as handle:
            for line in handle:
                if not line.isspace():
                    count += 1
        return count

    def batches(self, size: int) -> Iterator[RawBatch]:
        """The rows in batches of `size`, in file order."""
        rows: list[RawRow] = []
        start = 0
        for row in self._rows():
            rows.append(row)
            if len(rows) >= size:
                yield RawBatch(str(self.path), self.kind, start, rows)
                start += len(rows)
                rows = []
        if rows:
            yield RawBatch(str(self.path), self.kind, start, rows)

    def chunks(self, size: int) -> Iterator[RawBatch | LineChunk]:
        """The rows in batches of `size`, in file order: a JSON-lines file's as
        `LineChunk`s, which cost the reading process a `find` per line instead of an
        object per line (the rows are made where the chunk is scored); other files' as
        `batches` gives them."""
        if self.kind != "jsonl":
            yield from self.batches(size)
            return
        file = str(self.path)
        with self.path.open("rb") as handle:
            data = b""
            pos = cut = rows = start = 0  # scanned to; the chunk's start; its rows
            first_line = lineno = 1
            eof = False
            while True:
                end = data.find(b"\n", pos)
                if end < 0:
                    if not eof:
                        # Keep what is left and read on (more at a time for a long line).
                        more = handle.read(max(_READ_BYTES, len(data) - cut))
                        data, pos, cut, eof = data[cut:] + more, pos - cut, 0, not more
                        continue
                    if pos >= len(data):
                        break
                    end = len(data) - 1  # the last line, without a line end
                # A row starts with "{"; anything else is checked for a blank line.
                if data[pos] == _OPEN_BRACE or not data[pos : end + 1].isspace():
                    rows += 1
                lineno += 1
                pos = end + 1
                if rows == size:
                    yield LineChunk(file, start, first_line, data[cut:pos], rows)
                    start, rows, cut, first_line = start + rows, 0, pos, lineno
            if rows:
                yield LineChunk(file, start, first_line, data[cut:pos], rows)

    def _rows(self) -> Iterator[RawRow]:
        if self.kind == "parquet":
            from assay.formats.parquet import iter_rows

            yield from iter_rows(self.path)
            return
        if self.kind == "jsonl":
            with self.path.open("rb") as handle:
                for lineno, line in enumerate(handle, 1):
                    # Blank lines are skipped, as `formats.load` skips them.
                    if not line.isspace():
                        yield lineno, line
            return
        read_any_csv_cell()
        with self.path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise InputError("CSV file has no header row", file=str(self.path))
            lineno = reader.line_num
            for cells in reader:
                yield lineno + 1, cells
                lineno = reader.line_num


def row_file(path: Path, fmt: str | None) -> RowFile | None:
    """`path` as a `RowFile` when it holds Vertex rows in JSON lines or CSV, else None
    (the file is then loaded whole, as every other format is)."""
    kind = ROW_SUFFIXES.get(path.suffix.lower())
    if kind is None or fmt not in (None, "vertex") or not path.is_file():
        return None
    candidate = RowFile(path, kind)  # type: ignore[arg-type]
    if fmt == "vertex":
        return candidate
    from assay.formats import detect_format

    sample = []
    try:
        for batch in candidate.batches(_PEEK_ROWS):
            sample = [_parse(batch, lineno, raw) for lineno, raw in batch.rows]
            break
        return candidate if sample and detect_format(sample, path) == "vertex" else None
    except InputError:
        return None  # the whole-file load reports it, as it always has


# A run of 19 or more digits: maybe an integer beyond 64 bits, which orjson would read
# as a float without a word (10**20 -> 1e+20). Such a line is read by `json.loads`,
# which keeps the integer exactly, as `formats.load` does (the store then refuses it,
# naming the case, on both paths). Digits inside a string only cost the slower parse.
# Found by mapping every digit to "0" and everything else to " " (`bytes.translate`) and
# looking for nineteen "0"s (a substring search): both in C, several times cheaper a
# line than a regex scan (bench/README.md).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_NINETEEN_DIGITS = b"0" * 19


def may_hold_big_int(raw: bytes) -> bool:
    """Whether a JSON line may hold an integer beyond 64 bits (orjson must not read it)."""
    return _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ZERO)


def _parse(batch: RawBatch, lineno: int, raw: bytes | dict[str, Any]) -> Any:
    if isinstance(raw, dict):
        return raw
    if batch.no_big_ints or not may_hold_big_int(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    # What orjson refuses and `formats.load` accepts (a byte-order mark, NaN literals),
    # or a real error, worded as `formats.load` words it.
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason})", file=batch.file, path=f"line {lineno}"
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} at column {exc.colno}",
            file=batch.file,
            path=f"line {lineno}",
        ) from None
    except RecursionError:
        raise InputError(NESTED_TOO_DEEP, file=batch.file, path=f"line {lineno}") from None


def _csv_cells(batch: RawBatch, lineno: int, cells: dict[str, Any]) -> dict[str, Any]:
    # As `mapping.clean_rows` does for a whole CSV file.
    if None in cells:
        raise InputError(
            "row has more cells than the header has columns",
            file=batch.file,
            path=f"line {lineno}",
            expected="one cell per header column",
        )
    return {k: v for k, v in cells.items() if v not in ("", None)}


def batch_cases(
    batch: RawBatch, mapping: Mapping[str, str] | None = None
) -> tuple[list[EvalCase], InputError | None]:
    """The cases of a batch's rows, built as `formats.load` builds them; at a malformed
    row, the cases before it and the error (its location: file, line, case, field)."""
    from assay.formats.mapping import apply_mapping
    from assay.formats.vertex import KNOWN_COLUMNS, case_of_row

    cases: list[EvalCase] = []
    names: dict[str, str] = {}
    for offset, (lineno, raw) in enumerate(batch.rows):
        index = batch.start + offset
        try:
            row = _parse(batch, lineno, raw)
            if batch.kind == "csv":
                row = _csv_cells(batch, lineno, row)
            if mapping:
                row = apply_mapping([row], mapping, file=batch.file, known=KNOWN_COLUMNS)[0]
            cases.append(case_of_row(index, row, batch.file, names))
        except InputError as exc:
            return cases, _at_line(exc, index, lineno, "row" if batch.kind == "parquet" else "line")
    return cases, None


def _at_line(exc: InputError, index: int, lineno: int, word: str = "line") -> InputError:
    """The error located by line (a Parquet file: by row): `$[index].field` becomes
    `line N, field`."""
    path = exc.path or ""
    if path.startswith(("line ", "row ")):
        return exc
    prefix = f"$[{index}]"
    field = path[len(prefix) :].lstrip(".") if path.startswith(prefix) else path
    return type(exc)(
        exc.detail,
        file=exc.file,
        case_id=exc.case_id,
        path=f"{word} {lineno}" + (f", {field}" if field else ""),
        expected=exc.expected,
    )
