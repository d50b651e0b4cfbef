"""Writing Vertex rows and `eval_cases` datasets (see `assay.formats.vertex`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Rubric, Step, Turn
from assay.errors import InputError
from assay.formats._columns import add_metadata, dump_expected, write_records
from assay.formats._vertex_fields import RUBRIC_GROUPS, STEP_FIELDS
from assay.formats._vertex_history import dump_history


def dump(evalset: EvalSet) -> object:
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


def rows(evalset: EvalSet, id_key: str = "id") -> list[dict[str, object]]:
    """One Vertex row per case (see `assay.formats.vertex` for what a row can hold)."""
    return [_row(case, i, id_key) for i, case in enumerate(evalset.cases)]


def write(evalset: EvalSet, path: Path) -> None:
    """Rows as `.jsonl` / `.csv`; otherwise `dump` as JSON."""
    if path.suffix.lower() in (".jsonl", ".ndjson", ".csv"):
        write_records(rows(evalset), path)
    else:
        write_records(dump(evalset), path)


def _row(case: EvalCase, index: int, id_key: str) -> dict[str, object]:
    def fail(message: str) -> InputError:
        return InputError(
            f"cannot be written as a Vertex row: {message}",
            case_id=case.id,
            expected="one turn with a text prompt and tool calls; use adk or trace for other cases",
        )

    if case.scenario is not None:
        raise fail(SCENARIO)
    history, ref, act = _exchange(case, fail)
    prompts = {_text(t, fail) for t in (ref, act) if t is not None}
    if len(prompts) > 1:
        raise fail("the reference and actual turns have different user inputs")
    row: dict[str, Any] = {}
    if case.id != f"row-{index}":
        row[id_key] = case.id
    prompt = prompts.pop() if prompts else None
    if prompt is not None:
        row["prompt"] = prompt
    if history:
        row["history"] = dump_history(history, fail)
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
    row.update(dump_expected(case, case.expected_response))
    if case.session_input is not None:
        row["session_input"] = case.session_input.model_dump(exclude_none=True)
    if case.final_session_state is not None:
        row["final_session_state"] = case.final_session_state
    add_metadata(row, case.metadata, (STEP_FIELDS, RUBRIC_GROUPS), fail)
    return row


# What the Gen AI evaluation SDK has for a scenario, which assay's rows do not write.
SCENARIO = (
    "it is a scenario (the Gen AI evaluation SDK simulates its user from a row's "
    "`starting_prompt` and `conversation_plan`, which assay does not write)"
)


def _exchange(case: EvalCase, fail: Any) -> tuple[list[Turn], Turn | None, Turn | None]:
    """(the turns before the row's exchange, its reference turn, its actual turn).

    A conversation of several turns is one row: its earlier turns are the `history`
    (`assay.formats._vertex_history`), the same for the reference and the actual turns
    when the case has both.
    """
    ref_turns, act_turns = case.reference or [], case.actual or []
    histories = [turns[:-1] for turns in (ref_turns, act_turns) if turns]
    if len(histories) == 2 and histories[0] != histories[1]:
        raise fail(
            f"it has {len(ref_turns)} reference and {len(act_turns)} actual turns, whose "
            "earlier turns differ (a Vertex row holds one conversation history)"
        )
    ref = _single(ref_turns[-1:], fail, "reference")
    act = _single(act_turns[-1:], fail, "actual")
    return (histories[0] if histories else []), ref, act


def _single(turns: list[Turn], fail: Any, what: str) -> Turn | None:
    if not turns:
        return None
    t = turns[0]
    if t.expectations or t.rubrics:
        raise fail(f"its {what} turn has expectations or rubrics")
    return t


def _text(t: Turn, fail: Any) -> str | None:
    ui = t.user_input
    if ui.dtmf or ui.blobs or ui.event or ui.variables or ui.tool_responses:
        raise fail("its user input is not plain text")
    return ui.text


def _dump_steps(steps: list[Step], fields: list[dict[str, object]] | None, fail: Any) -> list[Any]:
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


def _dump_rubric_groups(case: EvalCase) -> dict[str, object]:
    layout = case.metadata.get(RUBRIC_GROUPS) or {}
    by_id = {r.id: r for r in case.rubrics}
    used: set[str] = set()
    out: dict[str, Any] = {}

    def entry(rubric: Rubric, kept: Mapping[str, object]) -> dict[str, object]:
        item: dict[str, Any] = {
            "rubric_id": rubric.id,
            "content": {"property": {"description": rubric.text}},
        }
        if rubric.type is not None:
            item["type"] = rubric.type
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
