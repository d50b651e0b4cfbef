"""Fast construction of model objects for the bulk loaders (row formats, traces).

Loading 100k rows must not run pydantic validation on every nested object, so the
builders here make instances by copying a prototype: one instance per model, built once
through pydantic's normal validation with every field given (so every field reports
itself as set, as a validated instance built from all of its fields does). A copy is
made through pydantic's pickle protocol (`__getstate__` once per prototype,
`__setstate__` per copy), and the builder then fills in the copy's field dict with
values the loaders have already type-checked. Fields a builder does not set keep the
model's default, taken from the model itself: adding a field to a model is one edit,
in `assay.core`. An import-time check fails loudly if a builder's instances differ
from pydantic's, or if one shares a mutable value with its prototype (every mutable
default is replaced).

Building parents before children. The loaders run with the cyclic GC paused, so its
first pass afterwards walks every object of a loaded set at once. That pass is cheap
when each container was created (made GC-tracked) after the container holding it: it
then meets every object already known to be reachable. Met the other way round, it
first parks each object as possibly unreachable and later moves it back, and on a
100k-row load that costs three times as much. So the `*_shell` builders create an
instance and its field dict first and let the caller create and fill in the children;
each prototype's field dict holds a container (an empty list, or a child object) that
every builder replaces, which makes each copy GC-tracked as soon as it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.core.cases import (
    STEP_KINDS,
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


def _prototype(cls: type[M], **given: object) -> M:
    """An instance of `cls` with every field given explicitly: its default (from the
    model), else the value in `given` (required fields, a step's kind)."""
    values = {
        name: given[name] if name in given else field.get_default(call_default_factory=True)
        for name, field in cls.model_fields.items()
    }
    return cls.model_validate(values, by_name=True)


CALL = _prototype(ToolCall, name="")
RESPONSE = _prototype(ToolResponse, name="")
# A step holds exactly one kind: the prototype holds a placeholder call, which every step
# builder replaces (by None, or by the step's own call).
STEP = _prototype(Step, tool_call=CALL)
INPUT = _prototype(UserInput)
TURN = _prototype(Turn)
CASE = _prototype(EvalCase, id="")
SET = _prototype(EvalSet, id="")


def maker(prototype: M) -> Callable[[], tuple[M, dict[str, object]]]:
    """A function making copies of `prototype`: each call returns a new instance and its
    field dict, for the caller to fill in.

    Copies go through pydantic's pickle protocol, the way models are copied and
    unpickled: `__getstate__` gives the prototype's field dict and its bookkeeping
    (fields set, extra, private), and `__setstate__` gives a new instance a copy of the
    field dict and the same bookkeeping. The set of fields set is shared: every field
    name, to which pydantic only ever adds on assignment, so it never changes; one set
    per instance would cost a third of a loaded row's memory. The field dict is a
    shallow copy: the caller must replace every mutable value the prototype holds.
    """
    cls = type(prototype)
    state = prototype.__getstate__()
    template: dict[str, Any] = state.pop("__dict__")
    set_state = cls.__setstate__
    copy_template = template.copy
    copy_state = state.copy
    new_object = object.__new__

    def make() -> tuple[M, dict[str, object]]:
        obj: Any = new_object(cls)
        values = copy_template()
        full = copy_state()
        full["__dict__"] = values
        set_state(obj, full)
        return obj, values

    return make


PROTOTYPES = (CALL, RESPONSE, STEP, INPUT, TURN, CASE, SET)
#: new instances of each model, with their field dicts (see `maker`)
new_call = maker(CALL)
new_response = maker(RESPONSE)
new_step = maker(STEP)
new_input = maker(INPUT)
new_turn = maker(TURN)
new_case = maker(CASE)
new_set = maker(SET)


def tool_call(name: str, args: dict[str, object], call_id: str | None = None) -> ToolCall:
    """A call; `args` is adopted, not copied."""
    obj, values = new_call()
    values["id"] = call_id
    values["name"] = name
    values["args"] = args
    return obj


def tool_response(name: str, response: object, call_id: str | None = None) -> ToolResponse:
    obj, values = new_response()
    values["id"] = call_id
    values["name"] = name
    values["response"] = response
    return obj


def call_step_of(name: str, args: dict[str, object]) -> Step:
    """`Step(tool_call=ToolCall(name, args))`; `args` is adopted, not copied.

    `_vertex_fields.trajectory` inlines this for speed; the two must build the same
    objects.
    """
    step, values = new_step()  # the parent first (see above)
    call, call_values = new_call()
    call_values["name"] = name
    call_values["args"] = args
    values["tool_call"] = call
    return step


def step_shell(kind: str) -> tuple[Step, dict[str, object]]:
    """A step of `kind` and its field dict; the caller must set `values[kind]`.

    KeyError for a kind that is not one of `STEP_KINDS`.
    """
    if kind not in STEP_KINDS:
        raise KeyError(kind)
    step, values = new_step()
    values["tool_call"] = None
    return step, values


def step(kind: str, value: object) -> Step:
    """A step holding `value` as its `kind` (one of `STEP_KINDS`)."""
    obj, values = step_shell(kind)
    values[kind] = value
    return obj


def response_step(response: ToolResponse) -> Step:
    return step("tool_response", response)


def retrieval_step(chunks: list[Chunk]) -> Step:
    return step("retrieval", Retrieval(chunks=chunks))


def user_input(text: str | None) -> UserInput:
    obj, values = new_input()
    values["text"] = text
    values["blobs"] = []
    values["tool_responses"] = []
    return obj


def turn_shell(text: str | None) -> tuple[Turn, dict[str, object], list[Step]]:
    """A turn with a text-only user input, its field dict, and its (empty) steps list.

    The caller appends the steps and sets other fields (`final_response`, ...) in the
    field dict.
    """
    obj, values = new_turn()
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
    extra: dict[str, object] | None = None,
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
    obj, values = new_case()
    values["id"] = case_id
    values["tags"] = []
    values["rubrics"] = []
    values["metadata"] = {}
    return obj, values


def eval_case(
    case_id: str,
    reference: list[Turn] | None,
    actual: list[Turn] | None,
    metadata: dict[str, object],
    extra: dict[str, object] | None = None,
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
    metadata: dict[str, object] | None = None,
) -> tuple[EvalSet, dict[str, Any]]:
    """An eval set with an empty cases list, and its field dict; `metadata` is adopted."""
    obj, values = new_set()
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
    metadata: dict[str, object] | None = None,
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
    shared = {id(v) for p in PROTOTYPES for v in p.__dict__.values() if _mutable(v)}
    for built, validated in probes:
        if list(built.__dict__.items()) != list(validated.__dict__.items()):
            raise RuntimeError(
                f"assay.formats._build builds {type(built).__name__} as {built.__dict__}, "
                f"but the model gives {validated.__dict__}"
            )
        if built.model_fields_set != set(type(built).model_fields):
            raise RuntimeError(
                f"assay.formats._build builds {type(built).__name__} with fields"
                f" {sorted(built.model_fields_set)} set; every field must be"
            )
        leaked = [k for k, v in built.__dict__.items() if _mutable(v) and id(v) in shared]
        if leaked:
            raise RuntimeError(
                f"assay.formats._build builds {type(built).__name__} sharing {leaked} with"
                " its prototype: a builder must replace every mutable default"
            )


def _mutable(value: object) -> bool:
    return isinstance(value, list | dict | set | BaseModel)


_check_builders()
