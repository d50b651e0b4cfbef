"""One expected turn said two ways: ADK steps + final response, or CES expectations.

ADK writes what an agent should do as `intermediate_data` (tool uses, tool responses,
intermediate responses) and a `final_response`; CES writes it as golden expectation
steps (`toolCall`, `toolResponse`, `agentResponse`, `updatedVariables`, each with an
optional `note`). The conversions between them are exact inverses on the expectations
without notes, whose kinds both sides hold (`plain`):

- `as_expectations(turn)`: the steps in order, then the final response as the last
  `agentResponse`, then the turn's own expectations;
- `as_steps(expectations)`: the last expectation, if it is an `agentResponse`, becomes
  the final response; the others become steps in order.

Agent transfers stay steps in both formats (CES has `agentTransfer` steps).
"""

from __future__ import annotations

from assay.core.cases import AgentMessage, EvalCase, Expectation, Step, Turn

_PLAIN = ("tool_call", "tool_response", "agent_response", "updated_variables")


def is_plain(e: Expectation) -> bool:
    """Whether `e` has a step form: no note and a tool call / response / reply / update."""
    return e.note is None and any(getattr(e, k) is not None for k in _PLAIN)


def step_expectation(step: Step) -> Expectation | None:
    """The expectation a step says (None for agent transfers and retrievals)."""
    if step.tool_call is not None:
        return Expectation(tool_call=step.tool_call)
    if step.tool_response is not None:
        return Expectation(tool_response=step.tool_response)
    if step.agent_message is not None:
        return Expectation(agent_response=step.agent_message.text)
    if step.variables_update is not None:
        return Expectation(updated_variables=step.variables_update)
    return None


def as_expectations(turn: Turn) -> list[Expectation]:
    out = [e for s in turn.steps if (e := step_expectation(s)) is not None]
    if turn.final_response is not None:
        out.append(Expectation(agent_response=turn.final_response))
    return out + list(turn.expectations)


def expectation_step(e: Expectation) -> Step:
    if e.tool_call is not None:
        return Step(tool_call=e.tool_call)
    if e.tool_response is not None:
        return Step(tool_response=e.tool_response)
    if e.agent_response is not None:
        return Step(agent_message=AgentMessage(text=e.agent_response))
    return Step(variables_update=e.updated_variables)


def as_steps(expectations: list[Expectation]) -> tuple[list[Step], str | None]:
    """Plain expectations as steps and a final response (see the module doc)."""
    items = list(expectations)
    final = None
    if items and items[-1].agent_response is not None:
        final = items.pop().agent_response
    return [expectation_step(e) for e in items], final


def mirror(expectations: list[Expectation]) -> tuple[list[Step], str | None]:
    """What ADK's own evaluator can check of expectations that also carry notes or
    other kinds: their tool calls, tool responses and replies, notes left out."""
    kept = [
        Expectation(tool_call=e.tool_call, tool_response=e.tool_response,
                    agent_response=e.agent_response)
        for e in expectations
        if e.tool_call is not None or e.tool_response is not None
        or e.agent_response is not None
    ]  # fmt: skip
    return as_steps(kept)


def transfers(turn: Turn) -> list[Step]:
    return [s for s in turn.steps if s.agent_transfer is not None]


def answer_to_final_response(case: EvalCase) -> None:
    """Say a golden's reference answer as its last turn's final response.

    A case's `expected_response` and its last reference turn's final response are the
    same reference answer (`assay.metrics.lexical.reference_text`): MLflow rows have only
    the first, ADK's evaluator, CES goldens and Vertex's `reference` column read the
    second. Moving the answer there when that place is empty keeps A -> MLflow -> A
    equal. The inverse is `answer_to_expected_response`.
    """
    if case.reference and case.expected_response is not None:
        last = case.reference[-1]
        if last.final_response is None:
            last.final_response, case.expected_response = case.expected_response, None


def answer_to_expected_response(case: EvalCase) -> None:
    """A golden's last reference answer as the case's `expected_response` (MLflow)."""
    if case.reference and not case.actual:
        last = case.reference[-1]
        if last.final_response is not None and case.expected_response in (
            None,
            last.final_response,
        ):
            case.expected_response, last.final_response = last.final_response, None
