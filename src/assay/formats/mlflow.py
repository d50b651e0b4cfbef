"""Databricks / MLflow agent-evaluation rows (SPEC §2.5).

Two row styles, one case per row (JSON list or dict of columns, JSONL, CSV, memory):

- flat (Databricks): `request_id` (or `id`), `request`, `response`, `expected_response`,
  `expected_facts[]`, `guidelines` (a list, or an object of named lists),
  `retrieved_context[{doc_uri, content}]`, `expected_retrieved_context[{doc_uri,
  content?}]`, `tags[]`;
- MLflow 3: `{inputs, outputs?, expectations?}`. The prompt is `inputs.request`,
  `.messages`, `.question`, `.query`, `.input` or `.prompt` (the first present), else
  the only string value; an `inputs` object other than `{request: TEXT}` or
  `{messages: [...]}` is kept in metadata (`inputs`) so other inputs and the key name
  survive a round trip. MLflow 3 `tags` valued `""` are the case's tags. `expectations` may hold
  `expected_response`, `expected_facts`, `guidelines`, `expected_retrieved_context`;
  other expectations are kept in metadata (`expectations`).

A request is a string or `{messages: [{role, content}]}` (chat). Messages become turns:
leading `system` messages are kept in metadata (`mlflow:system`); each `user` message
opens a turn; `assistant` messages after it are that turn's reply (the last one its
final response, earlier ones intermediate agent messages). The last message must be
the user's prompt. When the row holds a response or retrieved context (a recorded
run), the turns are `EvalCase.actual`, the response and a `retrieval` step sit in the
last one; otherwise they are `EvalCase.reference`, to drive an agent. A response is a
string, or an object holding `response`, `content` or chat-completion `choices[0].
message.content` (its `usage` becomes the turn's token usage; the object is kept in
metadata `mlflow:response` and written back with the text updated). Expected fields
go to the case fields of the same name; other columns to `EvalCase.metadata`.

MLflow's classic columns (`query` / `question` / `inputs`, `ground_truth` / `targets`,
`predictions`, `context`, list cells as Python literals) are recognised and renamed:
see `assay.formats._mlflow_classic`.

Writing: JSON / JSONL as MLflow 3 rows (what `mlflow.genai.evaluate` takes), CSV as
flat columns. Column mapping: see `assay.formats.mapping`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Step
from assay.errors import InputError
from assay.formats._build import eval_case, eval_set, retrieval_step, turn
from assay.formats._columns import (
    EXPECTED_FIELDS,
    SAMPLE_ROWS,
    columns_of,
    parse_chunks,
    parse_expected,
    parse_str_list,
    row_error,
    warn_misspelt_columns,
    write_records,
)
from assay.formats._common import check_unique_ids, gc_paused, type_name
from assay.formats._fit_rows import fit_rows, fit_to_file
from assay.formats._loss import Loss, refuse
from assay.formats._mlflow_chat import (
    PROMPT_KEYS,
    RAW_RESPONSE,
    SYSTEM,
    conversation,
    fit_answers,
    prompt_key,
    response_of,
)
from assay.formats._mlflow_classic import classic_rows, is_classic
from assay.formats._mlflow_write import case_row, inputs_of
from assay.formats.mapping import apply_mapping, clean_rows, rows_of

NAME = "mlflow"

_FLAT = frozenset(
    {
        "request_id",
        "id",
        "request",
        "response",
        *EXPECTED_FIELDS,
        "retrieved_context",
        "tags",
    }
)
_V3 = frozenset({"inputs", "outputs", "expectations"})
_MARKERS = frozenset({"request", "request_id", "retrieved_context", *EXPECTED_FIELDS})
_FOREIGN = frozenset(
    {
        "prompt",
        "predicted_trajectory",
        "reference_trajectory",
        "expected_trajectory",
        "turns",
        "query",
        "expected_tool_use",
        "eval_case_id",
    }
)


def detect(path: Path | None, data: object) -> bool:
    if isinstance(data, Mapping):
        if not (data and all(isinstance(v, list) for v in data.values())):
            return False
        keys = set(data)
    elif isinstance(data, list) and data:
        sample = data[:20]
        if not all(isinstance(r, Mapping) for r in sample):
            return False
        keys = {k for r in sample for k in r}
        if "inputs" in keys and all(isinstance(r.get("inputs"), Mapping) for r in sample):
            return not keys & _FOREIGN
    else:
        return False
    if is_classic(keys, data if isinstance(data, list) else []):
        return True
    return bool(keys & _MARKERS) and not keys & _FOREIGN


def load_data(data: object, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load flat or MLflow-3 rows into an `EvalSet` (one case per row).

    With a `file`, `data` is consumed as in `vertex.load_data`.
    """
    rows = clean_rows(rows_of(data, file, "MLflow"), file)
    if mapping:
        rows = apply_mapping(rows, mapping, file=file, known=_FLAT | _V3)
    elif is_classic(set(columns_of(rows)), rows):
        rows = classic_rows(rows, file=file)
    warn_misspelt_columns(columns_of(rows[:SAMPLE_ROWS]), _FLAT | _V3, file)
    with gc_paused():
        cases = []
        for i, row in enumerate(rows):
            cases.append(_case(i, row, file))
            if file is not None:
                rows[i] = None  # see vertex.load_data
    check_unique_ids([c.id for c in cases], file)
    return eval_set(Path(file).stem if file else "", cases)


