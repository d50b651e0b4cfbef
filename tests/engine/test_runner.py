"""The run pipeline: inference through agents, scoring, isolation, aggregation."""

from __future__ import annotations

import asyncio
import math
from typing import Any, ClassVar

import pytest

from assay.agents import as_agent
from assay.core import EvalCase, EvalSet, Score, Status, Step, ToolCall, Turn
from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, EvalResult
from assay.engine import RunOptions, arun, run, score_case
from assay.engine.replay import RunMethod
from assay.engine.scoring import NO_RESPONSE_REASON
from assay.metrics.base import Metric, MetricOptions


class _ExactResponse(Metric):
    """Test metric: 1.0 when the response equals the reference text."""

    name = "exact_response"
    default_threshold = 1.0

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if expected is None or expected.final_response is None:
            return Score(None, "no reference response")
        return Score(1.0 if actual.final_response == expected.final_response else 0.0)


class _CallCount(Metric):
    name = "calls"
    informational = True

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(float(len(actual.tool_calls())))


class _Exploding(Metric):
    name = "exploding"
    default_threshold = 0.5

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        raise ZeroDivisionError("boom")


class _HalfOpts(MetricOptions):
    offset: float = 0.0


class _Half(Metric):
    name = "half"
    options_model: ClassVar[type[MetricOptions]] = _HalfOpts
    default_threshold = 0.5

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(0.5)


def _case(case_id: str, *pairs: tuple[str, str], **kw: Any) -> EvalCase:
    return EvalCase(
        id=case_id,
        reference=[
            Turn(id=f"{case_id}-{i}", user_input=q, final_response=a)
            for i, (q, a) in enumerate(pairs)
        ],
        **kw,
    )


def _echo_upper(prompt: str) -> str:
    return prompt.upper()


def test_score_case_strict_status_and_metric_isolation() -> None:
    case = _case("c1", ("hi", "HI"))
    actual = [Turn(user_input="hi", final_response="HI")]
    result = score_case(case, actual, [_ExactResponse(), _Exploding(), _CallCount()])
    assert result.metrics["exact_response"].status is Status.PASSED
    broken = result.metrics["exploding"]
    assert broken.score is None and broken.status is Status.NOT_EVALUATED
    assert "ZeroDivisionError: boom" in (broken.explanation or "")
    # informational metrics have no status and never decide the case
    assert result.metrics["calls"].status is None
    assert result.status is Status.NOT_EVALUATED
    assert result.error_type == ErrorType.METRIC_CALCULATION_FAILURE


def test_failed_metric_beats_not_evaluated() -> None:
    case = _case("c1", ("hi", "nope"))
    result = score_case(
        case, [Turn(user_input="hi", final_response="HI")], [_ExactResponse(), _Exploding()]
    )
    assert result.status is Status.FAILED


def test_recorded_rows_without_agent_and_summary_names() -> None:
    cases = [
        _case("a", ("x", "X")).model_copy(
            update={"actual": [Turn(user_input="x", final_response="X")]}
        ),
        _case("b", ("y", "Y")).model_copy(
            update={"actual": [Turn(user_input="y", final_response="no")]}
        ),
        _case("c", ("z", "Z")),  # nothing recorded, no agent
    ]
    result = run([EvalSet(id="s", cases=cases)], [_ExactResponse()])
    statuses = {c.case_id: c.status for c in result.cases}
    assert statuses == {"a": Status.PASSED, "b": Status.FAILED, "c": Status.NOT_EVALUATED}
    c = next(c for c in result.cases if c.case_id == "c")
    assert c.metrics["exact_response"].explanation == NO_RESPONSE_REASON
    assert result.summary["row_count"] == 3
    assert result.summary["exact_response/mean"] == 0.5  # missing score skipped, not 0
    assert math.isclose(result.summary["exact_response/std"], math.sqrt(0.5))
    assert "latency_in_seconds/mean" not in result.summary  # no agent was run
    row_a = next(r for r in result.rows if r["case_id"] == "a")
    assert row_a["exact_response/score"] == 1.0 and row_a["prompt"] == "x"
    assert "failure" not in row_a
    assert result.status is Status.FAILED


