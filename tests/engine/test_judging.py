"""Judges in a run: attached before scoring, reasons when missing, stats in the summary."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay.core import EvalCase, EvalSet, Score, Status, Turn
from assay.engine import RunOptions, arun, run
from assay.engine.judging import JudgeRunOptions
from assay.errors import ConfigError
from assay.judges import BackendReply, GenerationSettings, JudgeCallError, JudgePool
from assay.metrics.base import Metric
from assay.metrics.judged.base import (
    NO_JUDGE_MESSAGE,
    JudgeClient,
    JudgedMetric,
    JudgedOptions,
    JudgeModelOptions,
)
from assay.models import resolve as resolve_module
from assay.store import Store


class _YesJudged(JudgedMetric):
    """Score 1 when the judge says "yes" to the response, else 0."""

    name: ClassVar[str] = "yes_judged"
    default_threshold = 0.5

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        messages = [{"role": "user", "content": f"ok? {actual.final_response}"}]
        try:
            replies = await judge.generate(messages, self.num_samples, {})
        except JudgeCallError as exc:
            return Score(None, f"judge call failed: {exc}")
        return Score(sum(r == "yes" for r in replies) / len(replies))


class _OtherJudged(_YesJudged):
    name: ClassVar[str] = "other_judged"


class _Length(Metric):
    """A deterministic metric that must run whatever happens to the judges."""

    name: ClassVar[str] = "length"
    default_threshold = 1.0

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(1.0 if actual.final_response else 0.0)


class _Backend:
    backend = "openai"

    def __init__(self, model: str, reply: str = "yes", fail: bool = False) -> None:
        self.model = model
        self.reply = reply
        self.fail = fail
        self.calls = 0
        self.closed = False

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        self.calls += 1
        await asyncio.sleep(0)
        if self.fail:
            raise JudgeCallError("HTTP 401 invalid api key", retryable=False, status=401)
        return BackendReply(self.reply, 7, 1)

    async def aclose(self) -> None:
        self.closed = True


class _Factory:
    def __init__(self, **backend_kw: Any) -> None:
        self.backends: list[_Backend] = []
        self.kw = backend_kw

    def __call__(self, model: str, options: JudgeModelOptions | None, *, timeout_s: float) -> Any:
        backend = _Backend(model, **self.kw)
        self.backends.append(backend)
        return backend


def _evalset(n: int = 3) -> EvalSet:
    cases = [
        EvalCase(id=f"c{i}", actual=[Turn(user_input=f"q{i}", final_response=f"a{i}")])
        for i in range(n)
    ]
    return EvalSet(id="s", cases=cases)


def _judged(cls: type[_YesJudged] = _YesJudged, **options: Any) -> _YesJudged:
    return cls(JudgedOptions(judge_model_options=JudgeModelOptions(**options)))


async def test_a_run_judges_every_case_and_reports_judge_stats() -> None:
    factory = _Factory()
    pool = JudgePool(default_model="openai:m", backend_factory=factory)
    metric = _judged(num_samples=3)
    result = await arun([_evalset()], [metric, _Length()], judges=pool)
    assert [c.status for c in result.cases] == [Status.PASSED] * 3
    assert result.summary["yes_judged/mean"] == 1.0
    assert result.summary["judge/calls"] == 9 and result.summary["judge/cache_hits"] == 0
    assert result.summary["judge/input_tokens"] == 63
    assert metric.judge is None  # detached after the run
    assert not factory.backends[0].closed  # the caller's pool stays open
    # Same pool, same work: everything comes from the cache.
    again = await arun([_evalset()], [metric, _Length()], judges=pool)
    assert again.summary["judge/calls"] == 0 and again.summary["judge/cache_hits"] == 9
    assert pool.stats.calls == 9 and pool.stats.cache_hits == 9  # the pool's totals
    assert factory.backends[0].calls == 9
    await pool.aclose()


def test_rerunning_on_a_store_makes_zero_calls(tmp_path: Path) -> None:
    factory = _Factory()
    store = Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    try:
        for expected_calls in (3, 0):
            pool = JudgePool(store=store, default_model="openai:m", backend_factory=factory)
            result = run_with_pool(pool, [_judged()])
            assert result.summary["judge/calls"] == expected_calls
        assert sum(b.calls for b in factory.backends) == 3
    finally:
        store.close()


def run_with_pool(pool: JudgePool, metrics: list[Metric]) -> Any:
    async def go() -> Any:
        try:
            return await arun([_evalset()], metrics, judges=pool)
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_without_a_judge_judged_metrics_say_how_to_configure_one() -> None:
    result = run([_evalset(1)], [_judged(), _Length()], judges=JudgeRunOptions())
    judged = result.cases[0].metrics["yes_judged"]
    assert judged.status is Status.NOT_EVALUATED
    assert judged.explanation == NO_JUDGE_MESSAGE
    assert "--judge MODEL" in NO_JUDGE_MESSAGE and "judge_model_options" in NO_JUDGE_MESSAGE
    assert result.cases[0].metrics["length"].status is Status.PASSED
    assert result.summary["judge/calls"] == 0


def test_a_judge_that_cannot_be_built_leaves_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # ADK configs name gemini-2.5-flash; without google-genai the metric says what to install.
    monkeypatch.setattr(resolve_module, "_sdk_installed", lambda module: False)
    metric = _judged(judge_model="gemini-2.5-flash")
    result = run([_evalset(1)], [metric, _Length()])
    judged = result.cases[0].metrics["yes_judged"]
    assert judged.status is Status.NOT_EVALUATED
    assert judged.explanation is not None
    assert "'gemini-2.5-flash' is not available" in judged.explanation
    assert "pip install -e '.[gemini]'" in judged.explanation
    assert result.cases[0].metrics["length"].status is Status.PASSED
    assert metric.no_judge_reason == NO_JUDGE_MESSAGE  # reset after the run


def test_metrics_may_name_their_own_judges() -> None:
    factory = _Factory()
    pool = JudgePool(default_model="openai:default", backend_factory=factory)
    metrics: list[Metric] = [
        _judged(judge_model="openai:special"),
        _judged(_OtherJudged),
    ]
    run_with_pool(pool, metrics)
    assert sorted(b.model for b in factory.backends) == ["openai:default", "openai:special"]


def test_failing_judge_calls_leave_the_error_text_and_the_run_goes_on() -> None:
    pool = JudgePool(default_model="openai:m", backend_factory=_Factory(fail=True))
    result = run_with_pool(pool, [_judged(), _Length()])
    judged = result.cases[0].metrics["yes_judged"]
    assert judged.score is None and judged.status is Status.NOT_EVALUATED
    assert "HTTP 401 invalid api key" in (judged.explanation or "")
    assert result.cases[0].metrics["length"].status is Status.PASSED
    assert result.summary["judge/errors"] == 3


def test_a_judge_attached_by_the_caller_is_kept() -> None:
    class Mine:
        async def generate(
            self,
            messages: Sequence[Mapping[str, Any]],
            n: int,
            settings: Mapping[str, Any],
            **_: Any,
        ) -> list[str]:
            return ["no"] * n

    metric = _judged()
    mine = Mine()
    metric.attach_judge(mine)
    result = run([_evalset(1)], [metric], judges=JudgeRunOptions(model="openai:m"))
    assert result.cases[0].metrics["yes_judged"].score == 0.0
    assert metric.judge is mine


def test_runs_without_judged_metrics_have_no_judge_keys() -> None:
    result = run([_evalset(1)], [_Length()], judges=JudgeRunOptions(model="openai:m"))
    assert not any(key.startswith("judge/") for key in result.summary)


def test_recorded_runs_keep_enough_cases_going_to_fill_the_judge_limit() -> None:
    class Gate:
        backend = "openai"
        model = "m"
        in_flight = 0
        peak = 0

        async def complete(self, messages: Any, settings: GenerationSettings) -> BackendReply:
            Gate.in_flight += 1
            Gate.peak = max(Gate.peak, Gate.in_flight)
            await asyncio.sleep(0.002)
            Gate.in_flight -= 1
            return BackendReply("yes")

        async def aclose(self) -> None:
            return None

    pool = JudgePool(
        default_model="openai:m", concurrency=6, backend_factory=lambda *a, **k: Gate()
    )

    async def go() -> None:
        await arun([_evalset(30)], [_judged()], judges=pool, options=RunOptions(concurrency=2))

    asyncio.run(go())
    # Case concurrency 2 would allow 2 calls at once; the judge limit of 6 is what binds.
    assert Gate.peak == 6


def test_judge_run_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        JudgeRunOptions(concurrency=0)
    with pytest.raises(ConfigError, match="positive"):
        JudgeRunOptions(timeout_s=0)
    with pytest.raises(ConfigError, match="unknown judge model"):
        run([_evalset(1)], [_judged()], judges=JudgeRunOptions(model="gpt-4o"))


REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"


def test_adk_default_judge_without_credentials_says_which_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from assay.api import evaluate

    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    # A real ADK config: two rubric judges on gemini-2.5-flash, ADK's default judge.
    config = REALWORLD / "adk" / "samples_rubric_criteria" / "eval_config.json"
    rows = [{"prompt": "Which lights are on in the kitchen?", "response": "The kitchen light."}]
    result = evaluate(rows, config=config)
    for name in ("rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1"):
        outcome = result.cases[0].metrics[name]
        assert outcome.status is Status.NOT_EVALUATED
        assert "'gemini-2.5-flash' is not available" in (outcome.explanation or "")
        assert "GEMINI_API_KEY" in (outcome.explanation or "")
    assert result.summary["judge/calls"] == 0


def test_two_runs_at_once_each_use_their_own_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    # One metric object shared by two concurrent runs whose judges are two real
    # stand-in servers: each run's cases must be judged by its own server only.
    from assay.testing.judge_server import JudgeServer, StandinReply

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    shared = _judged()
    cases = 6
    with (
        JudgeServer(StandinReply("yes", delay=0.02)) as server_a,
        JudgeServer(StandinReply("no", delay=0.02)) as server_b,
    ):

        async def both() -> tuple[Any, Any]:
            def one(model: str, server: JudgeServer) -> Any:
                return arun(
                    [_evalset(cases)],
                    [shared, _Length()],
                    judges=JudgeRunOptions(
                        model=model, base_url=server.openai_base_url, concurrency=2
                    ),
                )

            return await asyncio.gather(one("openai:a", server_a), one("openai:b", server_b))

        result_a, result_b = asyncio.run(both())
        models_a = {r.model for r in server_a.requests}
        models_b = {r.model for r in server_b.requests}
        assert (len(server_a.requests), len(server_b.requests)) == (cases, cases)
    assert [c.metrics["yes_judged"].score for c in result_a.cases] == [1.0] * cases
    assert [c.metrics["yes_judged"].score for c in result_b.cases] == [0.0] * cases
    assert models_a == {"a"} and models_b == {"b"}
    assert shared.judge is None  # neither run changed the metric
