"""The JSON report (`--out`): one document with the Vertex summary, the rows and
ADK-shaped cases, written by one writer as the results come, and the CSV report made
from its rows.

`cases` holds one object per case run, shaped like ADK's `EvalCaseResult` (snake_case,
integer `EvalStatus` codes, `Invocation`-shaped actual/expected turns) so ADK tooling can
read it, plus assay's own keys (`status`, `run_index`, `latency_s`, `failure`, `error`,
`traceback` when the agent raised, and `judge_samples` when judged metrics sampled their
judge more than once: how the samples split and whether the item is unstable) which ADK
ignores (`case_to_adk`).

`assay eval --out` on a million rows cannot build the report as one document first: at a
few KB per case that is gigabytes. `JsonReportWriter` writes each case's ADK-shaped
object to the file as soon as the case is done and keeps its rows in a `RowSpool` (a
temporary JSON-lines file beside the report); `finish` appends the rows and the summary,
which are only known at the end, and moves the finished file into place. The document
is the one `build_report` describes — the same keys and values, one case or row per
line — so readers parse it as before; only the key order differs (`summary` last).

Every JSON report goes through this one writer: a loaded run's (`write_json`), a
streamed run's, and the row kernel's cases and rows (byte for byte the same,
tests/rows/test_kernel.py), so they cannot drift apart.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from itertools import count
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

import orjson

from assay.core.cases import Turn
from assay.core.results import CaseResult, EvalResult, MetricResult, Score, status_for
from assay.errors import AssayError
from assay.metrics.sample_split import UNSTABLE_INVOCATIONS, is_unstable, split_of
from assay.report.atomic import remove_quietly, replaced_whole

_OPTIONS = orjson.OPT_NON_STR_KEYS
# Case and row objects are written one per line, indented under their array.
_ITEM_INDENT = b"    "
_ROW_SEPARATOR = b",\n" + _ITEM_INDENT
_CSV_LINE_MAX = 100_000
# Characters that make the CSV writer quote a cell (the delimiter, the quote, line
# ends), and NUL, which some Python versions treat specially: cells with any of them
# are written by the csv module itself.
_QUOTED = re.compile('[,"\r\n\x00]')


def finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def jsonable(value: Any) -> Any:
    """Make row values strict JSON: NaN/inf become null, unknown objects their str()."""
    if isinstance(value, float):
        return finite(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(exclude_none=True))
    if hasattr(value, "value") and isinstance(value.value, str | int):
        return value.value
    return str(value)


def _default(value: Any) -> Any:
    """What orjson does not know: pydantic models, enum-like values, else their str()."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if hasattr(value, "value") and isinstance(value.value, str | int):
        return value.value
    return str(value)


