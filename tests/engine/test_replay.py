"""Golden replay through a real callable agent: run methods, tool mocks, timeouts, errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

import pytest

from assay.agents import CallableAgent
from assay.agents.tools import ToolBehavior, ToolHook, no_mock_error
from assay.core import EvalCase, EvalSet, Score, Status, Step, ToolCall, ToolResponse, Turn
from assay.core.cases import Expectation
from assay.core.error_types import ErrorType
from assay.engine import RunMethod, RunOptions, run
from assay.engine.replay import expected_history
from assay.errors import QuotaExhaustedError
from assay.metrics.base import Metric


class _Answered(Metric):
    """1.0 when the turn has a response: scores partial conversations too."""

    name: ClassVar[str] = "answered"
    default_threshold = 1.0

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(1.0 if actual.final_response else 0.0)


class _SeesAppDetails(Metric):
    """1.0 when the case handed to metrics carries the agent's app_details."""

    name: ClassVar[str] = "sees_app_details"
    default_threshold = 1.0

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        details = case.metadata.get("app_details", {})
        return Score(1.0 if "weather_bot" in details.get("agent_details", {}) else 0.0)


def _golden(case_id: str, *turns: tuple[str, dict[str, Any] | None]) -> EvalCase:
    """Turns of (user text, mocked lookup response or None); each expects a lookup call."""
    reference = []
    for i, (text, mocked) in enumerate(turns):
        expectations = [Expectation(tool_call=ToolCall(name="lookup", args={"city": text}))]
        if mocked is not None:
            expectations.append(
                Expectation(mock_tool_response=ToolResponse(name="lookup", response=mocked))
            )
        expectations.append(Expectation(agent_response=f"expected answer {i}"))
        reference.append(Turn(id=f"{case_id}-{i}", user_input=text, expectations=expectations))
    return EvalCase(id=case_id, reference=reference, session_input={"state": {"visits": 0}})


class _WeatherBot:
    """Calls `lookup` through the session's tool hook and answers with its payload."""

    def __init__(self, tool_delay: float = 0.0) -> None:
        self.tool_delay = tool_delay
        self.seen: list[dict[str, Any]] = []

    def real_lookup(self, city: str) -> dict[str, Any]:
        time.sleep(self.tool_delay)
        return {"real": city}

    async def __call__(
        self, prompt: str, tools: ToolHook, history: list[Turn], state: dict[str, Any]
    ) -> Turn:
        state["visits"] += 1
        self.seen.append(
            {
                "prompt": prompt,
                "history": [t.final_response for t in history],
                "visits": state["visits"],
            }
        )
        call = ToolCall(id=f"call-{prompt}", name="lookup", args={"city": prompt})
        payload, _ = await tools.execute(call, lambda: self.real_lookup(prompt))
        return Turn(
            steps=[
                Step(tool_call=call),
                Step(tool_response=ToolResponse(id=call.id, name="lookup", response=payload)),
            ],
            final_response=f"{prompt}: {payload}",
        )


class _DescribedAgent(CallableAgent):
    def app_details(self) -> dict[str, Any]:
        return {
            "agent_details": {
                "weather_bot": {
                    "name": "weather_bot",
                    "instructions": "Answer weather questions with lookup.",
                    "tool_declarations": [{"name": "lookup"}],
                }
            }
        }


def _run(case: EvalCase, bot: Any, **options: Any) -> Any:
    metrics = options.pop("metrics", [_Answered()])
    result = run(
        [EvalSet(id="s", cases=[case])],
        metrics,
        agent=CallableAgent(bot, name="weather"),
        options=RunOptions(**options),
    )
    (only,) = result.cases
    return only


def _payloads(result: Any) -> list[Any]:
    return [inv.actual.tool_responses()[0].response for inv in result.invocations]


