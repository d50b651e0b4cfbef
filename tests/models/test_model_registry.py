"""One registry of rate limits and retries per run (`assay.models.registry`).

Judges, the simulated user and the agents calling one endpoint in a run share its
limiter: a 429 answered to any of them slows all of them. Two runs share nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from assay.agents.callable import CallableAgent
from assay.agents.openai_tools import OpenAIToolsAgent
from assay.core import Score
from assay.core.cases import EvalCase, EvalSet, Scenario, Turn, UserInput
from assay.engine.judging import JudgeRunOptions
from assay.engine.runner import arun
from assay.judges.client import JudgePool
from assay.judges.types import JudgeModelOptions
from assay.metrics.judged.base import JudgeClient, JudgedMetric, JudgedOptions
from assay.models.registry import ModelRegistry, current_registry, registry_in_context
from assay.simulation import SimulatorOptions, UserSimulator
from assay.testing.judge_server import JudgeServer, StandinReply

SLOW_DOWN = StandinReply(status=429, text="slow down", retry_after=0)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("unused") as running:
        yield running


def test_one_pacing_per_provider_and_endpoint() -> None:
    registry = ModelRegistry(concurrency=8, max_retries=3)
    first = registry.pacing("openai", "http://a/v1/")
    assert registry.pacing("openai", "http://a/v1/") is first
    assert registry.pacing("openai", "http://b/v1/") is not first
    assert registry.pacing("gemini", "http://a/v1/") is not first
    # A caller asking for fewer calls in flight lowers the bound for every caller.
    assert registry.pacing("openai", "http://a/v1/", concurrency=3).limiter is first.limiter
    assert first.limiter.max_limit == 3 and first.limiter.limit == 3
    registry.pacing("openai", "http://a/v1/", concurrency=50)
    assert first.limiter.max_limit == 3  # never raised by a looser caller
    # Each caller keeps its own number of retries over the endpoint's back-off.
    assert first.with_retries(None) is first.retry
    own = first.with_retries(1)
    assert own.max_retries == 1 and own.rng is first.retry.rng
    assert ModelRegistry(concurrency=2).pacing("x", "").limiter is not first.limiter


async def test_judge_simulated_user_and_agent_of_one_endpoint_share_its_limiter(
    server: JudgeServer,
) -> None:
    registry = ModelRegistry()
    url = server.openai_base_url
    pool = JudgePool(default_model="openai:judge", concurrency=8, registry=registry)
    judge = pool.judge("openai:judge", JudgeModelOptions(base_url=url))
    assert judge.limiter.limit == 8
    simulator = UserSimulator(
        SimulatorOptions(model="openai:user", base_url=url, max_retries=2), registry=registry
    )
    agent = OpenAIToolsAgent("agent-model", base_url=url, api_key="k", max_retries=2)
    try:
        assert simulator.client.limiter is judge.limiter
        # The simulated user meets a 429: the judge's limit halves with it.
        server.set_script([SLOW_DOWN, "I would like a table"])
        move = await simulator.next_message(Scenario(task="book a table"), None, [])
        assert move.text == "I would like a table"
        assert judge.limiter.limit == 4 and judge.limiter.decreases == 1
        # The agent, called in this run, meets one too: everyone's limit halves again.
        server.set_script([SLOW_DOWN, "Which day?"])
        with registry_in_context(registry):
            reply, _ = await agent.complete([{"role": "user", "content": "a table"}])
        assert reply.content == "Which day?"
        assert judge.limiter.limit == 2 and simulator.client.limiter.limit == 2
        assert len(registry.endpoints) == 1
        # The judge's calls now wait on that shared, lowered limit.
        server.set_script("fine")
        assert await judge.generate([{"role": "user", "content": "rate"}], 1) == ["fine"]
    finally:
        await agent.aclose()
        await simulator.aclose()
        await pool.aclose()


class _SaysYes(JudgedMetric):
    """1 when the judge answers "yes" about the response."""

    name: ClassVar[str] = "says_yes"
    default_threshold = 0.5

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        replies = await judge.generate([{"role": "user", "content": "ok?"}], 1, {})
        return Score(1.0 if replies == ["yes"] else 0.0)


async def test_in_one_run_a_429_to_the_agent_slows_the_judges(server: JudgeServer) -> None:
    url = server.openai_base_url
    agent = OpenAIToolsAgent("agent-model", base_url=url, api_key="k", max_retries=2)
    # The pool carries the run's registry: the run's agent finds it in the context.
    pool = JudgePool(default_model="openai:judge", default_base_url=url, concurrency=8)
    server.set_script([SLOW_DOWN, "hello", "yes"])
    metric = _SaysYes(JudgedOptions(judge_model_options=JudgeModelOptions()))
    try:
        result = await arun([EvalSet(id="s", cases=[_case("c1")])], [metric], agent=agent,
                            judges=pool)  # fmt: skip
    finally:
        await agent.aclose()
        await pool.aclose()
    assert result.cases[0].metrics["says_yes"].score == 1.0
    assert [r.model for r in server.requests] == ["agent-model", "agent-model", "judge"]
    (judge,) = pool.judges
    assert pool.limiters == {("openai", judge.endpoint): judge.limiter}
    assert judge.limiter.decreases == 1 and judge.limiter.limit == 4  # the agent's 429


def _case(case_id: str) -> EvalCase:
    return EvalCase(id=case_id, reference=[Turn(user_input=UserInput(text="hello"))])


async def test_two_runs_at_once_do_not_share_their_pacing(server: JudgeServer) -> None:
    url = server.openai_base_url
    model_agent = OpenAIToolsAgent("agent-model", base_url=url, api_key="k", max_retries=1)
    seen: dict[str, list[ModelRegistry | None]] = {"a": [], "b": []}
    both_started = asyncio.Barrier(2)

    def agent_of(run: str, calls_model: bool) -> CallableAgent:
        async def answer(prompt: str) -> str:
            seen[run].append(current_registry())
            if len(seen[run]) == 1:
                await both_started.wait()  # the two runs are going at the same time
            if calls_model:
                reply, _ = await model_agent.complete([{"role": "user", "content": prompt}])
                return str(reply.content)
            return "hi"

        return CallableAgent(answer, name=run)

    server.set_script([SLOW_DOWN, "hi", "hi"])
    judges = JudgeRunOptions(concurrency=8)
    runs: list[Any] = [
        arun([EvalSet(id=run, cases=[_case("c1"), _case("c2")])], [], agent=agent, judges=judges)
        for run, agent in (("a", agent_of("a", True)), ("b", agent_of("b", False)))
    ]
    try:
        first, second = await asyncio.gather(*runs)
    finally:
        await model_agent.aclose()
    assert [case.error for case in (*first.cases, *second.cases)] == [None] * 4
    (registry_a,), (registry_b,) = set(seen["a"]), set(seen["b"])  # one per run
    assert registry_a is not None and registry_b is not None and registry_a is not registry_b
    # Run a's agent met the 429 and slowed its endpoint; run b never paced that endpoint.
    assert registry_a.pacing("openai", str(url).rstrip("/") + "/").limiter.decreases == 1
    assert registry_b.endpoints == []
    assert current_registry() is None  # the runs' contexts did not leak out
