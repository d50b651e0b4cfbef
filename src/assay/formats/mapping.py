"""Column mapping and row clean-up for the row formats (Vertex, MLflow).

Column mapping (SPEC §2.7): `{SRC: DST}` renames a file's columns before the format
interprets them (`--map question=request`, Vertex's `metric_column_mapping` turned
source-first). All renames apply at once, so `{a: b, b: a}` swaps. Errors: a source
column the file does not have (the message lists the file's columns), two sources
mapped to one destination, or a destination that is already a column of the file.

Coercions applied to *mapped* columns only (an unmapped column must already have the
documented shape):

- list-of-chunks destinations (`expected_retrieved_context`, `retrieved_context`): a
  plain string becomes `[{doc_uri: value}]`, a list of strings one chunk per string;
- list-of-strings destinations (`expected_facts`, `guidelines`): a plain string
  becomes a one-element list.

Row clean-up: in CSV files an empty cell means "absent"; in in-memory rows (pandas)
a float NaN means "absent". JSON `null` is absent everywhere.

The typed column parsers and row writing live in `assay.formats._columns`, the fast
model builders in `assay.formats._build`, `gc_paused` in `assay.formats._common`; the
names this module defined before they moved are re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from assay.errors import InputError, did_you_mean
from assay.formats._build import (
    call_step_of,
    eval_case,
    eval_set,
    response_step,
    retrieval_step,
    step,
    tool_call,
    tool_response,
    turn,
    user_input,
)
from assay.formats._columns import (
    columns_of,
    content_text,
    decode_json,
    dump_chunks,
    parse_chunks,
    parse_guidelines,
    parse_str,
    parse_str_list,
    row_error,
    to_csv,
    write_records,
)
from assay.formats._common import gc_paused, type_name
from assay.formats._mlflow_classic import parse_literal


def rows_of(data: object, file: str | None, what: str) -> list[object]:
    """The rows of a list, or of a dict of equally long column lists."""
    if isinstance(data, list):
        return data
    if isinstance(data, Mapping) and data and all(isinstance(v, list) for v in data.values()):
        lengths = {len(v) for v in data.values()}
        if len(lengths) != 1:
            sizes = ", ".join(f"{k}: {len(v)}" for k, v in data.items())
            raise InputError(
                f"columns have different lengths ({sizes})",
                file=file,
                path="$",
                expected="a dict of equally long column lists",
            )
        columns = list(data.items())
        return [{k: v[i] for k, v in columns} for i in range(lengths.pop())]
    raise InputError(
        f"got {type_name(data)}", file=file, path="$", expected=f"a list of {what} rows"
    )


def clean_rows(rows: list[Any], file: str | None) -> list[Any]:
    """Drop CSV empty cells (`.csv` files) and NaN cells (in-memory rows)."""
    if file is not None and file.lower().endswith(".csv"):
        out = []
        for i, row in enumerate(rows):
            if None in row:
                raise InputError(
                    "row has more cells than the header has columns",
                    file=file,
                    path=f"$[{i}]",
                    expected="one cell per header column",
                )
            out.append({k: v for k, v in row.items() if v not in ("", None)})
        return out
    if file is None:
        return [
            {k: v for k, v in row.items() if not (isinstance(v, float) and v != v)}
            if isinstance(row, dict)
            else row
            for row in rows
        ]
    return rows


def _to_chunks(value: object) -> object:
    if isinstance(value, str):
        return [{"doc_uri": value}]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [{"doc_uri": v} for v in value]
    return value


def _to_str_list(value: object) -> object:
    if not isinstance(value, str):
        return value
    if value.lstrip().startswith("["):
        # Already a JSON list (a CSV cell); the column parser decodes it.
        try:
            if isinstance(json.loads(value), list):
                return value
        except json.JSONDecodeError:
            pass
    return [value]


_LIST_CELLS = frozenset({"expected_retrieved_context", "retrieved_context"})
MAPPED_COERCIONS: dict[str, Callable[[Any], Any]] = {
    "expected_retrieved_context": _to_chunks,
    "retrieved_context": _to_chunks,
    "expected_facts": _to_str_list,
    "guidelines": _to_str_list,
}


def parse_map_options(items: list[str]) -> dict[str, str]:
    """`["question=request", ...]` (the CLI's `--map`) as a `{SRC: DST}` mapping."""
    mapping: dict[str, str] = {}
    for item in items:
        src, sep, dst = item.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise InputError(f"bad column mapping {item!r}", expected="SRC=DST")
        mapping[src.strip()] = dst.strip()
    return mapping


def apply_mapping(
    rows: list[object], mapping: Mapping[str, str], *, file: str | None, known: frozenset[str]
) -> list[object]:
    """Rename columns `{SRC: DST}` in every row; coerce mapped values (see module doc)."""
    columns = columns_of(rows)
    present = set(columns)
    listing = ", ".join(columns) or "(none)"
    targets: dict[str, str] = {}
    for src, dst in mapping.items():
        if src not in present:
            hint = did_you_mean(src, columns)
            if dst in present and src in known:
                hint = f"; the mapping goes SRC=DST, did you mean {dst}={src}?"
            raise InputError(
                f"column mapping source {src!r} is not a column of the data{hint}",
                file=file,
                expected=f"one of the columns: {listing}",
            )
        if dst in targets:
            raise InputError(
                f"columns {targets[dst]!r} and {src!r} are both mapped to {dst!r}",
                file=file,
                expected="one source column per destination",
            )
        if dst in present and dst not in mapping:
            raise InputError(
                f"column mapping {src}={dst} would overwrite the existing column {dst!r}",
                file=file,
                expected="a destination that is not already a column",
            )
        targets[dst] = src
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            out.append(row)
            continue
        new: dict[str, Any] = {}
        for key, value in row.items():
            target = mapping.get(key)
            if target is None:
                new[key] = value
            else:
                if target in _LIST_CELLS and isinstance(value, str) and value.lstrip()[:1] == "[":
                    # A list in a cell (a CSV's JSON or Python list literal, as pandas
                    # writes one) is the list, not one document id.
                    value = parse_literal(value, file=file, path=f"$[{i}].{key}")
                coerce = MAPPED_COERCIONS.get(target)
                new[target] = coerce(value) if coerce is not None else value
        out.append(new)
    return out


__all__ = [
    "MAPPED_COERCIONS",
    "apply_mapping",
    "call_step_of",
    "clean_rows",
    "columns_of",
    "content_text",
    "decode_json",
    "dump_chunks",
    "eval_case",
    "eval_set",
    "gc_paused",
    "parse_chunks",
    "parse_guidelines",
    "parse_map_options",
    "parse_str",
    "parse_str_list",
    "response_step",
    "retrieval_step",
    "row_error",
    "rows_of",
    "step",
    "to_csv",
    "tool_call",
    "tool_response",
    "turn",
    "user_input",
    "write_records",
]