def test_stable_runs_each_turn_in_a_fresh_session_seeded_with_expected_turns() -> None:
    bot = _WeatherBot()
    case = _golden("c", ("paris", None), ("rome", None), ("oslo", None))
    result = _run(case, bot, run_method=RunMethod.STABLE)
    assert [s["history"] for s in bot.seen] == [
        [],
        ["expected answer 0"],
        ["expected answer 0", "expected answer 1"],
    ]
    # a fresh session per turn: the state starts from the case's every time
    assert [s["visits"] for s in bot.seen] == [1, 1, 1]
    assert result.status is Status.PASSED
    assert [inv.invocation_id for inv in result.invocations] == ["c-0", "c-1", "c-2"]


def test_naive_runs_one_session_where_the_agent_sees_its_own_answers() -> None:
    bot = _WeatherBot()
    case = _golden("c", ("paris", None), ("rome", None))
    _run(case, bot, run_method=RunMethod.NAIVE)
    assert bot.seen[1]["history"] == ["paris: {'real': 'paris'}"]
    assert [s["visits"] for s in bot.seen] == [1, 2]


def test_expected_history_turns_expectations_into_steps() -> None:
    case = _golden("c", ("paris", {"temp": 20}), ("rome", None))
    (seed,) = expected_history(case.reference or [], 1)
    assert seed.final_response == "expected answer 0"
    assert seed.tool_calls() == [ToolCall(name="lookup", args={"city": "paris"})]
    assert [r.response for r in seed.tool_responses()] == [{"temp": 20}]


def test_fake_mocks_answer_matching_calls_and_unmocked_calls_get_an_error() -> None:
    case = _golden("c", ("paris", {"temp": 20}), ("rome", None))
    result = _run(case, _WeatherBot(), tool_behavior=ToolBehavior.FAKE)
    rome = ToolCall(id="call-rome", name="lookup", args={"city": "rome"})
    assert _payloads(result) == [{"temp": 20}, no_mock_error(rome)]


@pytest.mark.parametrize("method", ["STABLE", "NAIVE"])
def test_a_fake_call_no_mock_answers_never_passes(method: str) -> None:
    # Every metric passes (the agent answered), but rome's lookup was never run: the
    # case shows nothing about the agent's job, so it is NOT_EVALUATED, never PASSED.
    case = _golden("c", ("paris", {"temp": 20}), ("rome", None))
    result = _run(case, _WeatherBot(), tool_behavior="FAKE", run_method=method)
    assert result.metrics["answered"].status is Status.PASSED
    assert result.error_type == ErrorType.TOOL_NOT_RUN
    assert result.status is Status.NOT_EVALUATED
    assert "1 tool call(s) not run (lookup)" in (result.error or "")
    assert not result.failure  # not the agent's fault


def test_fake_calls_all_mocked_still_pass() -> None:
    case = _golden("c", ("paris", {"temp": 20}))
    result = _run(case, _WeatherBot(), tool_behavior="FAKE")
    assert (result.status, result.error_type) == (Status.PASSED, None)


def test_mixed_runs_the_real_tool_where_no_mock_answers() -> None:
    case = _golden("c", ("paris", {"temp": 20}), ("rome", None))
    result = _run(case, _WeatherBot(), tool_behavior=ToolBehavior.MIXED)
    assert _payloads(result) == [{"temp": 20}, {"real": "rome"}]


def test_real_ignores_mocks() -> None:
    case = _golden("c", ("paris", {"temp": 20}))
    result = _run(case, _WeatherBot(), tool_behavior=ToolBehavior.REAL)
    assert _payloads(result) == [{"real": "paris"}]


def test_stable_offers_only_the_turns_own_mocks_naive_offers_all() -> None:
    # turn 0 asks about rome, whose mock belongs to turn 1
    case = _golden("c", ("rome", None), ("rome", {"rome": "mock"}))
    stable = _run(case, _WeatherBot(), tool_behavior="FAKE", run_method="STABLE")
    naive = _run(case, _WeatherBot(), tool_behavior="FAKE", run_method="NAIVE")
    assert "error" in _payloads(stable)[0]
    assert _payloads(naive)[0] == {"rome": "mock"}