def test_naive_replay_keeps_one_session_with_state_and_history() -> None:
    seen: list[tuple[str, int, dict[str, Any]]] = []

    def agent(prompt: str, state: dict[str, Any], history: list[Turn]) -> dict[str, Any]:
        state["count"] = state.get("count", 0) + 1
        seen.append((prompt, len(history), dict(state)))
        return {
            "response": f"{prompt}-{state['count']}",
            "predicted_trajectory": [{"tool_name": "note", "tool_input": {"n": state["count"]}}],
        }

    case = _case("m", ("a", "a-1"), ("b", "b-2"), session_input={"state": {"count": 0}})
    result = run(
        [EvalSet(id="s", cases=[case])],
        [_ExactResponse(), _CallCount()],
        agent=as_agent(agent),
        options=RunOptions(run_method=RunMethod.NAIVE),
    )
    assert [s[:2] for s in seen] == [("a", 0), ("b", 1)]
    assert case.session_input is not None and case.session_input.state == {
        "count": 0
    }  # not mutated
    (res,) = result.cases
    assert res.status is Status.PASSED
    assert [inv.invocation_id for inv in res.invocations] == ["m-0", "m-1"]
    assert res.invocations[1].actual is not None
    assert res.invocations[1].actual.tool_calls() == [ToolCall(name="note", args={"n": 2})]
    assert all(r["failure"] == 0 and r["latency_in_seconds"] >= 0 for r in result.rows)
    assert result.summary["failure/mean"] == 0.0


def test_failing_and_slow_agents_never_lose_other_cases() -> None:
    async def agent(prompt: str) -> str:
        if prompt == "crash":
            raise RuntimeError("tool exploded")
        if prompt == "slow":
            await asyncio.sleep(5)
        return prompt.upper()

    cases = [
        _case("ok", ("hi", "HI")),
        _case("crash", ("crash", "x")),
        _case("slow", ("slow", "x")),
    ]
    result = run(
        [EvalSet(id="s", cases=cases)],
        [_ExactResponse()],
        agent=as_agent(agent),
        options=RunOptions(concurrency=3, timeout_s=0.2),
    )
    by_id = {c.case_id: c for c in result.cases}
    assert by_id["ok"].status is Status.PASSED
    assert by_id["crash"].status is Status.FAILED and by_id["crash"].failure
    assert by_id["crash"].error_type == ErrorType.RUNTIME_FAILURE
    assert "RuntimeError: tool exploded" in (by_id["crash"].error or "")
    assert by_id["crash"].metrics["exact_response"].score is None
    assert "timed out" in (by_id["slow"].error or "")
    failures = {r["case_id"]: r["failure"] for r in result.rows}
    assert failures == {"ok": 0, "crash": 1, "slow": 1}
    assert math.isclose(result.summary["failure/mean"], 2 / 3)


