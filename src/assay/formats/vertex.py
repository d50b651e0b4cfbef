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

`{eval_set_id?, name?, description?, eval_cases: [...]}` (the Gen AI SDK dataset, and
ADK-like hybrids) holds the same row shape per case, plus `rubric_groups {name:
{rubrics: [{rubric_id, content.property.description, type?}]}}`; rubric types other
than FINAL_RESPONSE_QUALITY / TOOL_USE_QUALITY, group keys and other rubric keys are
kept in metadata (`vertex:rubric_groups`). Other envelope keys go to the set metadata.

Writing: `.jsonl` → JSONL rows, `.csv` → CSV (lists and objects as JSON strings),
otherwise JSON: a list of rows, or the `eval_cases` envelope when the set has a name,
description or metadata (JSONL and CSV have no place for those). A case must have at
most one reference and one actual turn with text-only user input and only tool-call /
tool-response steps; anything else raises `InputError` naming the case. Turn ids,
timestamps and token usage have no column and are not written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.errors import InputError
from assay.formats import mapping as m
from assay.formats._common import check_unique_ids, type_name
from assay.model.core import (
    EvalCase,
    EvalSet,
    Rubric,
    RubricType,
    SessionInput,
    Step,
    Turn,
)

NAME = "vertex"

STEP_FIELDS = "vertex:step_fields"
RUBRIC_GROUPS = "vertex:rubric_groups"
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
        "expected_response",
        "expected_facts",
        "guidelines",
        "expected_retrieved_context",
        "session_input",
        "final_session_state",
    }
)
KNOWN_COLUMNS = _CORE | _OPTIONAL
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
_TRAJECTORY = "a list of {tool_name, tool_input} objects (or a JSON string of one)"
_FAILED = "agent call failed"


# ----------------------------------------------------------------------------- detection


def _row_keys(rows: list[Any]) -> set[str] | None:
    sample = rows[:20]
    if not sample or not all(isinstance(r, Mapping) for r in sample):
        return None
    return {k for r in sample for k in r}


def detect(path: Path | None, data: Any) -> bool:
    if isinstance(data, Mapping):
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


