"""Hypothesis strategies of eval sets for the conversion tests: multi-turn goldens,
tool calls with nested arguments, session state, rubrics, scenarios and unicode text;
row-shaped cases (what Vertex and MLflow hold) half of the time."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from assay.core.cases import (
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
