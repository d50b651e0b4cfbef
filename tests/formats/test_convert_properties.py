"""Round trips between every pair of formats, on generated eval sets (hypothesis).

For each direction A → B: a generated set is first made an A file (`native`: what A
holds of it, written and read back), then converted to B and back to A. When the
conversion to B reports no loss, the set comes back equal; when it reports losses,
each names a field the set really has. Every written file is detected as its format.
Example counts are bounded and the search is derandomized, so CI is stable and fast.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from convert_helpers import SUFFIX, accepted_by_own_tools, present
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay.formats import detect_format, format_module, load
from assay.formats._common import read_structured
from assay.formats.convert import difference, fit
from assay.model.core import (
    AgentMessage,
    AgentTransfer,
    EvalCase,
    EvalSet,
    Expectation,
    Rubric,
    RubricType,
    Scenario,
    ScenarioExpectation,
    SessionInput,
    Step,
    ToolCall,
    ToolExpectation,
    ToolResponse,
    Turn,
    UserFact,
    UserInput,
)

FORMATS = ("adk", "ces", "vertex", "mlflow")
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("ASSAY_PROP_EXAMPLES", "20")),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- strategies --------------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
# Unicode text (accents, CJK, emoji, RTL), no surrogates or control characters.
texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    min_size=1,
    max_size=12,
)
scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(names, json_values, max_size=3)
ids = st.none() | names

tool_calls = st.builds(ToolCall, id=ids, name=names, args=json_objects)
tool_responses = st.builds(ToolResponse, id=ids, name=names, response=st.none() | json_objects)
steps = st.one_of(
    st.builds(Step, tool_call=tool_calls),
    st.builds(Step, tool_response=tool_responses),
    st.builds(Step, agent_message=st.builds(AgentMessage, author=st.none() | names, text=texts)),
    st.builds(Step, agent_transfer=st.builds(AgentTransfer, target_agent=names)),
)
notes = st.none() | texts
expectations = st.one_of(
    st.builds(Expectation, note=notes, tool_call=tool_calls),
    st.builds(Expectation, note=notes, tool_response=tool_responses),
    st.builds(Expectation, note=notes, agent_response=texts),
    st.builds(Expectation, note=notes, agent_transfer=names),
    st.builds(Expectation, note=notes, updated_variables=json_objects),
    st.builds(Expectation, note=notes, mock_tool_response=tool_responses),
)
rubric_types = st.none() | st.sampled_from(list(RubricType))


@st.composite
def rubrics(draw: Any, max_size: int = 2) -> list[Rubric]:
    chosen = draw(st.lists(names, max_size=max_size, unique=True))
    return [Rubric(id=i, text=draw(texts), type=draw(rubric_types)) for i in chosen]


turns = st.builds(
    Turn,
    id=ids,
    user_input=st.builds(UserInput, text=texts),
    steps=st.lists(steps, max_size=4),
    final_response=st.none() | texts,
    expectations=st.lists(expectations, max_size=3),
    rubrics=rubrics(1),
)
sessions = st.none() | st.builds(
    SessionInput, app_name=st.none() | names, user_id=st.none() | names, state=json_objects
)
scenarios = st.builds(
    Scenario,
    task=st.none() | texts,
    starting_prompt=st.none() | texts,
    conversation_plan=st.none() | texts,
    user_facts=st.lists(st.builds(UserFact, name=names, value=texts), max_size=2),
    max_turns=st.none() | st.integers(1, 20),
    persona=st.none() | st.sampled_from(["NOVICE", "EXPERT"]),
    rubrics=st.lists(texts, max_size=2).map(
        lambda ts: [Rubric(id=f"rubric-{i + 1}", text=t) for i, t in enumerate(ts)]
    ),
    expectations=st.lists(
        st.one_of(
            st.builds(ScenarioExpectation, agent_response=texts),
            st.builds(
                ScenarioExpectation,
                tool_expectation=st.builds(ToolExpectation, expected_tool_call=tool_calls),
            ),
        ),
        max_size=2,
    ),
    variable_overrides=json_objects,
)


# Row-shaped cases (text turns, tool calls or replies), which Vertex and MLflow hold too.
plain_turns = st.builds(
    Turn,
    user_input=st.builds(UserInput, text=texts),
    steps=st.lists(
        st.builds(Step, tool_call=tool_calls)
        | st.builds(Step, agent_message=st.builds(AgentMessage, text=texts)),
        max_size=2,
    ),
    final_response=st.none() | texts,
)


@st.composite
def cases(draw: Any, case_id: str) -> EvalCase:
    if draw(st.booleans()):
        return EvalCase(
            id=case_id,
            tags=draw(st.lists(names, max_size=2)),
            reference=draw(st.lists(plain_turns, min_size=1, max_size=2)),
        )
    scenario = draw(st.none() | scenarios) if draw(st.booleans()) else None
    return EvalCase(
        id=case_id,
        tags=draw(st.lists(names, max_size=2)),
        description=draw(st.none() | texts),
        session_input=draw(sessions),
        reference=None if scenario is not None else draw(st.lists(turns, min_size=1, max_size=3)),
        scenario=scenario,
        rubrics=draw(rubrics()),
    )


@st.composite
def evalsets(draw: Any) -> EvalSet:
    case_ids = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    return EvalSet(
        id=draw(names),
        name=draw(st.none() | texts),
        description=draw(st.none() | texts),
        cases=[draw(cases(c)) for c in case_ids],
    )


# -- helpers -----------------------------------------------------------------------------


def written(evalset: EvalSet, fmt: str, folder: Path) -> EvalSet:
    """Write `evalset` (already fitted) as `fmt`, check detection, read it back."""
    path = folder / f"{evalset.id}{SUFFIX[fmt]}"
    format_module(fmt).write(evalset, path)
    assert detect_format(read_structured(path), path) == fmt
    accepted_by_own_tools(path, fmt)
    back = load(path, fmt)
    assert difference(evalset, back) is None
    return back


def native(evalset: EvalSet, fmt: str, folder: Path) -> EvalSet:
    """What an `fmt` file holds of `evalset`."""
    fitted = fit(evalset, fmt)[0]
    assume(fitted.cases)  # a file of no cases is never written (`assay convert` refuses)
    return written(fitted, fmt, folder)


DIRECTIONS = [(a, b) for a, b in itertools.permutations(FORMATS, 2)]


@pytest.mark.parametrize(("a", "b"), DIRECTIONS, ids=[f"{a}-{b}" for a, b in DIRECTIONS])
@SETTINGS
@given(evalset=evalsets())
def test_a_to_b_to_a(a: str, b: str, evalset: EvalSet, tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.mktemp(f"{a}-{b}")
    source = native(evalset, a, folder)
    assert fit(source, a) == (source, [])  # an A file is all A holds
    in_b, losses = fit(source, b)
    for loss in losses:
        assert present(source, loss), loss
    if not in_b.cases:
        return  # nothing B can hold: `assay convert` refuses to write a file of no cases
    from_b = written(in_b, b, folder / "b" if (folder / "b").mkdir() is None else folder)
    again, losses_back = fit(from_b, a)
    if not again.cases:
        assert losses  # what B held of an A file fits A again, unless B lost something
        return
    back = written(again, a, folder / "back" if (folder / "back").mkdir() is None else folder)
    if not losses:
        assert losses_back == []
        assert difference(source, back) is None
        assert back.cases == source.cases