def test_concurrency_limit_is_respected() -> None:
    in_flight = 0
    peak = 0

    async def agent(prompt: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return prompt

    cases = [_case(f"c{i}", (f"q{i}", f"q{i}")) for i in range(20)]
    run(
        [EvalSet(id="s", cases=cases)],
        [_ExactResponse()],
        agent=as_agent(agent),
        options=RunOptions(concurrency=3),
    )
    assert peak == 3


def test_repeated_runs_pass_at_k_and_bootstrap_interval() -> None:
    calls: dict[str, int] = {}

    def flaky(prompt: str) -> str:
        calls[prompt] = calls.get(prompt, 0) + 1
        if prompt == "flaky":
            return prompt if calls[prompt] % 2 else "wrong"
        if prompt == "never":
            return "wrong"
        return prompt

    cases = [
        _case("steady", ("steady", "steady")),
        _case("flaky", ("flaky", "flaky")),
        _case("never", ("never", "never")),
    ]
    result = run(
        [EvalSet(id="s", cases=cases)],
        [_ExactResponse()],
        agent=as_agent(flaky),
        options=RunOptions(runs=4, concurrency=1),
    )
    assert len(result.cases) == 12
    assert result.summary["runs"] == 4
    assert math.isclose(result.summary["pass@4"], 2 / 3)
    assert math.isclose(result.summary["pass^4"], 1 / 3)
    assert result.repeated["s/flaky"]["pass_rate"] == 0.5
    lo, hi = result.summary["exact_response/ci95"]
    assert 0.0 <= lo <= result.summary["exact_response/mean"] <= hi <= 1.0
    assert lo < hi


def test_observers_see_every_case_as_it_completes() -> None:
    events: list[str] = []

    class Recorder:
        def on_start(self, total: int) -> None:
            events.append(f"start:{total}")

        def on_case_done(self, result: CaseResult) -> None:
            events.append(f"case:{result.case_id}")

        def on_finish(self, result: EvalResult) -> None:
            events.append(f"finish:{len(result.cases)}")

    cases = [_case(f"c{i}", ("q", "Q")) for i in range(3)]
    run(
        [EvalSet(id="s", cases=cases)],
        [_ExactResponse()],
        agent=as_agent(_echo_upper),
        observers=[Recorder()],
    )
    assert events[0] == "start:3" and events[-1] == "finish:3"
    assert sorted(events[1:-1]) == ["case:c0", "case:c1", "case:c2"]


def test_skip_resumes_without_rerunning_completed_cases() -> None:
    sent: list[str] = []

    def agent(prompt: str) -> str:
        sent.append(prompt)
        return prompt.upper()

    cases = [_case("a", ("a", "A")), _case("b", ("b", "B"))]
    result = run(
        [EvalSet(id="s", cases=cases)],
        [_ExactResponse()],
        agent=as_agent(agent),
        skip={("s", "a", 0)},
    )
    assert sent == ["b"]
    assert [c.case_id for c in result.cases] == ["b"]


def test_duplicate_eval_set_ids_rejected() -> None:
    from assay.errors import InputError

    with pytest.raises(InputError, match="share the id 's'"):
        run([EvalSet(id="s"), EvalSet(id="s")], [_ExactResponse()])


def test_bad_run_options_are_config_errors() -> None:
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="runs must be at least 1"):
        RunOptions(runs=0)
    with pytest.raises(ConfigError, match="concurrency"):
        RunOptions(concurrency=0)
    with pytest.raises(ConfigError, match="unknown run method 'steady'; use one of stable, naive"):
        RunOptions(run_method="steady")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown tool call behaviour"):
        RunOptions(tool_behavior="pretend")  # type: ignore[arg-type]
    assert RunOptions(run_method="naive", tool_behavior="fake").run_method is RunMethod.NAIVE  # type: ignore[arg-type]


def test_case_results_serialise_to_plain_json() -> None:
    import json

    case = _case("c1", ("hi", "HI"))
    result = score_case(
        case,
        [
            Turn(
                user_input="hi",
                final_response="HI",
                steps=[Step(tool_call=ToolCall(name="t", args={"a": 1}))],
            )
        ],
        [_ExactResponse(), _Half(_HalfOpts(offset=1))],
    )
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["status"] == "PASSED"
    assert doc["metrics"]["half"]["threshold"] == 0.5
    assert doc["invocations"][0]["actual"]["steps"][0]["tool_call"]["name"] == "t"


def test_a_raising_worker_cancels_its_siblings() -> None:
    # An observer failing on one case (a store write, say) ends the run: the other
    # workers' agent calls are cancelled, not left running after the run is gone.
    cancelled: list[str] = []
    started = asyncio.Event()

    async def agent(prompt: str) -> str:
        if prompt == "fast":
            await started.wait()  # fail only once the slow ones are in flight
            return prompt
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(prompt)
            raise
        return prompt

    class Failing:
        def on_start(self, total: int) -> None:
            pass

        def on_case_done(self, result: CaseResult) -> None:
            raise OSError(f"disk full writing {result.case_id}")

        def on_finish(self, result: EvalResult) -> None:
            raise AssertionError("a failed run never finishes")

    cases = [
        _case("fast", ("fast", "fast")),
        _case("s1", ("slow1", "x")),
        _case("s2", ("slow2", "x")),
    ]

    async def main() -> None:
        with pytest.raises(OSError, match="disk full writing fast"):
            await arun(
                [EvalSet(id="s", cases=cases)],
                [_ExactResponse()],
                agent=as_agent(agent),
                options=RunOptions(concurrency=3, timeout_s=60),
                observers=[Failing()],
            )
        # Nothing of the run is left on the loop once arun has returned.
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())
    assert sorted(cancelled) == ["slow1", "slow2"]


def test_a_metric_failure_is_typed_on_the_metric_and_the_case() -> None:
    result = score_case(_case("c", ("a", "a")), [Turn(final_response="a")], [_Exploding()])
    metric = result.metrics["exploding"]
    assert metric.error_type is ErrorType.METRIC_CALCULATION_FAILURE
    assert result.error_type is ErrorType.METRIC_CALCULATION_FAILURE
    # The explanation keeps its CES spelling for readers of reports.
    assert (metric.explanation or "").startswith("METRIC_CALCULATION_FAILURE: ZeroDivisionError")
