"""Helpers shared by the row formats (Vertex, MLflow): column mapping, row clean-up,
typed column parsers, and fast construction of model objects.

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

Fast construction: loading 100k rows must not run pydantic validation on every
nested object, so the builders below create model instances directly from values
the loaders have already type-checked (the same effect as `model_construct`, at a
fraction of its cost). The builders name every field of their model; an import-time
check fails loudly if the model gains or loses a field. Built instances report every
field as explicitly set (`model_fields_set`).
"""

from __future__ import annotations

import csv
import gc
import io
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.errors import InputError
from assay.formats._common import type_name
from assay.model.core import (
    Chunk,
    EvalCase,
    EvalSet,
    Retrieval,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserInput,
)

M = TypeVar("M", bound=BaseModel)
_new = object.__new__
# The slot setters of BaseModel: what `model_construct` assigns, without its overhead.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# One set of every field name per class, shared by the instances built here: pydantic
# only ever adds field names to it (on assignment), which it already holds, so it never
# changes; a set per instance would cost a third of a loaded row's memory.
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {
    cls: set(cls.model_fields)
    for cls in (ToolCall, ToolResponse, Step, UserInput, Turn, EvalCase, EvalSet)
}
_CALL_FIELDS = _ALL_FIELDS[ToolCall]
_STEP_FIELDS = _ALL_FIELDS[Step]

# ----------------------------------------------------------------------------- builders