def load_data(data: Any, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load Vertex rows or an `eval_cases` dataset into an `EvalSet`.

    With a `file`, `data` is taken to be that file's parse and is consumed (its rows are
    released as they are converted); in-memory rows (`file=None`) are left untouched.
    """
    set_id = Path(file).stem if file else ""
    name = description = None
    set_meta: dict[str, Any] = {}
    base = "$"
    if isinstance(data, Mapping) and "eval_cases" in data:
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
        rows = m.rows_of(data, file, "Vertex")
    rows = m.clean_rows(rows, file)
    if mapping:
        rows = m.apply_mapping(rows, mapping, file=file, known=KNOWN_COLUMNS)
    with m.gc_paused(len(rows)):
        cases = []
        for i, row in enumerate(rows):
            cases.append(_case(i, row, file, base))
            if file is not None:
                # Parsed from the file for this load: release each row once converted,
                # so the raw rows and the cases do not peak in memory together.
                rows[i] = None
    check_unique_ids([c.id for c in cases], file)
    return m.eval_set(set_id, cases, name, description, set_meta)


def _case(index: int, row: Any, file: str | None, base: str) -> EvalCase:
    if type(row) is not dict:
        if not isinstance(row, Mapping):
            raise m.row_error(
                file, None, f"{base}[{index}]", f"got {type_name(row)}", "a row object"
            )
        row = dict(row)
    get = row.get
    raw_id = get("id")
    if raw_id is None:
        raw_id = get("eval_case_id")
        if raw_id is None:
            raw_id = get("eval_id")
    if raw_id is None:
        case_id = f"row-{index}"
    elif type(raw_id) is str:
        case_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        case_id = str(raw_id)
    else:
        raise m.row_error(
            file, None, f"{base}[{index}].id", f"got {type_name(raw_id)}", "a string id"
        )

    def path(key: str) -> str:
        return f"{base}[{index}].{key}"

    prompt = get("prompt")
    if prompt is None:
        prompt = get("input")
    if prompt is not None and type(prompt) is not str:
        where = path("prompt" if "prompt" in row else "input")
        prompt = m.content_text(prompt, file, case_id, where)
    response = get("response")
    if response is not None and type(response) is not str:
        response = m.content_text(response, file, case_id, path("response"))
    reference = get("reference")
    ref_key = "reference"
    if reference is None:
        reference = get("expected_final_response")
        ref_key = "expected_final_response"
    if reference is not None and type(reference) is not str:
        if isinstance(reference, Mapping) and "response" in reference:
            reference = reference["response"]
        reference = m.content_text(reference, file, case_id, path(ref_key))

    metadata: dict[str, Any] = {}
    step_fields: dict[str, list[dict[str, Any]]] = {}
    ref_raw = get("reference_trajectory")
    ref_col = "reference_trajectory"
    if ref_raw is None:
        ref_raw = get("expected_trajectory")
        ref_col = "expected_trajectory"
    ref_steps: list[Step] = []
    if ref_raw is not None:
        ref_steps = _trajectory(ref_raw, file, case_id, path(ref_col), ref_col, step_fields)
    pred_raw = get("predicted_trajectory")
    pred_steps: list[Step] = []
    if pred_raw is not None:
        pred_steps = _trajectory(
            pred_raw,
            file,
            case_id,
            path("predicted_trajectory"),
            "predicted_trajectory",
            step_fields,
        )

    extra: dict[str, Any] | None = None
    turn_extra: dict[str, Any] | None = None
    keys = row.keys()
    if keys & _OPTIONAL:
        extra, turn_extra, response = _optional(row, file, case_id, path, response)
    has_ref = ref_raw is not None or reference is not None
    has_act = response is not None or pred_raw is not None or turn_extra is not None
    if not (has_ref or has_act or prompt is not None or extra):
        raise m.row_error(
            file,
            case_id,
            f"{base}[{index}]",
            f"the row has none of the Vertex columns; its columns are: {', '.join(map(str, keys))}",
            "prompt, response, reference, predicted_trajectory or reference_trajectory "
            "(rename columns with --map SRC=DST)",
        )
    ref_turns = [m.turn(prompt, ref_steps, reference)] if has_ref or not has_act else None
    act_turns = [m.turn(prompt, pred_steps, response, turn_extra)] if has_act else None

    unknown = keys - KNOWN_COLUMNS
    if keys & _SECONDARY:
        # An alias next to the column it stands for is an ordinary extra column.
        for group in _ALIASES:
            present = [k for k in group if k in keys]
            unknown |= set(present[1:])
    if unknown:
        metadata.update((k, row[k]) for k in row if k in unknown)
    if step_fields:
        metadata[STEP_FIELDS] = step_fields
    if extra is not None and RUBRIC_GROUPS in extra:
        layout = extra.pop(RUBRIC_GROUPS)
        if layout is not None:
            metadata[RUBRIC_GROUPS] = layout
    return m.eval_case(case_id, ref_turns, act_turns, metadata, extra)


def _trajectory(
    value: Any,
    file: str | None,
    case_id: str,
    path: str,
    column: str,
    step_fields: dict[str, list[dict[str, Any]]],
) -> list[Step]:
    if type(value) is not list:
        value = m.decode_json(value, list, file, case_id, path, _TRAJECTORY)
    steps: list[Step] = []
    fields: list[dict[str, Any]] | None = None
    call_step_of = m.call_step_of
    for i, item in enumerate(value):
        if type(item) is not dict:
            if not isinstance(item, Mapping):
                raise m.row_error(
                    file,
                    case_id,
                    f"{path}[{i}]",
                    f"got {type_name(item)}",
                    "a {tool_name, tool_input} object",
                )
            item = dict(item)
        name = item.get("tool_name")
        if type(name) is not str:
            raise m.row_error(
                file,
                case_id,
                f"{path}[{i}].tool_name",
                f"got {type_name(name)}",
                "a string tool name",
            )
        args = item.get("tool_input")
        if args is None:
            args = {}
        elif type(args) is not dict:
            raise m.row_error(
                file,
                case_id,
                f"{path}[{i}].tool_input",
                f"got {type_name(args)}",
                "an object of tool arguments",
            )
        steps.append(call_step_of(name, args))
        if len(item) - ("tool_input" in item) > 1:
            output = item.get("tool_output")
            if output is not None:
                steps.append(m.response_step(m.tool_response(name, output)))
            rest = {
                k: v for k, v in item.items() if k not in ("tool_name", "tool_input", "tool_output")
            }
            if rest:
                if fields is None:
                    fields = [{} for _ in range(len(value))]
                fields[i] = rest
    if fields is not None:
        step_fields[column] = fields
    return steps


def _optional(
    row: dict[str, Any], file: str | None, case_id: str, path: Any, response: str | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """Parse the less common columns: case fields, and latency/failure of the actual turn."""
    extra: dict[str, Any] = {}
    turn_extra: dict[str, Any] = {}
    get = row.get
    if response is None and get("responses") is not None:
        cands = get("responses")
        if not isinstance(cands, list) or len(cands) != 1:
            raise m.row_error(
                file,
                case_id,
                path("responses"),
                "not a one-element list",
                "one response candidate (several are not supported)",
            )
        cand = cands[0]
        if isinstance(cand, Mapping) and "response" in cand:
            cand = cand["response"]
        response = m.content_text(cand, file, case_id, path("responses") + "[0]")
    if (v := get("latency_in_seconds")) is not None:
        turn_extra["latency_s"] = _number(v, file, case_id, path("latency_in_seconds"))
    if (v := get("failure")) is not None:
        if _flag(v, file, case_id, path("failure")):
            turn_extra["error"] = _FAILED
        else:
            turn_extra.setdefault("error", None)
    if (v := get("tags")) is not None:
        extra["tags"] = m.parse_str_list(v, file, case_id, path("tags"))
    if (v := get("description")) is not None:
        extra["description"] = m.parse_str(v, file, case_id, path("description"))
    if (v := get("rubric_groups")) is not None:
        extra["rubrics"], extra[RUBRIC_GROUPS] = _rubric_groups(
            v, file, case_id, path("rubric_groups")
        )
    if (v := get("expected_response")) is not None:
        extra["expected_response"] = m.parse_str(v, file, case_id, path("expected_response"))
    if (v := get("expected_facts")) is not None:
        extra["expected_facts"] = m.parse_str_list(v, file, case_id, path("expected_facts"))
    if (v := get("guidelines")) is not None:
        extra["guidelines"] = m.parse_guidelines(v, file, case_id, path("guidelines"))
    if (v := get("expected_retrieved_context")) is not None:
        extra["expected_retrieved_context"] = m.parse_chunks(
            v, file, case_id, path("expected_retrieved_context")
        )
    for key, model in (("session_input", SessionInput), ("final_session_state", None)):
        if (v := get(key)) is None:
            continue
        obj = m.decode_json(v, dict, file, case_id, path(key), "an object")
        if model is None:
            extra[key] = obj
            continue
        try:
            extra[key] = model.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = path(key) + "".join(f".{p}" for p in err["loc"])
            raise m.row_error(
                file, case_id, where, err["msg"], "{app_name, user_id, state}"
            ) from None
    return extra or None, turn_extra or None, response


def _number(value: Any, file: str | None, case_id: str, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    elif hasattr(value, "__float__"):  # numpy scalars from DataFrames
        return float(value)
    raise m.row_error(file, case_id, path, f"got {type_name(value)} {value!r}", "a number")


def _flag(value: Any, file: str | None, case_id: str, path: str) -> bool:
    if isinstance(value, str):
        value = {"0": 0, "1": 1, "false": 0, "true": 1}.get(value.strip().lower(), value)
    if hasattr(value, "__int__") and not isinstance(value, str) and value in (0, 1):
        return bool(value)
    raise m.row_error(file, case_id, path, f"got {value!r}", "0 or 1")


def _rubric_groups(
    value: Any, file: str | None, case_id: str, path: str
) -> tuple[list[Rubric], dict[str, Any] | None]:
    groups = m.decode_json(value, dict, file, case_id, path, "an object of named rubric groups")
    rubrics: list[Rubric] = []
    layout: dict[str, Any] = {}
    seen: set[str] = set()
    types = {t.value for t in RubricType}
    for gname, group in groups.items():
        gpath = f"{path}.{gname}"
        if not isinstance(group, Mapping) or not isinstance(group.get("rubrics", []), list):
            raise m.row_error(
                file, case_id, gpath, "not a rubric group", "{group_id?, rubrics: [...]}"
            )
        entries = []
        for j, item in enumerate(group.get("rubrics", [])):
            rpath = f"{gpath}.rubrics[{j}]"
            content = item.get("content") if isinstance(item, Mapping) else None
            prop = content.get("property") if isinstance(content, Mapping) else None
            text = prop.get("description") if isinstance(prop, Mapping) else None
            if not isinstance(text, str):
                raise m.row_error(
                    file,
                    case_id,
                    rpath,
                    "no rubric text",
                    "{rubric_id, content: {property: {description}}}",
                )
            rid = item.get("rubric_id", f"{gname}-{j + 1}")
            if not isinstance(rid, str):
                raise m.row_error(
                    file, case_id, f"{rpath}.rubric_id", f"got {type_name(rid)}", "a string"
                )
            if rid in seen:
                raise m.row_error(
                    file,
                    case_id,
                    f"{rpath}.rubric_id",
                    f"duplicate rubric id {rid!r}",
                    "rubric ids unique in a case",
                )
            seen.add(rid)
            rtype = item.get("type")
            mapped = rtype in types
            rubrics.append(Rubric(id=rid, text=text, type=RubricType(rtype) if mapped else None))
            rest = {
                k: v
                for k, v in item.items()
                if k not in ("rubric_id", "content") and not (k == "type" and mapped)
            }
            entries.append({"rubric_id": rid, **rest})
        layout[gname] = {**{k: v for k, v in group.items() if k != "rubrics"}, "rubrics": entries}
    if layout == {"rubrics": {"rubrics": [{"rubric_id": r.id} for r in rubrics]}}:
        return rubrics, None  # the layout `dump` writes by default: nothing to remember
    return rubrics, layout


# ----------------------------------------------------------------------------- writing


def dump(evalset: EvalSet) -> Any:
    """Rows (a list), or the `eval_cases` envelope when the set has set-level data."""
    if not (evalset.name or evalset.description or evalset.metadata):
        return rows(evalset, "id")
    envelope: dict[str, Any] = {"eval_set_id": evalset.id}
    if evalset.name is not None:
        envelope["name"] = evalset.name
    if evalset.description is not None:
        envelope["description"] = evalset.description
    for key, value in evalset.metadata.items():
        if key in envelope or key == "eval_cases":
            raise InputError(
                f"set metadata key {key!r} collides with an envelope key",
                expected="metadata keys other than eval_set_id, name, description",
            )
        envelope[key] = value
    envelope["eval_cases"] = rows(evalset, "eval_case_id")
    return envelope


def rows(evalset: EvalSet, id_key: str = "id") -> list[dict[str, Any]]:
    """One Vertex row per case (see the module doc for what a row can hold)."""
    return [_row(case, i, id_key) for i, case in enumerate(evalset.cases)]


def write(evalset: EvalSet, path: Path) -> None:
    if path.suffix.lower() in (".jsonl", ".ndjson", ".csv"):
        m.write_records(rows(evalset), path)
    else:
        m.write_records(dump(evalset), path)


def _row(case: EvalCase, index: int, id_key: str) -> dict[str, Any]:
    def fail(message: str) -> InputError:
        return InputError(
            f"cannot be written as a Vertex row: {message}",
            case_id=case.id,
            expected="one turn with a text prompt and tool calls; use adk or trace for other cases",
        )

    if case.scenario is not None:
        raise fail("it is a scenario")
    ref = _single(case.reference, fail, "reference")
    act = _single(case.actual, fail, "actual")
    prompts = {_text(t, fail) for t in (ref, act) if t is not None}
    if len(prompts) > 1:
        raise fail("the reference and actual turns have different user inputs")
    row: dict[str, Any] = {}
    if case.id != f"row-{index}":
        row[id_key] = case.id
    prompt = prompts.pop() if prompts else None
    if prompt is not None:
        row["prompt"] = prompt
    step_fields = case.metadata.get(STEP_FIELDS) or {}
    if act is not None:
        if act.final_response is not None:
            row["response"] = act.final_response
        row["predicted_trajectory"] = _dump_steps(
            act.steps, step_fields.get("predicted_trajectory"), fail
        )
        if act.latency_s is not None:
            row["latency_in_seconds"] = act.latency_s
        if act.error is not None or act.latency_s is not None:
            row["failure"] = 0 if act.error is None else 1
    if ref is not None:
        if ref.final_response is not None:
            row["reference"] = ref.final_response
        column = (
            "expected_trajectory"
            if "expected_trajectory" in step_fields
            else "reference_trajectory"
        )
        # An empty trajectory still marks the turn as reference data when nothing else does.
        if (
            ref.steps
            or column in step_fields
            or (ref.final_response is None and (act is not None or prompt is None))
        ):
            row[column] = _dump_steps(ref.steps, step_fields.get(column), fail)
    if case.tags:
        row["tags"] = list(case.tags)
    if case.description is not None:
        row["description"] = case.description
    if case.rubrics:
        row["rubric_groups"] = _dump_rubric_groups(case)
    if case.expected_response is not None:
        row["expected_response"] = case.expected_response
    if case.expected_facts is not None:
        row["expected_facts"] = list(case.expected_facts)
    if case.guidelines is not None:
        row["guidelines"] = case.guidelines
    if case.expected_retrieved_context is not None:
        row["expected_retrieved_context"] = m.dump_chunks(case.expected_retrieved_context)
    if case.session_input is not None:
        row["session_input"] = case.session_input.model_dump(exclude_none=True)
    if case.final_session_state is not None:
        row["final_session_state"] = case.final_session_state
    for key, value in case.metadata.items():
        if key in (STEP_FIELDS, RUBRIC_GROUPS):
            continue
        if key in row:
            raise fail(f"metadata key {key!r} collides with a column")
        row[key] = value
    return row


def _single(turns: list[Turn] | None, fail: Any, what: str) -> Turn | None:
    if turns is None or not turns:
        return None
    if len(turns) > 1:
        raise fail(f"it has {len(turns)} {what} turns")
    t = turns[0]
    if t.expectations or t.rubrics:
        raise fail(f"its {what} turn has expectations or rubrics")
    return t


def _text(t: Turn, fail: Any) -> str | None:
    ui = t.user_input
    if ui.dtmf or ui.blobs or ui.event or ui.variables or ui.tool_responses:
        raise fail("its user input is not plain text")
    return ui.text


def _dump_steps(steps: list[Step], fields: list[dict[str, Any]] | None, fail: Any) -> list[Any]:
    out: list[dict[str, Any]] = []
    for step in steps:
        if step.tool_call is not None:
            call = step.tool_call
            out.append({"tool_name": call.name, "tool_input": call.args})
        elif (
            step.tool_response is not None
            and out
            and "tool_output" not in out[-1]
            and out[-1]["tool_name"] == step.tool_response.name
        ):
            out[-1]["tool_output"] = step.tool_response.response
        else:
            raise fail(f"a {step.kind} step has no Vertex trajectory form")
    if fields is not None and len(fields) == len(out):
        out = [{**item, **extra} for item, extra in zip(out, fields, strict=True)]
    return out


def _dump_rubric_groups(case: EvalCase) -> dict[str, Any]:
    layout = case.metadata.get(RUBRIC_GROUPS) or {}
    by_id = {r.id: r for r in case.rubrics}
    used: set[str] = set()
    out: dict[str, Any] = {}

    def entry(rubric: Rubric, kept: Mapping[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = {
            "rubric_id": rubric.id,
            "content": {"property": {"description": rubric.text}},
        }
        if rubric.type is not None:
            item["type"] = rubric.type.value
        item.update((k, v) for k, v in kept.items() if k != "rubric_id")
        return item

    for gname, group in layout.items():
        entries = []
        for kept in group.get("rubrics", []):
            rubric = by_id.get(kept.get("rubric_id"))
            if rubric is not None and rubric.id not in used:
                used.add(rubric.id)
                entries.append(entry(rubric, kept))
        out[gname] = {**{k: v for k, v in group.items() if k != "rubrics"}, "rubrics": entries}
    rest = [entry(r, {}) for r in case.rubrics if r.id not in used]
    if rest:
        out.setdefault("rubrics", {"rubrics": []})["rubrics"].extend(rest)
    return out