def _case(index: int, row: object, file: str | None) -> EvalCase:
    where = f"$[{index}]"
    if not isinstance(row, Mapping):
        raise row_error(file, None, where, f"got {type_name(row)}", "a row object")
    raw_id = row.get("request_id", row.get("id"))
    if raw_id is None:
        case_id = f"row-{index}"
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        case_id = str(raw_id)
    else:
        raise row_error(
            file, None, f"{where}.request_id", f"got {type_name(raw_id)}", "a string id"
        )
    metadata: dict[str, Any] = {}
    if "inputs" in row:
        known = _V3 | {"request_id", "id"}
        request, req_path, expectations, exp_path, response = _v3_parts(
            row, file, case_id, where, metadata
        )
        resp_key = "outputs"
    else:
        known = _FLAT - {"id"} if "request_id" in row else _FLAT
        request, req_path = row.get("request"), f"{where}.request"
        if request is None:
            raise _missing_request(row, file, case_id, where)
        expectations, exp_path, response, resp_key = row, where, row.get("response"), "response"
    system, history, prompt = conversation(request, file, case_id, req_path)
    if system:
        metadata[SYSTEM] = system
    extra = parse_expected(expectations, file, case_id, exp_path)
    # A list of tags, or MLflow 3 tags all valued "" (how assay writes them), are the
    # case's; other MLflow 3 tag objects stay in metadata.
    tags = row.get("tags")
    if isinstance(tags, Mapping) and tags and all(v == "" for v in tags.values()):
        tags = list(tags)
    if isinstance(tags, list):
        extra["tags"] = parse_str_list(tags, file, case_id, f"{where}.tags")
        known = known | {"tags"}
    else:
        known = known - {"tags"}
    retrieved = row.get("retrieved_context")
    last_extra: dict[str, Any] = {}
    text = None
    if response is not None:
        text, usage, raw = response_of(response, file, case_id, f"{where}.{resp_key}")
        if usage is not None:
            last_extra["usage"] = usage
        if raw is not None:
            metadata[RAW_RESPONSE] = raw
    steps: list[Step] = []
    if retrieved is not None:
        chunks = parse_chunks(retrieved, file, case_id, f"{where}.retrieved_context")
        steps.append(retrieval_step(chunks))
    recorded = response is not None or retrieved is not None
    turns = [*history, turn(prompt, steps, text, last_extra)]
    for key, value in row.items():
        if key not in known and key != "retrieved_context":
            metadata[key] = value
    return eval_case(
        case_id, None if recorded else turns, turns if recorded else None, metadata, extra
    )


