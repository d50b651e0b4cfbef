"""Every model caller retries through `assay.models.policy.RetryPolicy`, once.

The OpenAI-tools agent used to leave retries to the OpenAI SDK and the HTTP agent had
its own loop; now both use the judges' policy, and the SDK tries each request once.
Were the SDK's retries still on, a failing request would be tried (1 + n) * (1 + n)
times, not 1 + n.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from assay.agents.http import HttpAgent
from assay.agents.openai_tools import OpenAIToolsAgent
from assay.core.cases import EvalCase, Turn, UserInput
from assay.errors import AgentError
from assay.models.policy import RetryPolicy
from assay.testing.judge_server import JudgeServer, StandinReply


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("unused") as running:
        yield running


def _agent(server: JudgeServer, retries: int) -> OpenAIToolsAgent:
    return OpenAIToolsAgent(
        "standin-model", base_url=server.openai_base_url, api_key="k", max_retries=retries
    )


async def _ask(agent: OpenAIToolsAgent) -> Turn:
    session = await agent.start_session(EvalCase(id="c"))
    try:
        return await session.send(UserInput(text="hi"))
    finally:
        await session.close()
        await agent.aclose()


def test_server_errors_are_retried_by_the_shared_policy(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[tuple[int, float | None]] = []

    def delay(self: RetryPolicy, attempt: int, retry_after: float | None = None) -> float:
        waits.append((attempt, retry_after))
        return 0.0

    monkeypatch.setattr(RetryPolicy, "delay", delay)
    busy = StandinReply(status=503, text="busy", retry_after=0.25)
    server.set_script([busy, busy, "back"])
    turn = asyncio.run(_ask(_agent(server, retries=2)))
    assert turn.final_response == "back"
    assert len(server.requests) == 3
    # The policy chose each wait, given the server's Retry-After.
    assert waits == [(1, 0.25), (2, 0.25)]


def test_retries_run_out_with_the_endpoints_error(server: JudgeServer) -> None:
    server.set_script(StandinReply(status=503, text="busy", retry_after=0))
    with pytest.raises(AgentError, match=r"answered HTTP 503: busy"):
        asyncio.run(_ask(_agent(server, retries=1)))
    assert len(server.requests) == 2
    with pytest.raises(AgentError, match=r"answered HTTP 503"):
        asyncio.run(_ask(_agent(server, retries=0)))
    assert len(server.requests) == 3  # no retries: one more request, the SDK adds none


def test_a_client_error_is_not_retried(server: JudgeServer) -> None:
    server.set_script(StandinReply(status=400, text="model not found"))
    with pytest.raises(AgentError, match="model not found"):
        asyncio.run(_ask(_agent(server, retries=3)))
    assert len(server.requests) == 1


def test_negative_retries_are_refused_naming_the_agent(server: JudgeServer) -> None:
    with pytest.raises(AgentError, match=r"max_retries must be 0 or more, got -1"):
        _agent(server, retries=-1)
    with pytest.raises(AgentError, match=r"HTTP agent http://127\.0\.0\.1:9/.*max_retries"):
        HttpAgent("http://127.0.0.1:9/", max_retries=-1)
