"""Writing MLflow rows (see `assay.formats.mlflow`): one case per row, MLflow 3 style
(`inputs` / `outputs` / `expectations`) or Databricks' flat columns."""

from __future__ import annotations

from typing import Any

from assay.core.cases import EvalCase, Turn
from assay.errors import InputError
from assay.formats._columns import add_metadata, dump_chunks, dump_expected
from assay.formats._mlflow_chat import RAW_RESPONSE, SYSTEM, prompt_key, with_text


def case_row(case: EvalCase, index: int, flat: bool = False) -> dict[str, object]:
    def fail(message: str) -> InputError:
        return InputError(
            f"cannot be written as an MLflow row: {message}",
            case_id=case.id,
            expected="a text conversation with a response and retrieved context; "
            "use adk or trace for tool calls and scenarios",
        )

    if case.scenario is not None:
        raise fail("it is a scenario")
    blocked = [
        f
        for f in ("description", "session_input", "final_session_state")
        if getattr(case, f) is not None
    ] + (["rubrics"] if case.rubrics else [])
    if blocked:
        raise fail(f"rows have no place for its {', '.join(blocked)}")
    turns = case.actual or case.reference
    if not turns:
        raise fail("it has no turns")
    expected_response = case.expected_response
    if case.actual and case.reference:
        if [t.user_input for t in case.reference] != [t.user_input for t in case.actual]:
            raise fail("its reference and actual turns have different user inputs")
        if any(t.steps for t in case.reference):
            raise fail("its reference turns hold steps")
        earlier = zip(case.reference[:-1], case.actual[:-1], strict=True)
        if any(r.final_response not in (None, a.final_response) for r, a in earlier):
            raise fail("its earlier reference and actual responses differ")
        last_ref = case.reference[-1].final_response
        if last_ref is not None and expected_response not in (None, last_ref):
            raise fail("its reference response differs from expected_response")
        expected_response = expected_response or last_ref
    messages: list[dict[str, str]] = [
        {"role": "system", "content": s} for s in case.metadata.get(SYSTEM, [])
    ]
    for t in turns[:-1]:
        messages.append({"role": "user", "content": _text(t, fail)})
        for step in t.steps:
            if step.agent_message is None:
                raise fail(f"an earlier turn holds a {step.kind} step")
            messages.append({"role": "assistant", "content": step.agent_message.text})
        if t.final_response is not None:
            messages.append({"role": "assistant", "content": t.final_response})
    last = turns[-1]
    prompt = _text(last, fail)
    request: Any = prompt
    if len(messages) > 0:
        request = {"messages": [*messages, {"role": "user", "content": prompt}]}
    recorded = case.actual is not None and last is case.actual[-1]
    chunks = [c for s in last.steps if s.retrieval is not None for c in s.retrieval.chunks]
    if any(s.retrieval is None for s in last.steps) or (chunks and not recorded):
        raise fail("its last turn holds steps other than a retrieval")
    if not recorded and last.final_response is not None:
        expected_response = expected_response or last.final_response
    response: Any = last.final_response if recorded else None
    raw = case.metadata.get(RAW_RESPONSE)
    if response is not None and isinstance(raw, dict):
        response = with_text(raw, response, last.usage)
    expected = dump_expected(case, expected_response)

    row: dict[str, Any] = {}
    if case.id != f"row-{index}":
        row["request_id"] = case.id
    inputs = case.metadata.get("inputs")
    v3_meta = isinstance(inputs, dict) or bool(case.metadata.get("expectations"))
    if flat and not v3_meta:
        row["request"] = request
        if response is not None:
            row["response"] = response
        row.update(expected)
    else:
        row["inputs"] = inputs_of(inputs if isinstance(inputs, dict) else None, request)
        if response is not None:
            row["outputs"] = response
        expected.update(case.metadata.get("expectations") or {})
        if expected:
            row["expectations"] = expected
    if chunks or (recorded and response is None):
        row["retrieved_context"] = dump_chunks(chunks)
    if case.tags:
        row["tags"] = _tags(case, fail) if "inputs" in row else list(case.tags)
    add_metadata(row, case.metadata, (SYSTEM, RAW_RESPONSE, "inputs", "expectations"), fail)
    return row


def inputs_of(kept: dict[str, object] | None, request: object) -> dict[str, object]:
    """MLflow 3 `inputs`: the row's own (prompt updated), else `{request: TEXT}` or, for a
    conversation, `{messages: [...]}` (the keyword arguments of a predict_fn)."""
    if kept is None:
        return dict(request) if isinstance(request, dict) else {"request": request}
    out = dict(kept)
    key = prompt_key(kept) or "request"
    if key == "messages":
        out[key] = (
            request["messages"]
            if isinstance(request, dict)
            else [{"role": "user", "content": request}]
        )
    else:
        out[key] = request
    return out


def _tags(case: EvalCase, fail: Any) -> dict[str, str]:
    """Case tags as MLflow 3 tags (an object of strings): each tag a key, valued ""."""
    if "tags" in case.metadata:
        raise fail("it has both tags and an MLflow tags object")
    if len(set(case.tags)) != len(case.tags):
        raise fail("its tags repeat a tag (MLflow tags are the keys of an object)")
    return dict.fromkeys(case.tags, "")


def _text(t: Turn, fail: Any) -> str:
    ui = t.user_input
    if ui.text is None or ui.dtmf or ui.blobs or ui.event or ui.variables or ui.tool_responses:
        raise fail("a user input is not plain text")
    return ui.text
