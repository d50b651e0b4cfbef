"""Fast construction of model objects for the bulk loaders (row formats, traces).

Loading 100k rows must not run pydantic validation on every nested object, so the
builders here create model instances directly from values the loaders have already
type-checked (the same effect as `model_construct`, at a fraction of its cost). Fields
a builder does not set keep their default; an import-time check fails loudly if a model
change makes a builder's instances differ from pydantic's. Built instances report every
field as explicitly set (`model_fields_set`), and share no mutable value with each other.

Building parents before children. The loaders run with the cyclic GC paused, so its
first pass afterwards walks every object of a loaded set at once. That pass is cheap
when each container was created (made GC-tracked) after the container holding it: it
then meets every object already known to be reachable. Met the other way round, it
first parks each object as possibly unreachable and later moves it back, and on a
100k-row load that costs three times as much. So the `*_shell` builders create an
instance and its field dict first and let the caller create and fill in the children;
the field-dict templates hold a GC-tracked placeholder (`_UNFILLED`) in a field every
builder overwrites, which makes each copy tracked as soon as it exists.
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
new_instance = object.__new__
# The slot setters of BaseModel: what `model_construct` assigns, without its overhead.
set_dict = BaseModel.__dict__["__dict__"].__set__
set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# One set of every field name per class, shared by the instances built here: pydantic
# only ever adds field names to it (on assignment), which it already holds, so it never
# changes; a set per instance would cost a third of a loaded row's memory.
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {
    cls: set(cls.model_fields)
    for cls in (ToolCall, ToolResponse, Step, UserInput, Turn, EvalCase, EvalSet)
}
CALL_FIELD_NAMES = _ALL_FIELDS[ToolCall]
STEP_FIELD_NAMES = _ALL_FIELDS[Step]
_INPUT_FIELDS = _ALL_FIELDS[UserInput]
_TURN_FIELDS = _ALL_FIELDS[Turn]
_CASE_FIELDS = _ALL_FIELDS[EvalCase]
_SET_FIELDS = _ALL_FIELDS[EvalSet]


class _Unfilled:
    """The placeholder of a template field that every builder overwrites (see above)."""

    def __repr__(self) -> str:
        return "<unfilled>"


_UNFILLED = _Unfilled()


def _template(cls: type[BaseModel], always_set: str | None) -> dict[str, Any]:
    """A field dict of `cls`, every field None, `always_set` holding `_UNFILLED`.

    Copied per instance: a copy of a small dict is a block copy, faster than building it
    from a literal, and it keeps the model's field order. Only immutable values are in
    it; mutable defaults (empty lists and dicts) are created fresh for every instance.
    """
    values = dict.fromkeys(cls.model_fields)
    if always_set is not None:
        values[always_set] = _UNFILLED
    return values


# One step template per kind, its kind's field holding the placeholder.
STEP_OF: dict[str, dict[str, Any]] = {k: _template(Step, k) for k in Step.model_fields}
_INPUT_TEMPLATE = _template(UserInput, "blobs")
_TURN_TEMPLATE = _template(Turn, "expectations")
_CASE_TEMPLATE = _template(EvalCase, "tags")
_SET_TEMPLATE = _template(EvalSet, "cases")


def build(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` from a complete, already valid field dict (no validation).

    `cls` is one of the classes of `_ALL_FIELDS`; the instance reports every field as set.
    """
    obj = new_instance(cls)
    set_dict(obj, values)
    set_fields(obj, _ALL_FIELDS[cls])
    set_extra(obj, None)
    set_private(obj, None)
    return obj


def _filled(obj: M, values: dict[str, Any]) -> M:
    """`obj` (just created) holding `values`: as `build`, for callers that create the
    instance before its field dict (parents first)."""
    set_dict(obj, values)
    set_fields(obj, _ALL_FIELDS[type(obj)])
    set_extra(obj, None)
    set_private(obj, None)
    return obj


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> ToolCall:
    return _filled(new_instance(ToolCall), {"id": call_id, "name": name, "args": args})


def tool_response(name: str, response: Any, call_id: str | None = None) -> ToolResponse:
    return _filled(
        new_instance(ToolResponse),
        {"id": call_id, "name": name, "response": response, "latency_s": None},
    )


def call_step_of(name: str, args: dict[str, Any]) -> Step:
    """`Step(tool_call=ToolCall(name, args))`; `args` is adopted, not copied.

    `vertex._trajectory` inlines this for speed; the two must build the same objects.
    """
    step = new_instance(Step)
    values = STEP_OF["tool_call"].copy()
    set_dict(step, values)
    set_fields(step, STEP_FIELD_NAMES)
    set_extra(step, None)
    set_private(step, None)
    call = new_instance(ToolCall)
    set_dict(call, {"id": None, "name": name, "args": args})
    set_fields(call, CALL_FIELD_NAMES)
    set_extra(call, None)
    set_private(call, None)
    values["tool_call"] = call
    return step


