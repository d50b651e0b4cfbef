"""Shared helpers of the format modules.

Reading files, key styles, located errors, validation into the model, and pausing the
garbage collector for bulk work.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from assay.errors import InputError

M = TypeVar("M", bound=BaseModel)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector out of a bulk parse or build; restore it after.

    Parsed JSON and the model objects built from it form no reference cycles, so the
    collector has nothing to find among them, yet its passes over millions of fresh
    objects cost more than creating them. Only the enabled state is touched, and it is
    put back as it was (on errors too): a collector that was off stays off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Python's parsers recurse once per level of nesting: a hostile file nested thousands
# deep would end in a RecursionError traceback instead of a message.
NESTED_TOO_DEEP = (
    "nested too deeply to read (thousands of levels of arrays or objects); "
    "an eval set is never that deep: check that the file is the one meant"
)


def parse_json(text: str, file: str) -> object:
    try:
        with gc_paused():
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", file=file
        ) from None
    except RecursionError:
        raise InputError(NESTED_TOO_DEEP, file=file) from None


# The C scanner behind `json.loads`, called directly: around it `json.loads` makes
# several Python calls and two regex matches, twice the parse's own time on a short line.
# (typeshed does not declare the instance attribute `scan_once`.)
_DECODER = json.JSONDecoder()
_scan_json: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_JSON_SPACE = " \t\r"  # JSON's whitespace within a line


def parse_jsonl(text: str, file: str) -> list[object]:
    """One JSON value per line; blank lines are skipped.

    Lines end at LF, CRLF or CR only: U+2028, U+0085 and the other separators of
    `str.splitlines` may stand unescaped inside JSON strings.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    rows: list[Any] = []
    append = rows.append
    scan = _scan_json
    find = text.find
    size = len(text)
    pos = 0  # where the current line starts
    lineno = 0
    with gc_paused():
        while pos <= size:
            lineno += 1
            end_of_line = find("\n", pos)
            if end_of_line < 0:
                end_of_line = size
            # Scanned in place, without cutting the line out: a value that starts the
            # line and ends exactly at its end is the line's one value. A scan that runs
            # on past the line (an unclosed bracket, nesting as deep as the recursion
            # limit) means the line alone is not one; the line's own parse below decides.
            try:
                row, end = scan(text, pos)
            except (StopIteration, ValueError, RecursionError):
                end = -1
            if end == end_of_line:
                append(row)
            else:
                line = text[pos:end_of_line]
                value = line.strip(_JSON_SPACE)
                if value:
                    try:
                        row, end = scan(value, 0)
                    except (StopIteration, ValueError):
                        end = -1
                if value and end == len(value):
                    append(row)
                elif line.strip():
                    # Not one plain value: `json.loads` decides, and words the error.
                    append(_loads_line(line, lineno, file))
            pos = end_of_line + 1
    return rows


def _loads_line(line: str, lineno: int, file: str) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} at column {exc.colno}", file=file, path=f"line {lineno}"
        ) from None
    except RecursionError:
        raise InputError(NESTED_TOO_DEEP, file=file, path=f"line {lineno}") from None