def dumps(value: Any) -> bytes:
    """Strict compact JSON (NaN and infinity as null) of a report value."""
    try:
        return orjson.dumps(value, default=_default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        # Integers beyond 64 bits are the one thing orjson refuses that JSON allows.
        return json.dumps(jsonable(value), ensure_ascii=False, allow_nan=False).encode()


def _pretty(value: Any) -> bytes:
    """An indented value of the report's top level (nested under its key)."""
    text = orjson.dumps(value, default=_default, option=_OPTIONS | orjson.OPT_INDENT_2)
    return text.replace(b"\n", b"\n  ")


def _partial(target: Path, tag: str) -> Path:
    return target.with_name(f".{target.name}.{tag}.partial")


class RowSpool:
    """The report rows kept on disk as JSON lines until the run ends.

    Also tracks the union of the rows' columns in first-seen order (for the CSV) at the
    cost of one tuple per row: rows of one run almost always share a handful of shapes.
    With `csv`, rows may come with their CSV line already encoded against their own
    columns (`csv_line`, by a worker process): while every row has one, the CSV report
    is made from those lines, each put under the union of the columns by its shape
    (`write_csv_from`); else it is made from the JSON lines. While the rows have one
    shape, which is usual, their CSV lines are spooled as they are (the first
    `plain_csv_bytes`): under that shape's columns they are the report's lines, copied
    at the end without being read back.
    """

    def __init__(self, beside: Path, *, csv: bool = False) -> None:
        self.report = beside
        self.path = _partial(beside, "rows")
        self.count = 0
        self._shapes: dict[tuple[str, ...], bytes] = {}
        """Each row shape and its number as the CSV lines' first field."""
        self._columns: dict[str, None] = {}
        self.csv_path = _partial(beside, "csvrows") if csv else None
        self._csv: IO[bytes] | None = None
        self._plain_csv = 0
        """The bytes of CSV lines spooled without their shape's number: rows of the
        first shape, until another shape comes (`_mixed`)."""
        self._mixed = False
        self._handed_over = False  # other processes may append rows (`hand_over`)
        self._grown = False  # other processes appended rows since this one wrote
        try:
            beside.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[bytes] = self.path.open("wb")
            if self.csv_path is not None:
                self._csv = self.csv_path.open("wb")
        except OSError as exc:
            raise AssayError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def shapes(self) -> list[tuple[str, ...]]:
        """The row shapes, by their number."""
        return list(self._shapes)

    @property
    def csv_lines(self) -> Path | None:
        """The rows' CSV lines, when every row has one: the first `plain_csv_bytes`
        are lines of the first shape as they are, the rest `shape number,fields...`."""
        if self._csv is None or self.csv_path is None:
            return None
        self._csv.flush()
        return self.csv_path

    @property
    def plain_csv_bytes(self) -> int:
        """How many bytes of `csv_lines` are the first shape's lines as they are."""
        return self._plain_csv

    def _no_csv_lines(self) -> None:
        if self._csv is not None:
            self._csv.close()
            self._csv = None

    def add(self, row: dict[str, Any]) -> None:
        self.add_encoded(tuple(row), dumps(row) + b"\n")

    def _number(self, shape: tuple[str, ...]) -> bytes:
        """The shape's number as its CSV lines' first field (a new shape's columns join
        the union)."""
        number = self._shapes.get(shape)
        if number is None:
            number = self._shapes[shape] = b"%d," % len(self._shapes)
            for key in shape:
                self._columns.setdefault(key, None)
        return number

    def add_encoded(
        self, shape: tuple[str, ...], line: bytes, csv_line: bytes | None = None
    ) -> None:
        """A row already encoded as one JSON line (by a worker process), and maybe as
        its CSV line (`csv_line`)."""
        self.add_encoded_rows([(shape, line, csv_line)])

    def add_encoded_rows(self, rows: Sequence[tuple[tuple[str, ...], bytes, bytes | None]]) -> None:
        """`add_encoded` of each of `rows` (a worker's batch), written at once."""
        known: dict[int, bytes] = {}  # a batch's rows share their shapes' tuples
        json_lines = []
        csv_lines: list[bytes] | None = [] if self._csv is not None else None
        for shape, line, csv_line in rows:
            json_lines.append(line)
            # A tuple of a few dozen names hashes and compares name by name: each distinct
            # tuple object of the batch is looked up once.
            shape_number = known.get(id(shape))
            if shape_number is None:
                shape_number = known[id(shape)] = self._number(shape)
            if csv_lines is not None:
                # Lines longer than any field `csv.reader` reads back by default
                # (128 KiB) could not be; such a run's CSV is made from its JSON lines.
                if csv_line is None or len(csv_line) > _CSV_LINE_MAX:
                    csv_lines = None
                    continue
                if not self._mixed:
                    if shape_number == b"0,":
                        self._plain_csv += len(csv_line)
                        csv_lines.append(csv_line)
                        continue
                    self._mixed = True  # from here on, each line says its shape
                csv_lines += (shape_number, csv_line)
        try:
            self._at_end()
            self._file.write(rows_text(json_lines))
            if self._handed_over:
                self._file.flush()  # in the file before another process appends after it
            if self._csv is not None:
                if csv_lines is None:
                    self._no_csv_lines()
                else:
                    self._csv.write(b"".join(csv_lines))
        except OSError as exc:
            raise self._error(exc) from None
        self.count += len(rows)

    def _error(self, exc: OSError) -> AssayError:
        """A failed write of the spool (a full disk), named after the report it is for."""
        return AssayError(f"cannot write the rows of report {self.report}: {exc.strerror or exc}")

    def hand_over(self) -> str | None:
        """The spool's file, everything added so far in it: worker processes append
        their batches' rows to it from here on (`rows_text`, in file order, with the
        report's cases: `rows.writes.WorkerWrites`), each batch counted by
        `appended`. None while the rows are spooled as CSV lines too: those are
        numbered by their shapes here, so they keep coming through this process."""
        if self._csv is not None:
            return None
        try:
            self._file.flush()
        except OSError as exc:
            raise self._error(exc) from None
        self._handed_over = True
        return str(self.path)

    def appended(self, rows: int) -> None:
        """Another process appended `rows` rows to the spool (`hand_over`)."""
        if rows:
            self.count += rows
            self._grown = True

    def _at_end(self) -> None:
        if self._grown:
            # Rows appended by other processes since: write (or measure) after them.
            self._file.seek(0, os.SEEK_END)
            self._grown = False

    def lines(self) -> Iterator[bytes]:
        """The rows written so far, one JSON document each."""
        self._file.flush()
        with self.path.open("rb") as handle:
            while chunk := handle.readlines(1 << 20):  # about a megabyte at a time
                for line in chunk:
                    # "    {...},\n": the indent, the row, its separator's comma
                    row = line.strip()
                    if row:
                        yield row[:-1]

    def append_to(self, target: int) -> None:
        """Append the rows written so far to the open file descriptor `target`, as the
        items of a JSON array indented as the report's (without the indent before the
        first row and without a separator after the last)."""
        self._at_end()
        self._file.flush()
        size = self._file.tell() - len(_ROW_SEPARATOR)
        if size > 0:
            _append_file(self.path, target, size)

    def close(self) -> None:
        # Also after a failed write (a full disk): closing flushes what is buffered,
        # which may fail again; the spool files are removed all the same.
        with contextlib.suppress(OSError):
            self._file.close()
        remove_quietly(self.path)
        with contextlib.suppress(OSError):
            self._no_csv_lines()
        if self.csv_path is not None:
            remove_quietly(self.csv_path)


class JsonReportWriter:
    """The `--out` report, written case by case (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        run_id: str | None,
        eval_set_ids: Sequence[str],
        metrics: Sequence[str],
        rows: RowSpool | None = None,
    ) -> None:
        self.target = Path(path)
        self._tmp = _partial(self.target, "json")
        self.rows = rows if rows is not None else RowSpool(self.target)
        self._owns_rows = rows is None
        self._cases = 0
        self._parts: Path | None = None
        self._grown = False  # other processes appended cases (`hand_over`)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[bytes] = self._tmp.open("wb")
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None
        head = {"run_id": run_id, "eval_set_ids": list(eval_set_ids), "metrics": list(metrics)}
        self._write(b"{\n")
        for key, value in head.items():
            self._write(b'  "' + key.encode() + b'": ' + _pretty(value) + b",\n")
        self._write(b'  "cases": [')

    def _write(self, data: bytes) -> None:
        try:
            if self._grown:
                # Cases appended by other processes since: write after them.
                self._file.seek(0, os.SEEK_END)
                self._grown = False
            self._file.write(data)
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None

    def add_case(self, case: dict[str, Any]) -> None:
        """One ADK-shaped case object (`case_to_adk`)."""
        self.add_encoded_case(dumps(case))

    def add_encoded_case(self, encoded: bytes) -> None:
        self._write((b"\n" if self._cases == 0 else b",\n") + _ITEM_INDENT + encoded)
        self._cases += 1

    def add_encoded_cases(self, encoded: Sequence[bytes]) -> None:
        """Cases already encoded (a worker's batch), written at once."""
        if not encoded:
            return
        self._write(cases_text(encoded, b"\n" if self._cases == 0 else b",\n"))
        self._cases += len(encoded)

    def hand_over(self) -> tuple[str, int]:
        """The report's file, everything written so far in it, and how many cases it
        holds: worker processes append their batches' cases to it from here on (in file
        order, `rows.writes.WorkerWrites`), each counted by `appended`."""
        try:
            self._file.flush()
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None
        return str(self._tmp), self._cases

    def appended(self, cases: int) -> None:
        """Another process appended `cases` cases to the report (`hand_over`)."""
        if cases:
            self._cases += cases
            self._grown = True

    def parts_directory(self) -> Path:
        """Where worker processes write their batches' cases (`write_cases_part`): a
        directory beside the report, so the part files are appended to it by the
        kernel (`add_cases_part`), never read back into this process. Removed when the
        report is finished or discarded."""
        if self._parts is None:
            parts = _partial(self.target, "parts")
            shutil.rmtree(parts, ignore_errors=True)  # left by a killed run
            try:
                parts.mkdir()
            except OSError as exc:
                raise AssayError(
                    f"cannot write JSON report {self.target}: {exc.strerror or exc}"
                ) from None
            self._parts = parts
        return self._parts

    def add_cases_part(self, part: CasesPart) -> None:
        """A batch's cases written to a part file by a worker (`write_cases_part`):
        appended to the report and the part file removed."""
        path, cases = part
        if not cases:
            Path(path).unlink(missing_ok=True)
            return
        self._write(b"\n" if self._cases == 0 else b",\n")
        try:
            # What is buffered goes first; the kernel then appends the part at the
            # file's position, after which buffered writes go on from there.
            self._file.flush()
            _append_file(Path(path), self._file.fileno())
            os.unlink(path)
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None
        self._cases += cases

    def finish(self, summary: dict[str, Any], repeated: dict[str, Any] | None = None) -> Path:
        """Append the rows and the summary; the report is complete at `target` after this.
        If that fails (a full disk, an interrupt), the unfinished file is removed and
        whatever was at `target` stays as it was."""
        try:
            return self._complete(summary, repeated)
        except BaseException:
            self.discard()
            raise

    def _complete(self, summary: dict[str, Any], repeated: dict[str, Any] | None) -> Path:
        self._write(b"\n  ],\n" if self._cases else b"],\n")
        self._write(b'  "rows": [')
        if self.rows.count:
            self._write(b"\n" + _ITEM_INDENT)
            try:
                self._file.flush()
                self.rows.append_to(self._file.fileno())  # in the kernel where it can
            except OSError as exc:
                raise AssayError(
                    f"cannot write JSON report {self.target}: {exc.strerror or exc}"
                ) from None
            self._write(b"\n  ],\n")
        else:
            self._write(b"],\n")
        self._write(b'  "summary": ' + _pretty(summary))
        if repeated:
            self._write(b',\n  "repeated": ' + _pretty(repeated))
        self._write(b"\n}\n")
        try:
            self._file.close()  # what is still buffered is written here
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None
        if self._owns_rows:
            self.rows.close()
        self._remove_parts()
        try:
            os.replace(self._tmp, self.target)
        except OSError as exc:
            raise AssayError(
                f"cannot write JSON report {self.target}: {exc.strerror or exc}"
            ) from None
        return self.target

    def discard(self) -> None:
        """Remove the unfinished file (the run failed before it could be completed, or
        a write failed: then closing fails too, and must not hide why)."""
        with contextlib.suppress(OSError):
            self._file.close()
        remove_quietly(self._tmp)
        if self._owns_rows:
            self.rows.close()
        self._remove_parts()

    def _remove_parts(self) -> None:
        if self._parts is not None:
            shutil.rmtree(self._parts, ignore_errors=True)
            self._parts = None


CasesPart = tuple[str, int]
"""A part file of encoded report cases and how many cases it holds."""

_PART_NUMBERS = count()


_CASE_SEPARATOR = b",\n" + _ITEM_INDENT


def rows_text(lines: Sequence[bytes]) -> bytes:
    """Report rows (JSON lines) as they are spooled: as they stand in the report's
    `rows` array, each line's newline become the separator after it (a JSON line has
    no other newline), so `RowSpool.append_to` copies the file into the report without
    reading it back."""
    return b"".join(lines).replace(b"\n", _ROW_SEPARATOR)


def cases_text(encoded: Sequence[bytes], head: bytes = b"") -> bytes:
    """Cases in the report's `cases` array: one per line, indented, after `head` (the
    line end or comma before the first). One copy of the batch's text (megabytes): the
    head goes with the first case, not before the joined whole."""
    if not encoded:
        return head + _ITEM_INDENT
    return _CASE_SEPARATOR.join([head + _ITEM_INDENT + encoded[0], *encoded[1:]])


def write_cases_part(directory: str, encoded: Sequence[bytes]) -> CasesPart | None:
    """Write a batch's encoded cases to a new part file in `directory` (a worker
    process, for `JsonReportWriter.add_cases_part`); None when that fails (the batch's
    cases are then sent as they are, and the report's own write reports the error)."""
    path = os.path.join(directory, f"{os.getpid()}-{next(_PART_NUMBERS)}.part")
    try:
        with open(path, "wb") as part:
            part.write(cases_text(encoded))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return path, len(encoded)


_COPY_CHUNK = 1 << 20


def _append_file(path: Path, target: int, size: int | None = None) -> None:
    """Append the file at `path` (its first `size` bytes, or all of it) to the open file
    descriptor `target`, in the kernel (`copy_file_range`) where it can, else through a
    buffer."""
    with path.open("rb", buffering=0) as source:
        if size is None:
            size = os.fstat(source.fileno()).st_size
        copied = 0
        copy_range = getattr(os, "copy_file_range", None)
        if copy_range is not None:
            try:
                while copied < size:
                    done = copy_range(source.fileno(), target, size - copied)
                    if done == 0:
                        break
                    copied += done
            except OSError:  # another file system, no support, ...: copy it ourselves
                pass
        source.seek(copied)
        while copied < size:
            chunk = source.read(min(_COPY_CHUNK, size - copied))
            if not chunk:
                break
            copied += len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]


def csv_cell(value: Any) -> str:
    """One CSV cell: empty for missing and non-finite, JSON for lists and objects."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return repr(value) if value - value == 0 else ""
    if isinstance(value, str | int):
        return str(value)
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_none=True)
    # Lists and objects (trajectories, per-chunk ratings) stay machine-readable as JSON.
    return json.dumps(value, ensure_ascii=False, default=str)


class _Fields(threading.local):
    """A CSV writer on a buffer, per thread, reused for every `csv_fields` call there
    (a writer per call costs more than the fields it writes)."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer)


_FIELDS = _Fields()


def csv_fields(values: Sequence[Any]) -> str:
    """`values` as CSV cells (`csv_cell`) joined as one line of the CSV report joins
    them, without the line end: a row's line is its parts' fields joined by commas."""
    cells = [csv_cell(v) for v in values]
    if not _QUOTED.search("".join(cells)):
        return ",".join(cells)  # no cell the CSV writer would quote (the common case)
    fields = _FIELDS
    buffer = fields.buffer
    buffer.seek(0)
    buffer.truncate()
    # A first field, so that a single empty field is not quoted as a row of its own.
    fields.writer.writerow(["-", *cells])
    return buffer.getvalue()[2:-2]


def csv_line(row: dict[str, Any]) -> bytes:
    """The CSV report's line of `row` when the header is `row`'s own keys."""
    return (csv_fields(list(row.values())) + "\r\n").encode("utf-8")


def write_csv_from(spool: RowSpool, path: str | Path) -> Path:
    """The CSV report of the spooled rows, with the union of their columns."""
    columns = spool.columns
    target = Path(path)
    with (
        replaced_whole(target, "CSV") as tmp,
        tmp.open("w", encoding="utf-8", newline="") as handle,
    ):
        writer = csv.writer(handle)
        writer.writerow(columns)
        ready = spool.csv_lines
        if ready is not None and len(columns) > 1:
            _write_csv_lines(handle, ready, spool, columns)
        else:
            loads = orjson.loads
            for line in spool.lines():
                row = loads(line)
                get = row.get
                writer.writerow([csv_cell(get(c)) for c in columns])
    return target


def _write_csv_lines(out: IO[str], lines: Path, spool: RowSpool, columns: list[str]) -> None:
    """The spooled CSV lines under `columns`, each line's fields picked by its shape
    ("" where it has no column). The first shape's lines, spooled as they are, are
    copied when that shape's columns are all the columns (one shape). Each other line
    is split into its fields as written (quoted where the csv module quoted them) and
    joined again, as bytes: a field's encoding depends on its value alone, so the bytes
    are the ones `write_csv_from` writes from the JSON rows."""
    shapes = spool.shapes
    indexes = []
    for shape in shapes:
        # One "" is appended after the row's fields, for the columns it does not have.
        where = {key: i for i, key in enumerate(shape)}
        indexes.append(tuple([where.get(c, len(shape)) for c in columns]))
    picks = [itemgetter(*each) for each in indexes]
    plain = spool.plain_csv_bytes
    out.flush()
    binary: IO[bytes] = out.buffer  # type: ignore[attr-defined]
    with lines.open("rb") as raw:
        if plain and list(shapes[0]) == columns:
            while plain > 0:  # a megabyte at a time: memory stays flat
                chunk = raw.read(min(plain, 1 << 20))
                binary.write(chunk)
                plain -= len(chunk)
        position, start = raw.tell(), binary.tell()
        if _remapped_in_c(raw, binary, plain, indexes, len(columns)):
            binary.flush()
            return
        # The Python way (no compiled kernel, or a record it does not know): from the
        # same place again.
        binary.seek(start)
        binary.truncate()
        raw.seek(position)
        parts: list[bytes] = []
        size = 0
        for number, record in _csv_records(raw, plain):
            fields = record[:-2].split(b",")  # the line without its "\r\n", at its commas
            if b'"' in record:
                fields = _quoted_fields(fields)
            fields.append(b"")
            line = b",".join(picks[number](fields)) + b"\r\n"
            parts.append(line)
            size += len(line)
            if size >= 1 << 20:
                binary.write(b"".join(parts))
                parts, size = [], 0
        binary.write(b"".join(parts))
    binary.flush()


def _remapped_in_c(
    raw: IO[bytes], out: IO[bytes], plain: int, indexes: list[tuple[int, ...]], columns: int
) -> bool:
    """`_write_csv_lines`' loop by the compiled CSV kernel (`report.csv_kernel`), a
    megabyte of the spool at a time; False when there is no kernel or it met a record
    it does not know (nothing it wrote is then kept)."""
    try:
        from assay.report.csv_kernel import remap_csv
    except ImportError:  # installed without compiling
        return False
    rest = b""
    while True:
        chunk = raw.read(1 << 20)
        data = rest + chunk if rest else chunk
        done = remap_csv(data, plain, indexes, columns, not chunk)
        if done is None:
            return False
        lines, used, plain = done
        out.write(lines)
        rest = data[used:]
        if not chunk:
            return True


def _csv_records(raw: IO[bytes], plain: int) -> Iterator[tuple[int, bytes]]:
    """Each spooled CSV line of `raw` with its shape's number: the first `plain` bytes
    are shape 0's lines without it. A quoted field may hold line ends, so a record runs
    on until its quotes pair up."""
    pending = b""
    for line in raw:
        if pending or line.count(b'"') % 2:
            pending += line
            if pending.count(b'"') % 2:
                continue
            line, pending = pending, b""
        yield _numbered(line, plain)
        plain -= len(line)
    if pending:  # never from a spool this module wrote: passed on as it is
        yield _numbered(pending, plain)


def _numbered(line: bytes, plain: int) -> tuple[int, bytes]:
    if plain > 0:
        return 0, line
    number, _, record = line.partition(b",")
    return int(number), record


def _quoted_fields(pieces: list[bytes]) -> list[bytes]:
    """The fields of a CSV line split at every comma, rejoined where a comma was inside
    a quoted field. The csv module quotes every field holding a quote (doubled), so a
    field without a quote is never quoted, and a quoted one starts with a quote and
    holds an even number of them."""
    fields = []
    pieces.reverse()
    while pieces:
        field = pieces.pop()
        if field[:1] == b'"':
            while field.count(b'"') % 2 and pieces:
                field += b"," + pieces.pop()
        fields.append(field)
    return fields


# -- the ADK-shaped case and the whole document ---------------------------------------
# ADK 2.x `EvalStatus.INFORMATIONAL`: a value was reported but never passes or fails.
_ADK_INFORMATIONAL = 4


def _part_text(text: str | None) -> dict[str, Any]:
    return {"text": text if text is not None else ""}


def _response_object(value: object) -> dict[str, Any]:
    # ADK's FunctionResponse.response must be an object; ADK itself wraps other values
    # under "result" when it records tool output.
    return value if isinstance(value, dict) else {"result": value}


def turn_to_invocation(turn: Turn, fallback_id: str) -> dict[str, Any]:
    """An ADK `Invocation`-shaped dict for one turn (final response, tools, messages)."""
    parts: list[dict[str, Any]] = []
    if turn.user_input.text is not None or not (
        turn.user_input.blobs or turn.user_input.tool_responses
    ):
        parts.append(_part_text(turn.user_input.text))
    for blob in turn.user_input.blobs:
        parts.append({"inline_data": {"mime_type": blob.mime_type, "data": blob.data}})
    for tr in turn.user_input.tool_responses:
        fr: dict[str, Any] = {"name": tr.name, "response": _response_object(tr.response)}
        if tr.id:
            fr["id"] = tr.id
        parts.append({"function_response": fr})
    tool_uses = []
    for call in turn.tool_calls():
        use: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id:
            use["id"] = call.id
        tool_uses.append(use)
    tool_responses = []
    for resp in turn.tool_responses():
        item: dict[str, Any] = {"name": resp.name, "response": _response_object(resp.response)}
        if resp.id:
            item["id"] = resp.id
        tool_responses.append(item)
    intermediate = [
        [msg.author or "agent", [_part_text(msg.text)]] for msg in turn.agent_messages()
    ]
    invocation: dict[str, Any] = {
        "invocation_id": turn.id or fallback_id,
        "user_content": {"role": "user", "parts": parts},
        "final_response": (
            {"role": "model", "parts": [_part_text(turn.final_response)]}
            if turn.final_response is not None
            else None
        ),
        "intermediate_data": {
            "tool_uses": tool_uses,
            "tool_responses": tool_responses,
            "intermediate_responses": intermediate,
        },
        "creation_timestamp": turn.created_at or 0.0,
    }
    if turn.latency_s is not None:
        invocation["duration"] = turn.latency_s
    return invocation


def _rubric_details(details: dict[str, Any]) -> dict[str, Any]:
    """ADK's `details.rubric_scores` ({rubric_id, score} per rubric) when the metric
    judged rubrics, so ADK's tools show the verdicts per rubric; else nothing."""
    scores = details.get("rubric_scores")
    if not isinstance(scores, dict) or not scores:
        return {}
    rubric_scores = [
        {"rubric_id": str(rid), "score": finite(value)} for rid, value in scores.items()
    ]
    return {"details": {"rubric_scores": rubric_scores}}


def _metric_entry(
    name: str, score: Score, threshold: float | None, informational: bool
) -> dict[str, Any]:
    value = score.value
    code = _ADK_INFORMATIONAL if informational else status_for(value, threshold).adk_code
    entry = {
        "metric_name": name,
        "threshold": threshold,
        "score": finite(value),
        "eval_status": code,
    }
    if score.details:  # this runs for every metric of every turn: no call when empty
        entry.update(_rubric_details(score.details))
    return entry


def _overall_entry(metric: MetricResult) -> dict[str, Any]:
    code = metric.status.adk_code if metric.status is not None else _ADK_INFORMATIONAL
    entry = {
        "metric_name": metric.name,
        "threshold": metric.threshold,
        "score": finite(metric.score),
        "eval_status": code,
    }
    if metric.details:
        entry.update(_rubric_details(metric.details))
    return entry


def _invocation_score(case: CaseResult, metric: MetricResult, index: int) -> Score | None:
    inv = case.invocations[index]
    if metric.name in inv.scores:
        return inv.scores[metric.name]
    if len(metric.per_invocation) == len(case.invocations):
        return metric.per_invocation[index]
    return None


def judge_samples_of(case: CaseResult) -> dict[str, Any]:
    """`{metric: {pass, fail, unstable, unstable_invocations}}` for each judged metric of
    the case whose judge samples were split (`assay.metrics.sample_split`)."""
    out: dict[str, Any] = {}
    for metric in case.metrics.values():
        split = split_of(metric.details)
        if split is not None:
            out[metric.name] = {
                "pass": split[0],
                "fail": split[1],
                "unstable": is_unstable(metric.details),
                "unstable_invocations": metric.details.get(UNSTABLE_INVOCATIONS, 0),
            }
    return out


def case_to_adk(
    case: CaseResult, *, run_id: str | None = None, eval_set_file: str | None = None
) -> dict[str, Any]:
    """One case run as an ADK `EvalCaseResult`-shaped dict (plus assay's own keys)."""
    per_invocation = []
    for index, inv in enumerate(case.invocations):
        fallback = f"{case.case_id}-{index + 1}"
        source = inv.actual or inv.expected
        if source is None:
            continue
        actual = inv.actual
        if actual is None:
            # The agent failed before answering: keep the user input, no response.
            actual = Turn(id=source.id, user_input=source.user_input)
        results = []
        for metric in case.metrics.values():
            score = _invocation_score(case, metric, index)
            if score is None:
                continue
            results.append(
                _metric_entry(metric.name, score, metric.threshold, metric.status is None)
            )
        per_invocation.append(
            {
                "actual_invocation": turn_to_invocation(actual, fallback),
                "expected_invocation": (
                    turn_to_invocation(inv.expected, fallback) if inv.expected else None
                ),
                "eval_metric_results": results,
            }
        )
    doc: dict[str, Any] = {
        "eval_set_id": case.eval_set_id or "",
        "eval_id": case.case_id,
        "run_index": case.run_index,
        "final_eval_status": case.status.adk_code,
        "status": case.status.value,
        "overall_eval_metric_results": [_overall_entry(m) for m in case.metrics.values()],
        "eval_metric_result_per_invocation": per_invocation,
        # ADK requires a session id; ours names the run, the case and the repetition.
        "session_id": f"{run_id or 'assay'}:{case.eval_set_id or ''}:{case.case_id}:"
        f"{case.run_index}",
        "latency_s": case.latency_s,
        "failure": case.failure,
        "error": case.error,
        "error_type": case.error_type,
        "explanations": {
            m.name: m.explanation for m in case.metrics.values() if m.explanation is not None
        },
    }
    noise = judge_samples_of(case)
    if noise:
        doc["judge_samples"] = noise
    if case.traceback is not None:
        doc["traceback"] = case.traceback
    if eval_set_file is not None:
        doc["eval_set_file"] = eval_set_file
    return doc


def build_report(
    result: EvalResult,
    *,
    eval_set_ids: Sequence[str] | None = None,
    eval_set_files: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON report document `{summary, rows, cases, run_id, eval_set_ids, metrics}`.

    `eval_set_files` maps an eval set id to the file it came from (ADK's deprecated
    `eval_set_file` key is written when known).
    """
    files = eval_set_files or {}
    ids = list(eval_set_ids) if eval_set_ids is not None else _eval_set_ids(result)
    cases = [
        case_to_adk(c, run_id=result.run_id, eval_set_file=files.get(c.eval_set_id or ""))
        for c in result.cases
    ]
    doc: dict[str, Any] = {
        "run_id": result.run_id,
        "eval_set_ids": ids,
        "metrics": list(result.metrics),
        "summary": result.summary,
        "rows": result.rows,
        "cases": cases,
    }
    if result.repeated:
        doc["repeated"] = result.repeated
    return jsonable(doc)  # type: ignore[no-any-return]


def _eval_set_ids(result: EvalResult) -> list[str]:
    seen: dict[str, None] = {}
    for case in result.cases:
        if case.eval_set_id:
            seen.setdefault(case.eval_set_id, None)
    if not seen and result.eval_set_id:
        seen[result.eval_set_id] = None
    return list(seen)


def write_json(
    result: EvalResult,
    path: str | Path,
    *,
    eval_set_ids: Sequence[str] | None = None,
    eval_set_files: dict[str, str] | None = None,
) -> Path:
    """Write the JSON report to `path` (parent folders are created).

    The document is `build_report`'s, written case by case by the same writer a
    streaming run uses (`assay.report.json_report`): one case or row per line.
    """
    files = eval_set_files or {}
    writer = JsonReportWriter(
        path,
        run_id=result.run_id,
        eval_set_ids=list(eval_set_ids) if eval_set_ids is not None else _eval_set_ids(result),
        metrics=list(result.metrics),
    )
    try:
        for case in result.cases:
            writer.add_case(
                case_to_adk(
                    case, run_id=result.run_id, eval_set_file=files.get(case.eval_set_id or "")
                )
            )
        for row in result.rows:
            writer.rows.add(row)
        return writer.finish(result.summary, result.repeated)
    except BaseException:
        writer.discard()
        raise
