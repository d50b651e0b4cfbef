"""Vertex AI Gen AI evaluation datasets (SPEC §2.4): rows, and the `eval_cases` shape.

Rows come from JSON (a list of row objects, or a dict of column lists), JSONL, CSV or
memory (`formats.load_rows`, pandas DataFrames). One row is one `EvalCase`:

| column | model |
|---|---|
| `id` / `eval_case_id` / `eval_id` | case id; default `row-{index}` (stable) |
| `prompt` (alias `input`; a string or a genai Content) | user input of the turn(s) |
| `reference` (alias `expected_final_response`) | reference turn's final response |
| `reference_trajectory` (alias `expected_trajectory`) | reference turn's tool calls |
| `response` (or `responses: [{response}]`, one candidate) | actual turn's final response |
| `predicted_trajectory` | actual turn's tool calls |
| `latency_in_seconds`, `failure` | actual turn's `latency_s`, `error` |
| `tags`, `description`, `rubric_groups` | case tags, description, rubrics |
| `expected_response`, `expected_facts`, `guidelines` | the case fields of the same name |
| `expected_retrieved_context`, `session_input`, `final_session_state` | the same |
| anything else | `EvalCase.metadata`, written back as columns |

A trajectory is a list (or, in CSV, a JSON string of a list) of `{tool_name,
tool_input}`; a step's `tool_output` (when not null) becomes a tool-response step after
the call; other step keys (`step_number`, `reasoning`, ...) are kept in metadata
(`vertex:step_fields`) and written back. The reference turn exists when the row holds
reference data, or when it holds nothing recorded (so the prompt has a turn to drive an
agent); the actual turn exists when the row holds a response, predicted trajectory,
latency or failure (recorded results, scored without running an agent).

A saved Vertex `EvalResult` (`{summary_metrics, metrics_table | pointwise_metrics}`)
loads as recorded rows: the table's rows as above (their `{metric}/score` and
`{metric}/explanation` columns are kept in metadata, Vertex's original numbers, and
written back), the other keys in the set metadata as `vertex:{key}`.

`{eval_set_id?, name?, description?, eval_cases: [...]}` (the Gen AI SDK dataset, and
ADK-like hybrids) holds the same row shape per case, plus `rubric_groups {name:
{rubrics: [{rubric_id, content.property.description, type?}]}}`; rubric types other
than FINAL_RESPONSE_QUALITY / TOOL_USE_QUALITY, group keys and other rubric keys are
kept in metadata (`vertex:rubric_groups`). Other envelope keys go to the set metadata.

Writing: `.jsonl` → JSONL rows, `.csv` → CSV (lists and objects as JSON strings),
otherwise JSON: a list of rows, or the `eval_cases` envelope when the set has a name,
description or metadata (JSONL and CSV have no place for those). A row's turn has
text-only user input and only tool-call / tool-response steps; anything else raises
`InputError` naming the case. Turn ids, timestamps and token usage have no column and
are not written.

A conversation of several turns is one row: its earlier turns are the `history` column
(genai `Content` messages, what the Gen AI evaluation SDK reads as an `EvalCase`'s
`conversation_history`; `assay.formats._vertex_history`), read back from `history` or
`conversation_history` as the turns before the row's own (of the reference turns, and of
the actual ones when the row holds a recorded answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet
from assay.errors import InputError
from assay.formats._build import case_shell, set_shell, turn_shell
from assay.formats._columns import (
    EXPECTED_FIELDS,
    SAMPLE_ROWS,
    columns_of,
    content_text,
    row_error,
    warn_misspelt_columns,
)
from assay.formats._common import check_unique_ids, gc_paused, type_name
from assay.formats._fit_rows import fit_rows, fit_to_file
from assay.formats._loss import Loss, refuse
from assay.formats._vertex_fields import (
    RUBRIC_GROUPS,
    STEP_FIELDS,
    cell_path,
    optional_columns,
    trajectory,
)
from assay.formats._vertex_history import HISTORY_COLUMNS, parse_history
from assay.formats._vertex_write import _row, rows
from assay.formats._vertex_write import dump as _dump
from assay.formats._vertex_write import write as _write
from assay.formats.mapping import apply_mapping, clean_rows, rows_of

NAME = "vertex"


def fit(evalset: EvalSet) -> tuple[EvalSet, list[Loss]]:
    """The set as Vertex rows hold it, and what they cannot (`assay.formats._fit_rows`)."""
    return fit_rows(
        evalset,
        lambda case, i: _row(case, i, "id"),
        answer_in="reference",
        usage=False,
        set_fields=True,
    )


def dump(evalset: EvalSet) -> object:
    """Rows (or the `eval_cases` envelope); refuses a set whose fit loses a field."""
    fitted, losses = fit(evalset)
    if losses:
        raise refuse(losses, "a Vertex dataset")
    return _dump(fitted)


def fit_file(evalset: EvalSet, path: Path) -> tuple[EvalSet, list[Loss]]:
    """`fit` for a file at `path`: JSONL and CSV rows have no place for the set's name,
    description and metadata, and a CSV cell holds text (`_fit_rows.fit_to_file`)."""
    fitted, losses = fit(evalset)
    return fitted, losses + fit_to_file(
        fitted, path, set_fields=True, internal=(STEP_FIELDS, RUBRIC_GROUPS)
    )


def write(evalset: EvalSet, path: Path) -> None:
    """Rows as `.jsonl` / `.csv` (no place for the set's name, description, metadata),
    otherwise `dump` as JSON; refuses a set whose fit loses a field."""
    fitted, losses = fit_file(evalset, path)
    if losses:
        raise refuse(losses, f"a Vertex {path.suffix.lstrip('.').upper() or 'JSON'} file")
    _write(fitted, path)


_ALIASES = (
    ("id", "eval_case_id", "eval_id"),
    ("prompt", "input"),
    ("reference", "expected_final_response"),
    ("reference_trajectory", "expected_trajectory"),
)
_SECONDARY = frozenset(k for group in _ALIASES for k in group[1:])
_CORE = frozenset(k for group in _ALIASES for k in group) | {"response", "predicted_trajectory"}
_OPTIONAL = frozenset(
    {
        "responses",
        "latency_in_seconds",
        "failure",
        "tags",
        "description",
        "rubric_groups",
        *EXPECTED_FIELDS,
        "session_input",
        "final_session_state",
        *HISTORY_COLUMNS,
    }
)
KNOWN_COLUMNS = _CORE | _OPTIONAL
# The main columns: a row holding no others needs no alias, optional-column or metadata
# handling.
_PLAIN = frozenset(group[0] for group in _ALIASES) | {"response", "predicted_trajectory"}
_MARKERS = frozenset(
    {
        "prompt",
        "reference",
        "predicted_trajectory",
        "reference_trajectory",
        "expected_trajectory",
        "eval_case_id",
        "expected_final_response",
        "rubric_groups",
    }
)
# Columns of the other row formats, which Vertex detection must leave to them.
_FOREIGN = frozenset({"request", "inputs", "request_id", "turns", "query", "expected_tool_use"})


# ----------------------------------------------------------------------------- detection


def _row_keys(rows: list[Any]) -> set[str] | None:
    sample = rows[:20]
    if not sample or not all(isinstance(r, Mapping) for r in sample):
        return None
    return {k for r in sample for k in r}


def saved_result_table(data: Mapping[str, object]) -> str | None:
    """The key of the row table of a saved Vertex `EvalResult`, or None if `data` is not one.

    `EvalResult` (Vertex SDK) holds `summary_metrics` and its per-row table as
    `metrics_table` (pandas rows) or `pointwise_metrics`; both are saved as JSON by users.
    """
    if not isinstance(data.get("summary_metrics"), Mapping):
        return None
    for key in ("metrics_table", "pointwise_metrics"):
        if isinstance(data.get(key), list):
            return key
    return None


def detect(path: Path | None, data: object) -> bool:
    if isinstance(data, Mapping):
        if saved_result_table(data) is not None:
            return True
        cases = data.get("eval_cases")
        if isinstance(cases, list):
            # ADK eval sets share the envelope, but their cases hold `conversation`.
            keys = _row_keys(cases)
            return keys is not None and bool(
                keys & {"prompt", "eval_case_id", "reference_trajectory"}
            )
        if data and all(isinstance(v, list) for v in data.values()):
            cols = set(data)
            return bool(cols & _MARKERS) and not cols & _FOREIGN
        return False
    if isinstance(data, list):
        keys = _row_keys(data)
        return keys is not None and bool(keys & _MARKERS) and not keys & _FOREIGN
    return False


# ----------------------------------------------------------------------------- loading


def load_data(data: object, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load Vertex rows or an `eval_cases` dataset into an `EvalSet`.

    With a `file`, `data` is taken to be that file's parse and is consumed (its rows are
    released as they are converted); in-memory rows (`file=None`) are left untouched.
    """
    set_id = Path(file).stem if file else ""
    name = description = None
    set_meta: dict[str, Any] = {}
    base = "$"
    if isinstance(data, Mapping) and (table := saved_result_table(data)) is not None:
        # A saved Vertex `EvalResult`: its table rows are recorded rows whose
        # `{metric}/score` columns stay in metadata as Vertex's own numbers.
        base = f"$.{table}"
        rows = data[table]
        set_meta = {f"vertex:{k}": v for k, v in data.items() if k != table}
    elif isinstance(data, Mapping) and "eval_cases" in data:
        base = "$.eval_cases"
        rows = data["eval_cases"]
        if not isinstance(rows, list):
            raise InputError(
                f"got {type_name(rows)}", file=file, path=base, expected="a list of cases"
            )
        for key, value in data.items():
            if key in ("eval_set_id", "name", "description") and not isinstance(value, str):
                raise InputError(
                    f"got {type_name(value)}", file=file, path=f"$.{key}", expected="a string"
                )
            if key == "eval_set_id":
                set_id = value
            elif key == "name":
                name = value
            elif key == "description":
                description = value
            elif key != "eval_cases":
                set_meta[key] = value
    else:
        rows = rows_of(data, file, "Vertex")
    rows = clean_rows(rows, file)
    if mapping:
        rows = apply_mapping(rows, mapping, file=file, known=KNOWN_COLUMNS)
    warn_misspelt_columns(columns_of(rows[:SAMPLE_ROWS]), KNOWN_COLUMNS, file)
    # Tool names repeat across rows: one string object per distinct name.
    names: dict[str, str] = {}
    # Rows parsed from the file for this load are released as they are converted, and
    # their tool arguments adopted by the calls. Not those of YAML, where an alias can
    # share one object between cells, nor in-memory rows, which stay the caller's.
    release = file is not None
    owned = file is not None and not file.lower().endswith((".yaml", ".yml"))
    with gc_paused():
        # Parents before children (see `assay.formats._build`): the set, then its cases.
        evalset, set_values = set_shell(set_id, name, description, set_meta)
        cases: list[EvalCase] = set_values["cases"]
        append = cases.append
        for i, row in enumerate(rows):
            append(_case(i, row, file, base, names, owned))
            if release:
                # So that the raw rows and the cases do not peak in memory together.
                rows[i] = None
    check_unique_ids([c.id for c in cases], file)
    return evalset


def _case(
    index: int, row: object, file: str | None, base: str, names: dict[str, str], owned: bool
) -> EvalCase:
    if type(row) is not dict:
        if not isinstance(row, Mapping):
            raise row_error(file, None, f"{base}[{index}]", f"got {type_name(row)}", "a row object")
        row = dict(row)
    get = row.get
    raw_id = get("id")
    if raw_id is None:
        raw_id = get("eval_case_id")
        if raw_id is None:
            raw_id = get("eval_id")
    if type(raw_id) is str:
        case_id = raw_id
    elif raw_id is None:
        case_id = f"row-{index}"
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        case_id = str(raw_id)
    else:
        raise row_error(
            file, None, cell_path(base, index, "id"), f"got {type_name(raw_id)}", "a string id"
        )

    prompt = get("prompt")
    if prompt is None:
        prompt = get("input")
    if prompt is not None and type(prompt) is not str:
        where = cell_path(base, index, "prompt" if "prompt" in row else "input")
        prompt = content_text(prompt, file, case_id, where)
    response = get("response")
    if response is not None and type(response) is not str:
        response = content_text(response, file, case_id, cell_path(base, index, "response"))
    reference = get("reference")
    ref_key = "reference"
    if reference is None:
        reference = get("expected_final_response")
        ref_key = "expected_final_response"
    if reference is not None and type(reference) is not str:
        if isinstance(reference, Mapping) and "response" in reference:
            reference = reference["response"]
        reference = content_text(reference, file, case_id, cell_path(base, index, ref_key))
    ref_raw = get("reference_trajectory")
    ref_col = "reference_trajectory"
    if ref_raw is None:
        ref_raw = get("expected_trajectory")
        ref_col = "expected_trajectory"
    pred_raw = get("predicted_trajectory")

    # The objects are created parents first (see `assay.formats._build`): the case, then
    # each turn, then its steps. A turn the row turns out not to have is not created
    # ahead: whether it exists is only known after the optional columns.
    case, values = case_shell(case_id)
    has_ref = ref_raw is not None or reference is not None
    ref_turns = act_turns = None
    ref_fields = pred_fields = None
    if has_ref:
        ref_turns = []
        ref_turn, ref_values, ref_steps = turn_shell(prompt)
        ref_turns.append(ref_turn)
        ref_values["final_response"] = reference
        if ref_raw is not None:
            ref_fields = trajectory(
                ref_raw, ref_steps, file, case_id, (base, index, ref_col), names, owned
            )
    act_values: dict[str, Any] | None = None
    if response is not None or pred_raw is not None:
        act_turns = []
        act_turn, act_values, pred_steps = turn_shell(prompt)
        act_turns.append(act_turn)
        if pred_raw is not None:
            pred_fields = trajectory(
                pred_raw,
                pred_steps,
                file,
                case_id,
                (base, index, "predicted_trajectory"),
                names,
                owned,
            )

    extra: dict[str, Any] | None = None
    turn_extra: dict[str, Any] | None = None
    keys = row.keys()
    # Most rows hold only the main columns: one subset test skips the rest of the work.
    plain = keys <= _PLAIN
    if not plain and not keys.isdisjoint(_OPTIONAL):
        extra, turn_extra, response = optional_columns(
            row, file, case_id, f"{base}[{index}]", response
        )
    has_act = response is not None or pred_raw is not None or turn_extra is not None
    if not (has_ref or has_act or prompt is not None or extra):
        raise row_error(
            file,
            case_id,
            f"{base}[{index}]",
            f"the row has none of the Vertex columns; its columns are: {', '.join(map(str, keys))}",
            "prompt, response, reference, predicted_trajectory or reference_trajectory "
            "(rename columns with --map SRC=DST)",
        )
    if has_act:
        if act_values is None:  # the turn comes from the optional columns alone
            act_turns = []
            act_turn, act_values, _ = turn_shell(prompt)
            act_turns.append(act_turn)
        act_values["final_response"] = response
        if turn_extra is not None:
            act_values.update(turn_extra)
    elif not has_ref:  # a prompt to drive an agent with
        ref_turns = []
        ref_turns.append(turn_shell(prompt)[0])
    if not plain and not keys.isdisjoint(HISTORY_COLUMNS):
        column = next(c for c in HISTORY_COLUMNS if c in keys)
        where = cell_path(base, index, column)
        # The conversation before the row's exchange (`assay.formats._vertex_history`).
        for turns in (ref_turns, act_turns):
            if turns is not None:
                turns[:0] = parse_history(row[column], file, case_id, where)
    values["reference"] = ref_turns
    values["actual"] = act_turns

    if not plain:
        unknown = keys - KNOWN_COLUMNS
        if not keys.isdisjoint(_SECONDARY):
            # An alias next to the column it stands for is an ordinary extra column.
            for group in _ALIASES:
                present = [k for k in group if k in keys]
                unknown |= set(present[1:])
        if unknown:
            values["metadata"].update((k, row[k]) for k in row if k in unknown)
    if ref_fields is not None or pred_fields is not None:
        step_fields: dict[str, list[dict[str, Any]]] = {}
        if ref_fields is not None:
            step_fields[ref_col] = ref_fields
        if pred_fields is not None:
            step_fields["predicted_trajectory"] = pred_fields
        values["metadata"][STEP_FIELDS] = step_fields
    if extra is not None:
        if RUBRIC_GROUPS in extra:
            layout = extra.pop(RUBRIC_GROUPS)
            if layout is not None:
                values["metadata"][RUBRIC_GROUPS] = layout
        values.update(extra)
    return case


def case_of_row(index: int, row: object, file: str | None, names: dict[str, str]) -> EvalCase:
    """Row `index` of a row file as `load_data` builds it (`formats.stream` reads files
    a batch at a time); `names` interns tool names across the rows of a batch."""
    return _case(index, row, file, "$", names, file is not None)


__all__ = [
    "KNOWN_COLUMNS",
    "NAME",
    "RUBRIC_GROUPS",
    "STEP_FIELDS",
    "case_of_row",
    "detect",
    "dump",
    "load_data",
    "rows",
    "write",
]