def parse_yaml(text: str, file: str) -> object:
    # Imported here: a run of JSON files and a JSON config (most runs) does not pay
    # PyYAML's import at every start.
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # One line instead of PyYAML's multi-line report with source excerpts.
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise InputError(
            f"not valid YAML: {exc.problem or exc.context or 'syntax error'}{where}", file=file
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", file=file) from None
    except RecursionError:
        raise InputError(NESTED_TOO_DEEP, file=file) from None


# CSV has no limit on a cell; Python's csv module stops at 131,072 characters unless
# told otherwise (a process-wide setting), which made a long cell a traceback.
CSV_CELL_LIMIT = sys.maxsize


def read_any_csv_cell() -> None:
    """Let Python's csv module read cells of any length (the format sets no limit)."""
    if csv.field_size_limit() < CSV_CELL_LIMIT:
        csv.field_size_limit(CSV_CELL_LIMIT)


def parse_csv(text: str, file: str) -> list[dict[str, object]]:
    read_any_csv_cell()
    reader = csv.DictReader(io.StringIO(text))
    rows: list[dict[str, Any]] = []
    try:
        if not reader.fieldnames:
            raise InputError("CSV file has no header row", file=file)
        for row in reader:
            rows.append(dict(row))
    except csv.Error as exc:  # a cell over the csv module's field size limit, a NUL, ...
        raise InputError(
            f"not valid CSV: {exc}",
            file=file,
            path=f"$[{len(rows)}]",
            expected="CSV cells of at most 131072 characters",
        ) from None
    return rows


def read_structured(path: Path) -> object:
    """Parse a file by its suffix: .json, .jsonl/.ndjson, .yaml/.yml, .csv, .parquet."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        from assay.formats.parquet import read_rows

        return read_rows(path)
    text = read_text(path)
    name = str(path)
    if suffix in (".jsonl", ".ndjson"):
        return parse_jsonl(text, name)
    if suffix in (".yaml", ".yml"):
        return parse_yaml(text, name)
    if suffix == ".csv":
        return parse_csv(text, name)
    return parse_json(text, name)


def get(obj: Mapping[str, object], snake_key: str, default: object = None) -> object:
    """Look a key up in snake_case or camelCase; a JSON `null` counts as absent."""
    value = obj.get(snake_key)
    if value is None:
        value = obj.get(to_camel(snake_key), None)
    return default if value is None else value


def snake_keys(value: object) -> object:
    """Recursively convert mapping keys to snake_case (for structural, not user, data)."""
    if isinstance(value, Mapping):
        return {to_snake(k) if isinstance(k, str) else k: snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def type_name(value: object) -> str:
    return {
        dict: "object",
        list: "list",
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)


class Loc:
    """A JSON path being walked, for error messages: `Loc("$").key("eval_cases").idx(3)`."""

    __slots__ = ("case_id", "file", "path")

    def __init__(self, file: str | None, path: str = "$", case_id: str | None = None) -> None:
        self.file = file
        self.path = path
        self.case_id = case_id

    def key(self, k: str) -> Loc:
        return Loc(self.file, f"{self.path}.{k}", self.case_id)

    def idx(self, i: int) -> Loc:
        return Loc(self.file, f"{self.path}[{i}]", self.case_id)

    def case(self, case_id: str | None) -> Loc:
        return Loc(self.file, self.path, case_id)

    def error(self, message: str, expected: str | None = None) -> InputError:
        return InputError(
            message, file=self.file, case_id=self.case_id, path=self.path, expected=expected
        )

    def expect_dict(self, value: object, what: str = "an object") -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"got {type_name(value)}", expected=what)
        return dict(value)

    def expect_list(self, value: object, what: str = "a list") -> list[object]:
        if not isinstance(value, list):
            raise self.error(f"got {type_name(value)}", expected=what)
        return value

    def expect_str(self, value: object, what: str = "a string") -> str:
        if not isinstance(value, str):
            raise self.error(f"got {type_name(value)}", expected=what)
        return value

    def items(self, value: object, what: str = "a list") -> Iterator[tuple[Loc, Any]]:
        for i, item in enumerate(self.expect_list(value, what)):
            yield self.idx(i), item


def validate(cls: type[M], data: object, loc: Loc, what: str) -> M:
    """`cls.model_validate(data)`; its first error is raised at `loc` plus the error's path."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        sub = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        raise Loc(loc.file, loc.path + sub, loc.case_id).error(err["msg"], expected=what) from None


def check_unique_ids(ids: list[str], file: str | None) -> None:
    if len(set(ids)) == len(ids):
        return  # the usual case, decided in C; the loop below finds the first repeat
    seen: set[str] = set()
    for i, case_id in enumerate(ids):
        if case_id in seen:
            raise InputError(
                "duplicate case id",
                file=file,
                case_id=case_id,
                path=f"case #{i}",
                expected="case ids unique within an eval set",
            )
        seen.add(case_id)
