"""CES golden evaluations (real exported files) replayed through a callable agent.

The agent answers from the goldens' own tool mocks (FAKE tool calls); the default
criteria are CES's golden checks; the judged ones run against the stand-in server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import formats
from assay.agents.tools import ToolHook
from assay.api import evaluate
from assay.config import CES_GOLDEN_CRITERIA, DEFAULT_CRITERIA, default_criteria
from assay.core import EvalSet, Status, Step, ToolCall, ToolResponse, Turn, UserInput
from assay.core.cases import EvalCase
from assay.testing.judge_server import JudgeServer, StandinRequest

CES = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld" / "ces"
OFF_TOPIC = CES / "bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json"
PREFILL = CES / "bella_notte/evaluations/Event_Prefill_-_Party_Size_Skipped.json"
SCRAPI_GOLDENS = CES / "scrapi_yaml/golden_eval_example.yaml"

pytestmark = pytest.mark.skipif(not CES.is_dir(), reason="real-world CES files not present")


def _section(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return found.group(1).strip() if found else ""


def _judge(request: StandinRequest) -> str:
    """Similarity 4 when the response mentions the expected keyword, else 1; no hallucination."""
    system = request.messages[0]["content"]
    user = request.messages[-1]["content"]
    if "how consistent their meaning is" in system:
        expected = _section(user, "expected_response").lower()
        response = _section(user, "agent_response").lower()
        return json.dumps({"explanation": "compared", "score": 4 if expected in response else 1})
    return json.dumps({"explanation": "all supported", "score": 1})


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with JudgeServer(_judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        yield "openai:stand-in"


def test_default_criteria_follow_the_data() -> None:
    off_topic, prefill = formats.load(OFF_TOPIC), formats.load(PREFILL)
    assert list(default_criteria([off_topic])) == [
        "parameter_correctness_score",
        "tool_invocation_score",
        "tool_ordered_invocation_score",
        "golden_expectations",
        "hallucination",
    ]
    assert default_criteria([prefill]) == {"semantic_similarity": 3, "hallucination": 1.0}
    assert set(default_criteria([off_topic, prefill])) == set(CES_GOLDEN_CRITERIA)
    adk = EvalSet(id="adk", cases=[EvalCase(id="c", reference=[Turn(user_input="hi")])])
    assert default_criteria([adk]) == DEFAULT_CRITERIA


class _Maitre:
    """Bella Notte's state machine: three off-topic questions, then escalate and hang up.

    In STABLE replay turn N is seeded with the N expected turns before it, so the
    number of off-topic questions so far is the length of the history.
    """

    def __init__(self, escalate: bool = True) -> None:
        self.escalate = escalate

    async def __call__(self, prompt: str, history: list[Turn], tools: ToolHook) -> Turn:
        if len(history) < 3 or not self.escalate:
            sm: dict[str, Any] = {"status": "in_progress"}
            if not history:
                sm["filled"] = {}
            return Turn(
                steps=[Step(variables_update={"sm": sm})],
                final_response="I can only help with reservations at Bella Notte.",
            )
        call = ToolCall(
            id="end-1",
            name="end_session",
            args={"reason": "retry_exhausted", "session_escalated": True},
        )
        # The golden mocks no end_session: under MIXED the session's own one answers
        # (under FAKE it would not run, and the case could not pass).
        payload, _ = await tools.execute(call, lambda: {"ended": True})
        return Turn(
            steps=[
                Step(variables_update={"sm": {"status": "escalated"}}),
                Step(tool_call=call),
                Step(tool_response=ToolResponse(id="end-1", name="end_session", response=payload)),
            ],
            final_response="Let me pass you to a colleague.",
        )


def test_off_topic_golden_passes_with_observed_values_per_turn(judge: str) -> None:
    result = evaluate(OFF_TOPIC, agent=_Maitre(), judge=judge, tool_behavior="MIXED")
    (case,) = result.cases
    assert case.status is Status.PASSED, case.metrics
    assert set(case.metrics) == set(default_criteria([formats.load(OFF_TOPIC)]))
    last = case.invocations[3].scores
    assert last["parameter_correctness_score"].value == 1.0
    assert last["tool_invocation_score"].value == 1.0
    (outcome,) = case.invocations[1].scores["golden_expectations"].details["expectations"]
    assert outcome == {
        "note": "Check_Still_In_Progress_Turn2",
        "kind": "updated_variables",
        "expected": {"sm": {"status": "in_progress"}},
        "observed": {"sm": {"status": "in_progress"}},
        "outcome": "PASS",
    }
    assert case.metrics["hallucination"].score == 1.0


def test_off_topic_golden_fails_when_the_agent_never_escalates(judge: str) -> None:
    result = evaluate(OFF_TOPIC, agent=_Maitre(escalate=False), judge=judge, tool_behavior="MIXED")
    (case,) = result.cases
    assert case.status is Status.FAILED
    last = case.invocations[3].scores
    assert last["tool_invocation_score"].value == 0.0
    assert "end_session was not called" in (last["parameter_correctness_score"].explanation or "")
    outcomes = last["golden_expectations"].details["expectations"]
    assert outcomes[0]["observed"] == {"sm": {"status": "in_progress"}}
    assert outcomes[0]["outcome"] == "FAIL"


def _host(prompt: str, user_input: UserInput) -> str:
    if user_input.event == "welcome":
        party = (user_input.variables or {}).get("event_data", {}).get("party_size")
        return f"Welcome to Bella Notte! A table for {party}, lovely."
    return "Of course. For which date?"


def test_event_prefill_golden_is_judged_on_its_expected_responses(judge: str) -> None:
    result = evaluate(PREFILL, agent=_host, judge=judge)
    (case,) = result.cases
    assert case.status is Status.PASSED
    turns = case.metrics["semantic_similarity"].per_invocation
    assert [t.value for t in turns] == [4.0, 4.0]
    asked_for_size = evaluate(
        PREFILL, agent=lambda prompt: "How many people will be dining?", judge=judge
    )
    assert asked_for_size.cases[0].status is Status.FAILED


def test_scrapi_goldens_with_mocked_tool_calls(judge: str) -> None:
    evalset = formats.load(SCRAPI_GOLDENS)
    answers = {(t.user_input.text or ""): t for c in evalset.cases for t in c.reference or []}

    async def router(prompt: str, tools: ToolHook) -> Turn:
        expected = answers[prompt]
        steps = []
        for e in expected.expectations:
            if e.tool_call is not None:
                payload, _ = await tools.execute(e.tool_call, lambda: {"ok": True})
                steps += [
                    Step(tool_call=e.tool_call),
                    Step(tool_response=ToolResponse(name=e.tool_call.name, response=payload)),
                ]
        response = next((e.agent_response for e in expected.expectations if e.agent_response), "")
        return Turn(steps=steps, final_response=response)

    result = evaluate(evalset, agent=router, judge=judge, tool_behavior="MIXED")
    assert result.cases and all(c.status is Status.PASSED for c in result.cases), [
        (c.case_id, c.status, {n: m.explanation for n, m in c.metrics.items()})
        for c in result.cases
        if c.status is not Status.PASSED
    ]
    assert result.summary["parameter_correctness_score/mean"] == 1.0


def test_goldens_without_an_agent_report_why() -> None:
    result = evaluate(OFF_TOPIC)
    (case,) = result.cases
    assert case.status is Status.NOT_EVALUATED
    assert "no agent given" in (case.error or "")