def step_shell(kind: str) -> tuple[Step, dict[str, Any]]:
    """A step of `kind` and its field dict; the caller must set `values[kind]`."""
    step = new_instance(Step)
    values = STEP_OF[kind].copy()
    set_dict(step, values)
    set_fields(step, STEP_FIELD_NAMES)
    set_extra(step, None)
    set_private(step, None)
    return step, values


def step(kind: str, value: Any) -> Step:
    """A step holding `value` as its `kind` (one of `STEP_KINDS`)."""
    obj, values = step_shell(kind)
    values[kind] = value
    return obj


def response_step(response: ToolResponse) -> Step:
    return step("tool_response", response)


def retrieval_step(chunks: list[Chunk]) -> Step:
    return step("retrieval", Retrieval(chunks=chunks))


def user_input(text: str | None) -> UserInput:
    obj = new_instance(UserInput)
    values = _INPUT_TEMPLATE.copy()
    set_dict(obj, values)
    set_fields(obj, _INPUT_FIELDS)
    set_extra(obj, None)
    set_private(obj, None)
    values["text"] = text
    values["blobs"] = []
    values["tool_responses"] = []
    return obj


def turn_shell(text: str | None) -> tuple[Turn, dict[str, Any], list[Step]]:
    """A turn with a text-only user input, its field dict, and its (empty) steps list.

    The caller appends the steps and sets other fields (`final_response`, ...) in the
    field dict.
    """
    obj = new_instance(Turn)
    values = _TURN_TEMPLATE.copy()
    set_dict(obj, values)
    set_fields(obj, _TURN_FIELDS)
    set_extra(obj, None)
    set_private(obj, None)
    values["expectations"] = []
    values["rubrics"] = []
    values["user_input"] = user_input(text)
    steps: list[Step] = []
    values["steps"] = steps
    return obj, values, steps


def turn(
    text: str | None,
    steps: list[Step],
    final_response: str | None,
    extra: dict[str, Any] | None = None,
) -> Turn:
    """A turn with a text-only user input; `extra` sets other Turn fields.

    `steps` is adopted, not copied.
    """
    obj, values, _ = turn_shell(text)
    values["steps"] = steps
    values["final_response"] = final_response
    if extra:
        values.update(extra)
    return obj


def case_shell(case_id: str) -> tuple[EvalCase, dict[str, Any]]:
    """A case with default fields and its field dict, for the caller to fill in."""
    obj = new_instance(EvalCase)
    values = _CASE_TEMPLATE.copy()
    set_dict(obj, values)
    set_fields(obj, _CASE_FIELDS)
    set_extra(obj, None)
    set_private(obj, None)
    values["id"] = case_id
    values["tags"] = []
    values["rubrics"] = []
    values["metadata"] = {}
    return obj, values


def eval_case(
    case_id: str,
    reference: list[Turn] | None,
    actual: list[Turn] | None,
    metadata: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> EvalCase:
    """A case; `extra` sets other EvalCase fields with already valid values.

    `metadata` is adopted, not copied.
    """
    obj, values = case_shell(case_id)
    values["reference"] = reference
    values["actual"] = actual
    values["metadata"] = metadata
    if extra:
        values.update(extra)
    return obj


def set_shell(
    set_id: str,
    name: str | None = None,
    description: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[EvalSet, dict[str, Any]]:
    """An eval set with an empty cases list, and its field dict; `metadata` is adopted."""
    obj = new_instance(EvalSet)
    values = _SET_TEMPLATE.copy()
    set_dict(obj, values)
    set_fields(obj, _SET_FIELDS)
    set_extra(obj, None)
    set_private(obj, None)
    values["id"] = set_id
    values["name"] = name
    values["description"] = description
    values["cases"] = []
    values["metadata"] = metadata or {}
    return obj, values


def eval_set(
    set_id: str,
    cases: list[EvalCase],
    name: str | None = None,
    description: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> EvalSet:
    obj, values = set_shell(set_id, name, description, metadata)
    values["cases"] = cases
    return obj


_PROBE_RESPONSE = ToolResponse(name="t")


def _check_builders() -> None:
    # Each probe must equal, field by field and in field order, the instance pydantic
    # builds from the same values: a model change (a new field with another default, a
    # renamed field) that the builders do not follow fails here, at import.
    probes: list[tuple[BaseModel, BaseModel]] = [
        (tool_call("t", {}), ToolCall(name="t")),
        (tool_response("t", None), ToolResponse(name="t")),
        (call_step_of("t", {}), Step(tool_call=ToolCall(name="t"))),
        (step("tool_response", _PROBE_RESPONSE), Step(tool_response=_PROBE_RESPONSE)),
        (user_input(None), UserInput()),
        (turn(None, [], None), Turn()),
        (eval_case("c", None, None, {}), EvalCase(id="c")),
        (eval_set("s", []), EvalSet(id="s")),
    ]
    for built, validated in probes:
        if list(built.__dict__.items()) != list(validated.__dict__.items()):
            raise RuntimeError(
                f"assay.formats._build builds {type(built).__name__} as {built.__dict__}, "
                f"but the model gives {validated.__dict__}"
            )


_check_builders()
