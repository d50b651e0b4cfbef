"""Cells of the row formats (Vertex, MLflow): typed column parsers and row writing.

A cell holds its value, or (in CSV files) a JSON string of it; the parsers accept
both and raise `InputError` naming the file, case id, JSON path and what was expected.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import Chunk, EvalCase
from assay.errors import InputError, warn
from assay.formats._common import type_name


def row_error(
    file: str | None, case_id: str | None, path: str, message: str, expected: str | None = None
) -> InputError:
    return InputError(message, file=file, case_id=case_id, path=path, expected=expected)


def columns_of(rows: list[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            for key in row:
                seen.setdefault(str(key), None)
    return list(seen)


SAMPLE_ROWS = 100
"""Rows whose columns are checked for misspellings (a file's columns are its first rows')."""


def misspelt_columns(columns: Iterable[str], known: Collection[str]) -> list[tuple[str, str]]:
    """(column, the known column it looks like) for each column the format does not read
    that is a near miss of one it does and the data lacks (`refrence`: `reference`)."""
    present = set(columns)
    missing = sorted(k for k in known if k not in present)
    found = []
    for column in dict.fromkeys(columns):
        if column in known:
            continue
        close = difflib.get_close_matches(column, missing, n=1, cutoff=0.8)
        if close:
            found.append((column, close[0]))
    return found


def warn_misspelt_columns(columns: Iterable[str], known: Collection[str], file: str | None) -> None:
    """One warning per misspelt column (`misspelt_columns`), naming the file: such a
    column is kept as case metadata, so what it was meant to hold is missing from every
    case (a misspelt `reference` leaves every case NOT_EVALUATED)."""
    where = f"{file}: " if file else ""
    for column, meant in misspelt_columns(columns, known):
        warn(
            f"{where}column {column!r} is not one assay reads (did you mean {meant!r}?); it"
            f" is kept as case metadata, and no case has a {meant}"
        )


# ----------------------------------------------------------------------------- column parsers


def decode_json(
    value: object, kind: type, file: str | None, case_id: str | None, path: str, expected: str
) -> Any:
    """`value` if it is a `kind`, else a JSON string of one (CSV cells), else an error."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise row_error(
                file, case_id, path, f"a string that is not valid JSON ({exc.msg})", expected
            ) from None
        if isinstance(decoded, kind):
            return decoded
        raise row_error(file, case_id, path, f"a JSON string of {type_name(decoded)}", expected)
    raise row_error(file, case_id, path, f"got {type_name(value)}", expected)


def parse_str(value: object, file: str | None, case_id: str | None, path: str) -> str:
    if isinstance(value, str):
        return value
    raise row_error(file, case_id, path, f"got {type_name(value)}", "a string")


def parse_str_list(value: object, file: str | None, case_id: str | None, path: str) -> list[str]:
    expected = "a list of strings"
    items = decode_json(value, list, file, case_id, path, expected)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise row_error(file, case_id, f"{path}[{i}]", f"got {type_name(item)}", "a string")
    return list(items)


def parse_guidelines(
    value: object, file: str | None, case_id: str | None, path: str
) -> list[str] | dict[str, list[str]]:
    expected = "a list of strings, or an object of named lists of strings"
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = decode_json(value, dict, file, case_id, path, expected)
    if isinstance(value, Mapping):
        return {str(k): parse_str_list(v, file, case_id, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, str)):
        return parse_str_list(value, file, case_id, path)
    raise row_error(file, case_id, path, f"got {type_name(value)}", expected)


