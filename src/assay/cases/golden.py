"""What an agent did, made into a case expecting exactly that ("bless this run").

A played turn becomes a golden turn: the same user input, the tool calls with their
arguments, the transfers and the final response, and each tool result twice: as the
turn's `tool_response` step and as a `mock_tool_response` expectation, which answers
the call when the case replays with FAKE tools. What was measured while it played
(latencies, token usage, model calls, timestamps, the error) and the played run's
tool call ids are no expectation and are left out. Each format keeps what it can
hold: CES expectations carry the results as mocks only; a Vertex row keeps them in
its trajectory's `tool_output` (it has no mocks).
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.core.cases import EvalCase, Expectation, SessionInput, Step, ToolResponse, Turn
from assay.errors import InputError

_MEASURED = {
    "latency_s": None,
    "model_latency_s": None,
    "tool_latency_s": None,
    "model_calls": None,
    "usage": None,
    "error": None,
    "created_at": None,
    "grounding": None,
}


def golden_turn(turn: Turn) -> Turn:
    """`turn` as a golden turn expecting what was played (see the module docstring)."""
    steps: list[Step] = []
    mocks: list[Expectation] = []
    for step in turn.steps:
        if step.tool_call is not None:  # a call id is the played run's, not an expectation
            step = step.model_copy(
                update={"tool_call": step.tool_call.model_copy(update={"id": None})}
            )
        response = step.tool_response
        if response is not None:
            response = response.model_copy(update={"latency_s": None, "id": None})
            step = step.model_copy(update={"tool_response": response})
            mock = ToolResponse(name=response.name, response=response.response)
            mocks.append(Expectation(mock_tool_response=mock))
        steps.append(step)
    return turn.model_copy(
        update={**_MEASURED, "steps": steps, "expectations": mocks, "rubrics": []}
    )


def golden_case(
    case_id: str,
    turns: Sequence[Turn],
    *,
    session_input: SessionInput | None = None,
    like: EvalCase | None = None,
) -> EvalCase:
    """A case expecting `turns`; with `like` (the case it replaces), that case's other
    fields (session input, tags, rubrics, description, metadata) are kept."""
    if not turns:
        raise InputError(
            "has no played turns (the run failed before the agent answered): there is "
            "nothing to expect",
            case_id=case_id,
        )
    reference = [golden_turn(t) for t in turns]
    if like is not None:
        return like.model_copy(update={"reference": reference, "actual": None, "scenario": None})
    return EvalCase(id=case_id, reference=reference, session_input=session_input)


def for_format(case: EvalCase, fmt: str) -> EvalCase:
    """`case` as `fmt` holds a golden: CES keeps results as mocks, Vertex as steps."""
    if case.reference is None:
        return case
    turns = []
    for turn in case.reference:
        if fmt == "ces":
            steps = [s for s in turn.steps if s.tool_response is None]
            turn = turn.model_copy(update={"steps": steps, "id": None})  # no turn ids
        elif fmt == "vertex":
            kept = [e for e in turn.expectations if e.mock_tool_response is None]
            turn = turn.model_copy(update={"expectations": kept, "id": None})
        turns.append(turn)
    return case.model_copy(update={"reference": turns})
