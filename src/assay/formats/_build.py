"""Fast construction of model objects for the bulk loaders (row formats, traces).

Loading 100k rows must not run pydantic validation on every nested object, so the
builders here create model instances directly from values the loaders have already
type-checked (the same effect as `model_construct`, at a fraction of its cost). The
builders name every field of their model; an import-time check fails loudly if the
model gains or loses a field. Built instances report every field as explicitly set
(`model_fields_set`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

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
                f"assay.formats._build builds {type(probe).__name__} with fields "
                f"{sorted(probe.__dict__)}, but the model has {sorted(expected)}"
            )


_check_builders()