def parse_chunks(value: object, file: str | None, case_id: str | None, path: str) -> list[Chunk]:
    expected = "a list of {doc_uri, content} objects"
    items = decode_json(value, list, file, case_id, path, expected)
    chunks = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise row_error(file, case_id, where, f"got {type_name(item)}", expected)
        unknown = set(item) - {"doc_uri", "content"}
        if unknown:
            raise row_error(
                file, case_id, where, f"unknown keys {sorted(unknown)}", "keys doc_uri, content"
            )
        uri, content = item.get("doc_uri"), item.get("content")
        if uri is not None and not isinstance(uri, str):
            raise row_error(file, case_id, f"{where}.doc_uri", f"got {type_name(uri)}", "a string")
        if content is not None and not isinstance(content, str):
            raise row_error(
                file, case_id, f"{where}.content", f"got {type_name(content)}", "a string"
            )
        chunks.append(Chunk(doc_uri=uri, content=content))
    return chunks


def dump_chunks(chunks: list[Chunk]) -> list[dict[str, object]]:
    return [c.model_dump(exclude_none=True) for c in chunks]


def content_text(value: object, file: str | None, case_id: str | None, path: str) -> str:
    """Text of a string or a genai `Content` `{role?, parts: [{text}]}` (parts joined)."""
    if isinstance(value, str):
        return value
    expected = "a string or a Content object {role, parts: [{text}]}"
    if not isinstance(value, Mapping) or not isinstance(value.get("parts"), list):
        raise row_error(file, case_id, path, f"got {type_name(value)}", expected)
    texts = []
    for i, part in enumerate(value["parts"]):
        text = part.get("text") if isinstance(part, Mapping) else None
        if not isinstance(text, str):
            raise row_error(
                file, case_id, f"{path}.parts[{i}]", "not a text part", "parts holding text only"
            )
        texts.append(text)
    return "".join(texts)


_EXPECTED_PARSERS: dict[str, Callable[[Any, str | None, str | None, str], Any]] = {
    "expected_response": parse_str,
    "expected_facts": parse_str_list,
    "guidelines": parse_guidelines,
    "expected_retrieved_context": parse_chunks,
}


EXPECTED_FIELDS = (
    "expected_response",
    "expected_facts",
    "guidelines",
    "expected_retrieved_context",
)


def parse_expected(
    source: Mapping[str, object], file: str | None, case_id: str, prefix: str
) -> dict[str, object]:
    """The `EXPECTED_FIELDS` present in `source` (a row, or MLflow's `expectations`), parsed.

    `prefix` is the JSON path of `source`.
    """
    out: dict[str, Any] = {}
    for key, parse in _EXPECTED_PARSERS.items():
        value = source.get(key)
        if value is not None:
            out[key] = parse(value, file, case_id, f"{prefix}.{key}")
    return out


def dump_expected(case: EvalCase, expected_response: str | None) -> dict[str, object]:
    """The columns of `EXPECTED_FIELDS` for `case`, with `expected_response` as given."""
    out: dict[str, Any] = {}
    if expected_response is not None:
        out["expected_response"] = expected_response
    if case.expected_facts is not None:
        out["expected_facts"] = list(case.expected_facts)
    if case.guidelines is not None:
        out["guidelines"] = case.guidelines
    if case.expected_retrieved_context is not None:
        out["expected_retrieved_context"] = dump_chunks(case.expected_retrieved_context)
    return out


# ----------------------------------------------------------------------------- writing


def add_metadata(
    row: dict[str, object],
    metadata: Mapping[str, object],
    skip: tuple[str, ...],
    fail: Callable[[str], InputError],
) -> None:
    """Add the `metadata` entries other than `skip` to `row` as columns.

    A key that is already a column raises `fail(message)`.
    """
    for key, value in metadata.items():
        if key in skip:
            continue
        if key in row:
            raise fail(f"metadata key {key!r} collides with a column")
        row[key] = value


def to_csv(records: list[dict[str, object]]) -> str:
    """CSV text of row dicts; lists and objects become JSON strings, null an empty cell."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns_of(records), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _cell(v) for k, v in record.items()})
    return buf.getvalue()


def _cell(value: object) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def write_records(data: Any, path: Path) -> None:
    """Write rows as JSONL (`.jsonl`, `.ndjson`) or CSV (`.csv`), anything else as JSON."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data)
    elif suffix == ".csv":
        text = to_csv(data)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
