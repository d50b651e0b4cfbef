"""The fast model builders (`formats._build`) and what the Vertex loader builds with them.

Built instances must be indistinguishable from validated ones, share no mutable value,
never expose a prototype or anything it holds, and be created parents first (the order the
cyclic GC's first pass over a loaded set is cheap in).
"""

from __future__ import annotations

import copy
import gc
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from assay.core.cases import EvalCase, EvalSet, Step, ToolCall, ToolResponse, Turn, UserInput
from assay.formats import _build, load, vertex

ROWS: list[dict[str, Any]] = [
    {
        "id": "full",
        "prompt": "book it",
        "response": "booked",
        "reference": "done",
        "predicted_trajectory": [{"tool_name": "book", "tool_input": {"city": "Rome"}}],
        "reference_trajectory": [
            {"tool_name": "find", "tool_input": {"q": "x"}, "tool_output": {"hits": [1]}},
            {"tool_name": "book", "tool_input": {"city": "Rome"}, "step_number": 2},
        ],
    },
    {"id": "prompt-only", "prompt": "hi"},
    {"id": "recorded", "prompt": "hi", "response": "yo", "latency_in_seconds": 1.5},
    {"id": "latency-only", "prompt": "hi", "failure": 1},
    {"id": "extra", "prompt": "p", "tags": ["t"], "note": {"k": [1]}, "input": "alias"},
]


def _models(value: Any) -> list[BaseModel]:
    """Every model instance reachable from `value`, parents before children."""
    found: list[BaseModel] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseModel):
            found.append(item)
            stack.extend(reversed(item.__dict__.values()))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def test_shells_equal_validated_instances() -> None:
    case, values = _build.case_shell("c")
    values["reference"] = [_build.turn_shell("hi")[0]]
    evalset, set_values = _build.set_shell("s", "n", None, {"k": 1})
    set_values["cases"].append(case)
    expected = EvalSet(
        id="s",
        name="n",
        metadata={"k": 1},
        cases=[EvalCase(id="c", reference=[Turn(user_input=UserInput(text="hi"))])],
    )
    assert evalset == expected
    assert [list(m.__dict__) for m in _models(evalset)] == [
        list(m.__dict__) for m in _models(expected)
    ]
    assert all(m.model_fields_set == set(type(m).model_fields) for m in _models(evalset))


def test_step_builders_match_pydantic() -> None:
    assert _build.call_step_of("t", {"a": 1}) == Step(tool_call=ToolCall(name="t", args={"a": 1}))
    response = ToolResponse(name="t", response=[1])
    assert _build.response_step(response) == Step(tool_response=response)
    with pytest.raises(KeyError):
        _build.step("not_a_kind", 1)


def test_no_placeholder_and_no_shared_mutables_in_loaded_cases() -> None:
    evalset = vertex.load_data(copy.deepcopy(ROWS), file="d.jsonl", mapping=None)
    models = _models(evalset)
    assert len(models) > 20
    # No prototype, nor anything a prototype holds, is exposed in what was built.
    prototype_values = {id(v) for p in _build.PROTOTYPES for v in p.__dict__.values()}
    prototypes = {id(p) for p in _build.PROTOTYPES}
    for model in models:
        assert id(model) not in prototypes, model
        for value in model.__dict__.values():
            if isinstance(value, (list, dict, BaseModel)):
                assert id(value) not in prototype_values, model
    # Each instance has its own lists and dicts (the empty defaults included).
    mutables = [v for m in models for v in m.__dict__.values() if isinstance(v, (list, dict))]
    assert len({id(v) for v in mutables}) == len(mutables)


def test_loaded_objects_are_created_parents_first() -> None:
    rows = copy.deepcopy(ROWS)
    was_enabled = gc.isenabled()
    gc.disable()  # nothing is collected, so gen 0 holds the new objects in creation order
    try:
        evalset = vertex.load_data(rows, file="d.jsonl", mapping=None)
        order = {id(o): i for i, o in enumerate(gc.get_objects(generation=0))}
    finally:
        if was_enabled:
            gc.enable()

    checked = 0

    def before(parent: Any, child: Any) -> None:
        nonlocal checked
        if id(child) in order:
            assert order[id(parent)] < order[id(child)], (type(parent), type(child))
            checked += 1

    for model in _models(evalset):
        fields = model.__dict__
        before(model, fields)
        for value in fields.values():
            # Builder-made containers and models; adopted input data (metadata, tool
            # arguments and outputs) predates the load and is not the builders' to order.
            if isinstance(value, BaseModel) or (
                isinstance(value, list) and all(isinstance(v, BaseModel) for v in value)
            ):
                before(fields, value)
                for item in value if isinstance(value, list) else []:
                    before(value, item)
    assert checked > 60


def test_in_memory_rows_keep_their_tool_arguments() -> None:
    rows = copy.deepcopy(ROWS[:1])
    case = vertex.load_data(rows, file=None, mapping=None).cases[0]
    case.actual[0].tool_calls()[0].args["city"] = "Paris"  # type: ignore[index]
    assert rows[0]["predicted_trajectory"][0]["tool_input"] == {"city": "Rome"}


def test_yaml_aliases_do_not_share_arguments_between_calls(tmp_path: Path) -> None:
    path = tmp_path / "rows.yaml"
    path.write_text(
        "- prompt: p\n"
        "  reference_trajectory:\n"
        "    - {tool_name: a, tool_input: &args {x: 1}}\n"
        "  predicted_trajectory:\n"
        "    - {tool_name: a, tool_input: *args}\n",
        encoding="utf-8",
    )
    case = load(path, "vertex").cases[0]
    ref, act = case.reference[0].tool_calls()[0], case.actual[0].tool_calls()[0]  # type: ignore[index]
    ref.args["x"] = 2
    assert act.args == {"x": 1}


def test_tool_names_are_one_object_per_name(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [{"prompt": "p", "predicted_trajectory": [{"tool_name": "find"}]} for _ in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    names = [c.actual[0].tool_calls()[0].name for c in load(path).cases]  # type: ignore[index]
    assert names == ["find"] * 3
    assert len({id(n) for n in names}) == 1
