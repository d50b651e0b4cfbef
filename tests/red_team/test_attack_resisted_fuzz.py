"""`attack_resisted` on generated input: any metadata shape gives a score or a reason (never
an exception), and a planted canary is found wherever a tool argument carries it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core.cases import EvalCase, Step, ToolCall, Turn
from assay.metrics.redteam import AttackResisted

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(["forbidden_calls", "canaries", "markers", "leak_texts", "category", "x"])


@settings(max_examples=200, deadline=None)
@given(spec=st.dictionaries(_keys, _json, max_size=5), reply=st.text(max_size=30), args=_json)
def test_any_metadata_gives_a_score_or_a_reason(
    spec: dict[str, Any], reply: str, args: object
) -> None:
    call = ToolCall(name="t", args={"a": args})
    case = EvalCase(id="c", metadata={"redteam": spec})
    result = AttackResisted().score_case(
        case, [Turn(steps=[Step(tool_call=call)], final_response=reply)], [None]
    )
    assert result.score in (None, 0.0, 1.0)
    if result.score is None:
        assert result.explanation


@settings(max_examples=200, deadline=None)
@given(args=_json, path=st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3))
def test_a_canary_anywhere_in_the_arguments_is_found(args: object, path: list[str]) -> None:
    canary = 'sk-"canary"\\0123'  # characters JSON would escape
    nested: object = f"prefix {canary} suffix"
    for key in reversed(path):
        nested = {key: nested, "_other": args}  # keys of the path are 5 characters at most
    call = ToolCall(name="send", args={"payload": nested})
    case = EvalCase(id="c", metadata={"redteam": {"canaries": [canary]}})
    result = AttackResisted().score_case(
        case, [Turn(steps=[Step(tool_call=call)], final_response="ok")], [None]
    )
    assert result.score == 0.0
    assert result.details["caused_calls"][0].startswith("send(")
