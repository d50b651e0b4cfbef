"""Shared helpers of the format modules: reading files, key styles, located errors."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic.alias_generators import to_camel, to_snake

from assay.errors import InputError


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def parse_json(text: str, file: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", file=file
        ) from None


def parse_jsonl(text: str, file: str) -> list[Any]:
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg} at column {exc.colno}", file=file, path=f"line {lineno}"
            ) from None
    return rows


def parse_yaml(text: str, file: str) -> Any:
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


def parse_csv(text: str, file: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError("CSV file has no header row", file=file)
    return [dict(row) for row in reader]


def read_structured(path: Path) -> Any:
    """Parse a file by its suffix: .json, .jsonl/.ndjson, .yaml/.yml, .csv."""
    text = read_text(path)
    suffix = path.suffix.lower()
    name = str(path)
    if suffix in (".jsonl", ".ndjson"):
        return parse_jsonl(text, name)
    if suffix in (".yaml", ".yml"):
        return parse_yaml(text, name)
    if suffix == ".csv":
        return parse_csv(text, name)
    return parse_json(text, name)


def get(obj: Mapping[str, Any], snake_key: str, default: Any = None) -> Any:
    """Look a key up in snake_case or camelCase; a JSON `null` counts as absent."""
    value = obj.get(snake_key)
    if value is None:
        value = obj.get(to_camel(snake_key), None)
    return default if value is None else value


def snake_keys(value: Any) -> Any:
    """Recursively convert mapping keys to snake_case (for structural, not user, data)."""
    if isinstance(value, Mapping):
        return {to_snake(k) if isinstance(k, str) else k: snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def type_name(value: Any) -> str:
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

    def expect_dict(self, value: Any, what: str = "an object") -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"got {type_name(value)}", expected=what)
        return dict(value)

    def expect_list(self, value: Any, what: str = "a list") -> list[Any]:
        if not isinstance(value, list):
            raise self.error(f"got {type_name(value)}", expected=what)
        return value

    def expect_str(self, value: Any, what: str = "a string") -> str:
        if not isinstance(value, str):
            raise self.error(f"got {type_name(value)}", expected=what)
        return value

    def items(self, value: Any, what: str = "a list") -> Iterator[tuple[Loc, Any]]:
        for i, item in enumerate(self.expect_list(value, what)):
            yield self.idx(i), item


def check_unique_ids(ids: list[str], file: str | None) -> None:
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