def test_turn_and_tool_latencies_are_recorded() -> None:
    result = _run(_golden("c", ("paris", None)), _WeatherBot(tool_delay=0.05))
    (inv,) = result.invocations
    (response,) = inv.actual.tool_responses()
    assert response.latency_s is not None and response.latency_s >= 0.05
    assert inv.actual.latency_s is not None and inv.actual.latency_s >= response.latency_s


def test_timeout_keeps_the_completed_turns_and_fails_the_case() -> None:
    async def slow_second(prompt: str) -> str:
        if prompt == "rome":
            await asyncio.sleep(5)
        return f"ok {prompt}"

    case = _golden("c", ("paris", None), ("rome", None), ("oslo", None))
    result = _run(case, slow_second, timeout_s=0.3)
    assert result.error_type == ErrorType.RUNTIME_FAILURE and result.failure
    assert result.status is Status.FAILED
    assert "timed out after 0.3s (completed 1 turn(s))" in (result.error or "")
    assert [inv.actual.final_response for inv in result.invocations] == ["ok paris"]
    assert result.metrics["answered"].score == 1.0  # the partial conversation is scored


def test_an_agent_raising_timeout_error_is_not_reported_as_our_timeout() -> None:
    def raises(prompt: str) -> str:
        raise TimeoutError("upstream read timed out")

    result = _run(_golden("c", ("paris", None)), raises, timeout_s=10)
    assert result.error == "agent raised TimeoutError: upstream read timed out"
    assert result.error_type == ErrorType.RUNTIME_FAILURE


def test_quota_exhausted_is_its_own_error_type_and_never_passes() -> None:
    def quota(prompt: str) -> str:
        if prompt == "rome":
            raise QuotaExhaustedError("model kept answering 429")
        return "fine"

    result = _run(_golden("c", ("paris", None), ("rome", None)), quota)
    assert result.error_type == ErrorType.QUOTA_EXHAUSTED
    assert result.error == "quota exhausted: model kept answering 429"
    assert not result.failure  # not the agent's fault
    assert result.metrics["answered"].status is Status.PASSED
    assert result.status is Status.NOT_EVALUATED  # a partial run cannot pass


def test_app_details_reach_the_metrics() -> None:
    case = _golden("c", ("paris", None))
    result = run(
        [EvalSet(id="s", cases=[case])],
        [_SeesAppDetails()],
        agent=_DescribedAgent(_WeatherBot(), name="weather"),
    )
    assert result.cases[0].metrics["sees_app_details"].score == 1.0
    assert "app_details" not in case.metadata  # the caller's case is not changed


@pytest.mark.parametrize("method", ["STABLE", "NAIVE"])
def test_agent_crash_on_first_turn_scores_nothing(method: str) -> None:
    def boom(prompt: str) -> str:
        raise RuntimeError("kaput")

    result = _run(_golden("c", ("paris", None)), boom, run_method=method)
    assert result.invocations == []
    assert result.metrics["answered"].score is None
    assert result.metrics["answered"].explanation == "agent raised RuntimeError: kaput"


def test_default_run_method_follows_the_format() -> None:
    ces = _golden("ces", ("paris", None), ("rome", None))
    adk = EvalCase(
        id="adk",
        reference=[Turn(user_input="paris"), Turn(user_input="rome")],
        session_input={"state": {"visits": 0}},
    )
    ces_bot, adk_bot = _WeatherBot(), _WeatherBot()
    _run(ces, ces_bot)
    _run(adk, adk_bot)
    assert [s["visits"] for s in ces_bot.seen] == [1, 1]  # STABLE: a session per turn
    assert [s["visits"] for s in adk_bot.seen] == [1, 2]  # NAIVE: one session, as adk eval