def build(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` from a complete, already valid field dict (no validation).

    `cls` is one of the classes of `_ALL_FIELDS`; the instance reports every field as set.
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields(obj, _ALL_FIELDS[cls])
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> ToolCall:
    return build(ToolCall, {"id": call_id, "name": name, "args": args})


def tool_response(name: str, response: Any, call_id: str | None = None) -> ToolResponse:
    return build(ToolResponse, {"id": call_id, "name": name, "response": response})


def call_step_of(name: str, args: dict[str, Any]) -> Step:
    """`Step(tool_call=ToolCall(name, args))`, inlined: the hottest path of row loading."""
    call = _new(ToolCall)
    _set_dict(call, {"id": None, "name": name, "args": args})
    _set_fields(call, _CALL_FIELDS)
    _set_extra(call, None)
    _set_private(call, None)
    step = _new(Step)
    _set_dict(
        step,
        {
            "tool_call": call,
            "tool_response": None,
            "agent_message": None,
            "agent_transfer": None,
            "variables_update": None,
            "retrieval": None,
        },
    )
    _set_fields(step, _STEP_FIELDS)
    _set_extra(step, None)
    _set_private(step, None)
    return step


def step(kind: str, value: Any) -> Step:
    """A step holding `value` as its `kind` (one of `STEP_KINDS`)."""
    values: dict[str, Any] = {
        "tool_call": None,
        "tool_response": None,
        "agent_message": None,
        "agent_transfer": None,
        "variables_update": None,
        "retrieval": None,
    }
    values[kind] = value
    return build(Step, values)


def response_step(response: ToolResponse) -> Step:
    return step("tool_response", response)


def retrieval_step(chunks: list[Chunk]) -> Step:
    return step("retrieval", Retrieval(chunks=chunks))


def user_input(text: str | None) -> UserInput:
    return build(
        UserInput,
        {
            "text": text,
            "dtmf": None,
            "blobs": [],
            "event": None,
            "variables": None,
            "tool_responses": [],
        },
    )


def turn(
    text: str | None,
    steps: list[Step],
    final_response: str | None,
    extra: dict[str, Any] | None = None,
) -> Turn:
    """A turn with a text-only user input; `extra` sets other Turn fields."""
    values: dict[str, Any] = {
        "id": None,
        "user_input": user_input(text),
        "steps": steps,
        "final_response": final_response,
        "latency_s": None,
        "usage": None,
        "error": None,
        "expectations": [],
        "rubrics": [],
        "created_at": None,
    }
    if extra:
        values.update(extra)
    return build(Turn, values)


def eval_case(
    case_id: str,
    reference: list[Turn] | None,
    actual: list[Turn] | None,
    metadata: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> EvalCase:
    """A case; `extra` sets other EvalCase fields with already valid values."""
    values: dict[str, Any] = {
        "id": case_id,
        "tags": [],
        "description": None,
        "session_input": None,
        "reference": reference,
        "actual": actual,
        "scenario": None,
        "rubrics": [],
        "expected_response": None,
        "expected_facts": None,
        "expected_retrieved_context": None,
        "guidelines": None,
        "final_session_state": None,
        "created_at": None,
        "metadata": metadata,
    }
    if extra:
        values.update(extra)
    return build(EvalCase, values)


def eval_set(
    set_id: str,
    cases: list[EvalCase],
    name: str | None = None,
    description: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> EvalSet:
    values = {
        "id": set_id,
        "name": name,
        "description": description,
        "cases": cases,
        "created_at": None,
        "metadata": metadata or {},
    }
    return build(EvalSet, values)


def _check_builders() -> None:
    # The builders above spell out every field; a model change must update them.
    probes: list[BaseModel] = [
        tool_call("t", {}),
        tool_response("t", None),
        call_step_of("t", {}),
        user_input(None),
        turn(None, [], None),
        eval_case("c", None, None, {}),
        eval_set("s", []),
    ]
    for probe in probes:
        expected = set(type(probe).model_fields)
        if set(probe.__dict__) != expected:
            raise RuntimeError(
                f"assay.formats.mapping builds {type(probe).__name__} with fields "
                f"{sorted(probe.__dict__)}, but the model has {sorted(expected)}"
            )


_check_builders()


FREEZE_AT = 10_000


@contextmanager
def gc_paused(count: int) -> Iterator[None]:
    """Keep the cyclic GC out of building `count` cases.

    The objects built form no reference cycles, so the collector has nothing to find
    among them; yet with it running, its passes over millions of fresh objects cost
    more than building them. For large loads the objects are also frozen
    (`gc.freeze()`), so later full collections of the run skip them; refcounting still
    frees them. The price: cyclic garbage that exists at that moment stays until
    `gc.unfreeze()`.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if count >= FREEZE_AT:
            gc.freeze()
        if was_enabled:
            gc.enable()


# ----------------------------------------------------------------------------- errors


def row_error(
    file: str | None, case_id: str | None, path: str, message: str, expected: str | None = None
) -> InputError:
    return InputError(message, file=file, case_id=case_id, path=path, expected=expected)


# ----------------------------------------------------------------------------- rows


def rows_of(data: Any, file: str | None, what: str) -> list[Any]:
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


def columns_of(rows: list[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            for key in row:
                seen.setdefault(str(key), None)
    return list(seen)


def _to_chunks(value: Any) -> Any:
    if isinstance(value, str):
        return [{"doc_uri": value}]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [{"doc_uri": v} for v in value]
    return value


def _to_str_list(value: Any) -> Any:
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
    rows: list[Any], mapping: Mapping[str, str], *, file: str | None, known: frozenset[str]
) -> list[Any]:
    """Rename columns `{SRC: DST}` in every row; coerce mapped values (see module doc)."""
    columns = columns_of(rows)
    present = set(columns)
    listing = ", ".join(columns) or "(none)"
    targets: dict[str, str] = {}
    for src, dst in mapping.items():
        if src not in present:
            hint = ""
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
    for row in rows:
        if not isinstance(row, Mapping):
            out.append(row)
            continue
        new: dict[str, Any] = {}
        for key, value in row.items():
            target = mapping.get(key)
            if target is None:
                new[key] = value
            else:
                coerce = MAPPED_COERCIONS.get(target)
                new[target] = coerce(value) if coerce is not None else value
        out.append(new)
    return out


# ----------------------------------------------------------------------------- column parsers


def decode_json(
    value: Any, kind: type, file: str | None, case_id: str | None, path: str, expected: str
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


def parse_str(value: Any, file: str | None, case_id: str | None, path: str) -> str:
    if isinstance(value, str):
        return value
    raise row_error(file, case_id, path, f"got {type_name(value)}", "a string")


def parse_str_list(value: Any, file: str | None, case_id: str | None, path: str) -> list[str]:
    expected = "a list of strings"
    items = decode_json(value, list, file, case_id, path, expected)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise row_error(file, case_id, f"{path}[{i}]", f"got {type_name(item)}", "a string")
    return list(items)


def parse_guidelines(
    value: Any, file: str | None, case_id: str | None, path: str
) -> list[str] | dict[str, list[str]]:
    expected = "a list of strings, or an object of named lists of strings"
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = decode_json(value, dict, file, case_id, path, expected)
    if isinstance(value, Mapping):
        return {str(k): parse_str_list(v, file, case_id, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, str)):
        return parse_str_list(value, file, case_id, path)
    raise row_error(file, case_id, path, f"got {type_name(value)}", expected)


def parse_chunks(value: Any, file: str | None, case_id: str | None, path: str) -> list[Chunk]:
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


def dump_chunks(chunks: list[Chunk]) -> list[dict[str, Any]]:
    return [c.model_dump(exclude_none=True) for c in chunks]


def content_text(value: Any, file: str | None, case_id: str | None, path: str) -> str:
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


# ----------------------------------------------------------------------------- writing


def to_csv(records: list[dict[str, Any]]) -> str:
    """CSV text of row dicts; lists and objects become JSON strings, null an empty cell."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns_of(records), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _cell(v) for k, v in record.items()})
    return buf.getvalue()


def _cell(value: Any) -> str:
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