def _missing_request(
    row: Mapping[str, object], file: str | None, case_id: str, where: str
) -> InputError:
    columns = [str(k) for k in row]
    guess = next(
        (c for c in ("question", "query", "prompt", "input", "inputs", "text") if c in row), None
    )
    if guess is None:
        guess = next((c for c in columns if c not in _FLAT and isinstance(row[c], str)), "SRC")
    return row_error(
        file,
        case_id,
        where,
        f"the row has no 'request' column (its columns are: {', '.join(columns)})",
        f"a request column; rename one with --map {guess}=request",
    )


def _v3_parts(
    row: Mapping[str, object],
    file: str | None,
    case_id: str,
    where: str,
    metadata: dict[str, object],
) -> tuple[object, str, Mapping[str, object], str, object]:
    inputs = row["inputs"]
    if not isinstance(inputs, Mapping):
        raise row_error(
            file, case_id, f"{where}.inputs", f"got {type_name(inputs)}", "an object of inputs"
        )
    key = prompt_key(inputs)
    if key is None:
        raise row_error(
            file,
            case_id,
            f"{where}.inputs",
            f"no prompt among the inputs {sorted(inputs)}",
            f"one of {', '.join(PROMPT_KEYS)}, or a single string input",
        )
    request = inputs[key]
    if key == "messages":
        request = {"messages": request}
    if dict(inputs) != inputs_of(None, request):
        # Other inputs, or another key name: kept so they are written back.
        metadata["inputs"] = dict(inputs)
    expectations = row.get("expectations") or {}
    if not isinstance(expectations, Mapping):
        raise row_error(
            file,
            case_id,
            f"{where}.expectations",
            f"got {type_name(expectations)}",
            "an object of expectations",
        )
    others = {k: v for k, v in expectations.items() if k not in EXPECTED_FIELDS}
    if others:
        metadata["expectations"] = others
    return (
        request,
        f"{where}.inputs.{key}",
        expectations,
        f"{where}.expectations",
        row.get("outputs"),
    )


# ----------------------------------------------------------------------------- writing


def fit(evalset: EvalSet) -> tuple[EvalSet, list[Loss]]:
    """The set as MLflow rows hold it, and what they cannot (`assay.formats._fit_rows`;
    earlier answers: `assay.formats._mlflow_chat.fit_answers`)."""
    fitted, losses = fit_rows(
        evalset, case_row, answer_in="expected_response", usage=True, set_fields=False
    )
    return fitted, losses + fit_answers(fitted)


def dump(evalset: EvalSet, *, flat: bool = False) -> list[dict[str, object]]:
    """One row per case: MLflow 3 rows (`inputs`, `outputs`, `expectations`: what
    `mlflow.genai.evaluate` takes), or with `flat` Databricks' flat columns for cases
    that did not come from MLflow 3 rows.

    Refuses (`ConversionLossError`) a set whose fit loses a field.
    """
    fitted, losses = fit(evalset)
    if losses:
        raise refuse(losses, "an MLflow dataset")
    return [case_row(case, i, flat) for i, case in enumerate(fitted.cases)]


def fit_file(evalset: EvalSet, path: Path) -> tuple[EvalSet, list[Loss]]:
    """`fit` for a file at `path`: a CSV cell holds text (`_fit_rows.fit_to_file`)."""
    fitted, losses = fit(evalset)
    return fitted, losses + fit_to_file(
        fitted, path, set_fields=False, internal=(SYSTEM, RAW_RESPONSE, "inputs", "expectations")
    )


def write(evalset: EvalSet, path: Path) -> None:
    """JSON / JSONL: MLflow 3 rows; CSV: flat columns (a cell holds no object).

    Refuses (`ConversionLossError`) a set whose fit for `path` loses a field.
    """
    fitted, losses = fit_file(evalset, path)
    if losses:
        raise refuse(losses, f"an MLflow {path.suffix.lstrip('.').upper() or 'JSON'} file")
    flat = path.suffix.lower() == ".csv"
    write_records([case_row(case, i, flat) for i, case in enumerate(fitted.cases)], path)
