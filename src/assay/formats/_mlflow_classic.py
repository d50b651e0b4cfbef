"""MLflow's classic evaluation columns (`mlflow.evaluate` datasets, its example CSVs).

MLflow's own example datasets name their columns `inputs` / `query` / `question`,
`ground_truth` / `targets`, `predictions` and `context`, and retriever sets keep lists
of document ids in a cell as a Python list literal (`"['a.html', 'b.html']"`, what
pandas' `to_csv` writes for a list). These rows are recognised by their columns and
renamed to the MLflow/Databricks fields assay reads:

| classic column | assay field |
|---|---|
| `inputs` (a string), `query`, `question`, `questions` | `request` |
| `ground_truth`, `targets` | `expected_response`; a list of ids: `expected_retrieved_context` |
| `predictions` | `response`; a list of ids: `retrieved_context` |
| `context` | `retrieved_context` (passages: chunk `content`) |
| `source` (retriever sets: ground-truth doc ids, a list or one id) | `expected_retrieved_context` |
| `retrieved_doc_ids` (a list of doc ids) | `retrieved_context` |

The last two are the columns of MLflow's retriever evaluation tutorial
(`mlflow.evaluate(data, model_type="retriever", targets="source",
predictions="retrieved_doc_ids")`), scored by the `precision_at_k`, `recall_at_k` and
`ndcg_at_k` metrics. Two columns that would both become the same field make the header
ambiguous: an error lists the candidate `--map` choices. With `--map` given, nothing
here applies (list cells of the mapped columns are still parsed as literals).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from assay.errors import InputError
from assay.formats._columns import EXPECTED_FIELDS, columns_of

_REQUEST = ("inputs", "query", "question", "questions")
_EXPECTED = ("ground_truth", "targets")
_PREDICTED = ("predictions",)
_CONTEXT = ("context",)
_SOURCE = ("source",)
_RETRIEVED_IDS = ("retrieved_doc_ids",)
CLASSIC = frozenset((*_REQUEST, *_EXPECTED, *_PREDICTED, *_CONTEXT, *_SOURCE, *_RETRIEVED_IDS))
# Columns of the canonical row formats (and ADK legacy files, which also have `query`):
# rows holding any of them are not classic rows.
_CANONICAL = frozenset(
    {
        "request",
        "response",
        "expected_response",
        "retrieved_context",
        "expected_retrieved_context",
        "prompt",
        "reference",
        "predicted_trajectory",
        "reference_trajectory",
        "expected_tool_use",
        "outputs",
        "expectations",
        *EXPECTED_FIELDS,
    }
)


def is_classic(keys: set[str], rows: list[Any]) -> bool:
    """True when the columns are MLflow classic ones (a request column, nothing canonical)."""
    if keys & _CANONICAL or not keys & set(_REQUEST):
        return False
    # A request column alone (`question`, `answer`, …) is too weak a sign: classic rows
    # also name what they are scored against or with.
    if not keys & {*_EXPECTED, *_PREDICTED, *_CONTEXT, *_SOURCE, *_RETRIEVED_IDS}:
        return False
    # MLflow 3 rows hold `inputs` as an object; classic rows hold a string.
    return not ("inputs" in keys and any(isinstance(r.get("inputs"), Mapping) for r in rows[:20]))


def parse_literal(value: object, *, file: str | None, path: str) -> object:
    """A cell holding JSON or a Python literal (lists/dicts as pandas writes them), parsed.

    `ast.literal_eval` reads literals only (never code), so a hostile cell cannot run.
    Other strings are returned unchanged.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{(":
        return value
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise InputError(
            f"cell is neither JSON nor a Python literal ({reason})",
            file=file,
            path=path,
            expected="a JSON value or a Python list/dict literal",
        ) from None


def _only(columns: list[str], names: tuple[str, ...], field: str, file: str | None) -> str | None:
    present = [c for c in columns if c in names]
    if len(present) > 1:
        raise _ambiguous(present, field, "could", file)
    return present[0] if present else None


def _ambiguous(columns: list[str], field: str, verb: str, file: str | None) -> InputError:
    """Two columns that would both become `field`: the error, with the `--map` choices."""
    choices = " or ".join(f"--map {c}={field}" for c in columns)
    return InputError(
        f"ambiguous header: columns {', '.join(columns)} {verb} each be the {field}",
        file=file,
        expected=f"one of them chosen with {choices}",
    )


def _is_list_column(rows: list[dict[str, object]], column: str) -> bool:
    for row in rows:
        value = row.get(column)
        if value not in (None, ""):
            return isinstance(value, list | tuple)
    return False


def classic_rows(rows: list[object], *, file: str | None) -> list[object]:
    """Rows of classic columns renamed (and their list cells parsed) to assay's fields."""
    columns = columns_of(rows)
    request = _only(columns, _REQUEST, "request", file)
    expected = _only(columns, _EXPECTED, "expected_response", file)
    predicted = _only(columns, _PREDICTED, "response", file)
    context = _only(columns, _CONTEXT, "retrieved_context", file)
    source = _only(columns, _SOURCE, "expected_retrieved_context", file)
    retrieved_ids = _only(columns, _RETRIEVED_IDS, "retrieved_context", file)
    parsed: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise InputError(f"row {i} is not an object", file=file, path=f"$[{i}]")
        parsed.append(
            {
                key: parse_literal(value, file=file, path=f"$[{i}].{key}")
                if key in CLASSIC
                else value
                for key, value in row.items()
            }
        )
    if context is not None and predicted is not None and _is_list_column(parsed, predicted):
        raise InputError(
            f"columns {context} and {predicted} would both be the retrieved context",
            file=file,
            expected=f"one of them chosen with --map {context}=retrieved_context or "
            f"--map {predicted}=retrieved_context",
        )
    renames: dict[str, tuple[str, str]] = {}  # column -> (field, chunk key for lists)
    if request is not None:
        renames[request] = ("request", "")
    if expected is not None:
        listed = _is_list_column(parsed, expected)
        renames[expected] = (
            ("expected_retrieved_context", "doc_uri") if listed else ("expected_response", "")
        )
    if predicted is not None:
        listed = _is_list_column(parsed, predicted)
        renames[predicted] = ("retrieved_context", "doc_uri") if listed else ("response", "")
    if context is not None:
        renames[context] = ("retrieved_context", "content")
    if source is not None:
        renames[source] = ("expected_retrieved_context", "doc_uri")
    if retrieved_ids is not None:
        renames[retrieved_ids] = ("retrieved_context", "doc_uri")
    _check_one_column_per_field(renames, file)
    out: list[Any] = []
    for row in parsed:
        new: dict[str, Any] = {}
        for key, value in row.items():
            if key not in renames:
                new[key] = value
                continue
            field, chunk_key = renames[key]
            if chunk_key:
                items = value if isinstance(value, list | tuple) else [value]
                value = [{chunk_key: str(item)} for item in items if item not in (None, "")]
            elif isinstance(value, list | tuple) and field == "request":
                value = " ".join(str(v) for v in value)
            new[field] = value
        out.append(new)
    return out


def _check_one_column_per_field(renames: dict[str, tuple[str, str]], file: str | None) -> None:
    """Two columns that would both become one field: ambiguous, with the `--map` choices."""
    by_field: dict[str, list[str]] = {}
    for column, (field, _) in renames.items():
        by_field.setdefault(field, []).append(column)
    for field, columns in by_field.items():
        if len(columns) > 1:
            raise _ambiguous(columns, field, "would", file)
