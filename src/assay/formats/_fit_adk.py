"""What an ADK eval set can hold of an eval set: `fit` for writing ADK.

ADK holds most of the model natively, and the rest in the case key `assay`, which
google-adk's `EvalCase` keeps (it allows extra fields) and its evaluator ignores.

Translations (nothing is lost):
- golden expectations that say only a tool call, a tool response, an agent reply or a
  variables update (no note) become the turn's steps and final response
  (`assay.formats._golden`), which ADK's evaluator checks; other expectations stay
  expectations, and the ADK writer mirrors their tool calls and replies into
  `intermediate_data` / `final_response` so ADK checks those too;
- the first turn's `userInput.variables` (CES session variables) become
  `session_input.state`, and a scenario's `variable_overrides` too, when the session
  has no state of its own; an empty `session_input` is not written.

Losses: a scenario without a starting prompt or conversation plan (google-adk requires
both, so the case cannot be written), tool responses that are not JSON objects (genai
wants an object), and tool-response latencies.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.core.cases import EvalCase, EvalSet, SessionInput, Step, ToolResponse, Turn
from assay.formats._golden import (
    answer_to_final_response,
    as_expectations,
    as_steps,
    is_plain,
    transfers,
)
from assay.formats._loss import Loss, Losses

Drop = Callable[[str], None]


def fit(evalset: EvalSet) -> tuple[EvalSet, list[Loss]]:
    """The set as ADK holds it, and what ADK cannot hold (see the module doc)."""
    es = evalset.model_copy(deep=True)
    losses = Losses()
    cases = []
    for case in es.cases:

        def drop(name: str, case_id: str = case.id) -> None:
            losses.add(case_id, name)

        sc = case.scenario
        if sc is not None and (sc.starting_prompt is None or sc.conversation_plan is None):
            drop("the case (an ADK conversation_scenario needs a starting_prompt and a "
                 "conversation_plan)")  # fmt: skip
            continue
        unmapped = case.metadata.get("adk_unmapped")  # `adk.UNMAPPED`
        if unmapped is not None and not isinstance(unmapped, dict):
            # ADK detail kept verbatim is an object; its text (a CSV cell) is not read.
            drop("metadata.adk_unmapped (not an object)")
            del case.metadata["adk_unmapped"]
        answer_to_final_response(case)  # where ADK's evaluator reads the answer
        if case.reference is not None:
            case.reference = [_fit_turn(t, drop) for t in case.reference]
        for t in case.actual or []:
            _fit_steps(t.steps, "actual[].steps[]", drop)
            _fit_responses(t.user_input.tool_responses, "actual[].user_input", drop)
        _fit_session(case)
        cases.append(case)
    es.cases = cases
    return es, losses.items


def _fit_session(case: EvalCase) -> None:
    session = case.session_input or SessionInput()
    if not session.state:
        if case.scenario is not None and case.scenario.variable_overrides:
            session.state = case.scenario.variable_overrides
            case.scenario.variable_overrides = {}
        elif case.scenario is None and case.reference:
            first = case.reference[0].user_input
            if first.variables:
                session.state = first.variables
                first.variables = None
    case.session_input = None if session == SessionInput() else session


def _fit_response(r: ToolResponse, path: str, drop: Drop) -> None:
    if r.response is not None and not isinstance(r.response, dict):
        drop(f"{path}.response (not a JSON object)")
        r.response = None
    if r.latency_s is not None:
        drop(f"{path}.latency_s")
        r.latency_s = None


def _fit_responses(responses: list[ToolResponse], path: str, drop: Drop) -> None:
    for r in responses:
        _fit_response(r, f"{path}.tool_responses[]", drop)


def _fit_steps(steps: list[Step], path: str, drop: Drop) -> None:
    for s in steps:
        if s.tool_response is not None:
            _fit_response(s.tool_response, f"{path}.tool_response", drop)


def _fit_turn(t: Turn, drop: Drop) -> Turn:
    _fit_steps(t.steps, "reference[].steps[]", drop)
    _fit_responses(t.user_input.tool_responses, "reference[].user_input", drop)
    for e in t.expectations:
        for r in (e.tool_response, e.mock_tool_response):
            if r is not None:
                _fit_response(r, "reference[].expectations[]", drop)
    if not t.expectations:
        return t
    kept = transfers(t)
    said = Turn(
        steps=[s for s in t.steps if s.agent_transfer is None],
        final_response=t.final_response,
        expectations=t.expectations,
    )
    merged = as_expectations(said)
    if all(is_plain(e) for e in merged):
        steps, final = as_steps(merged)
        t.steps, t.final_response, t.expectations = kept + steps, final, []
    else:
        t.steps, t.final_response, t.expectations = kept, None, merged
    return t
