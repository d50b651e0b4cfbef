"""The OpenAI-compatible backend through the real `openai` SDK against the stand-in.

Also covers the error-mapping helpers all backends share (assay.models.backends).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import openai
import pytest

import assay.models.backends as backends
from assay.errors import ConfigError
from assay.models.backends import retry_after_seconds, split_system
from assay.models.backends.openai_compat import OpenAICompatBackend, create_backend
from assay.models.resolve import make_backend
from assay.models.types import GenerationSettings
from assay.models.types import ModelCallError as JudgeCallError
from assay.testing import JudgeServer, StandinReply

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["valid", "invalid"]}},
    "required": ["verdict"],
}
MESSAGES = [
    {"role": "system", "content": "You judge answers."},
    {"role": "user", "content": "Is 'Paris' the capital of France?"},
]


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test on both transports: aiohttp's (the fast path) and httpx's own (what
    an SDK installed without httpx-aiohttp uses), which must behave the same."""
    if request.param == "httpx":
        without_aiohttp(monkeypatch)
    return str(request.param)


def without_aiohttp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK as installed without its aiohttp extra: its client refuses to be built."""

    def unavailable(**_kwargs: object) -> None:
        raise RuntimeError(
            "To use the aiohttp client you must have installed the package with the `aiohttp` extra"
        )

    monkeypatch.setattr(openai, "DefaultAioHttpClient", unavailable)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer('{"verdict": "valid"}') as running:
        yield running


def backend_for(server: JudgeServer, timeout_s: float = 10.0) -> OpenAICompatBackend:
    return OpenAICompatBackend("judge-m", base_url=server.openai_base_url, timeout_s=timeout_s)


async def failure(server: JudgeServer, reply: StandinReply, **kw: float) -> JudgeCallError:
    server.set_script(reply)
    backend = backend_for(server, **kw)
    try:
        with pytest.raises(JudgeCallError) as info:
            await backend.complete(MESSAGES, GenerationSettings())
    finally:
        await backend.aclose()
    return info.value


async def test_a_reply_with_its_tokens_and_the_request_the_server_saw(
    server: JudgeServer,
) -> None:
    server.set_script(StandinReply('{"verdict": "valid"}', input_tokens=42, output_tokens=5))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings(temperature=0.7, max_tokens=50))
    await backend.aclose()
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ('{"verdict": "valid"}', 42, 5)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "judge-m"
    assert [dict(m) for m in request.messages] == MESSAGES
    assert request.temperature == 0.7
    # a self-hosted endpoint gets the classic field name
    assert request.body["max_tokens"] == 50
    assert "response_format" not in request.body
    assert request.body.get("n") is None  # one sample per call
    assert request.headers["authorization"] == "Bearer assay-no-key"
    assert not server.errors


async def test_the_prompt_cache_tokens_openai_reports_are_kept(server: JudgeServer) -> None:
    server.set_script(StandinReply('{"verdict": "valid"}', input_tokens=1500, cached_tokens=1024))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert (reply.input_tokens, reply.cached_tokens) == (1500, 1024)
    # OpenAI caches a prompt's prefix by itself: the shared instructions go first
    assert server.requests[0].body["messages"][0] == MESSAGES[0]


async def test_json_schema_is_sent_as_response_format(server: JudgeServer) -> None:
    backend = backend_for(server)
    await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    await backend.aclose()
    (request,) = server.requests
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judgement", "schema": SCHEMA},
    }
    assert request.json_schema == SCHEMA


async def test_an_endpoint_rejecting_structured_output_gets_plain_text_from_then_on(
    server: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.set_script(
        lambda r: (
            StandinReply("response_format is not supported", status=400)
            if r.json_schema is not None
            else "valid"
        )
    )
    backend = backend_for(server)
    with caplog.at_level(logging.WARNING, logger="assay.models.backends"):
        first = await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
        second = await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    await backend.aclose()
    assert first.text == second.text == "valid"
    assert [r.json_schema is not None for r in server.requests] == [True, False, False]
    assert "plain text" in caplog.text


async def test_a_plain_400_is_not_retryable_and_keeps_structured_output(
    server: JudgeServer,
) -> None:
    server.set_script(StandinReply("context length exceeded", status=400))
    backend = backend_for(server)
    with pytest.raises(JudgeCallError) as info:
        await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    server.set_script("valid")
    await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    await backend.aclose()
    assert not info.value.retryable
    assert info.value.status == 400
    assert "context length exceeded" in info.value.message
    # the schema was dropped once to check, and asked for again afterwards
    assert [r.json_schema is not None for r in server.requests] == [True, False, True]


async def test_429_is_retryable_with_the_servers_retry_after(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.rate_limited(retry_after=2.5, message="slow down"))
    assert error.retryable and error.overloaded
    assert error.status == 429
    assert error.retry_after == 2.5
    assert "slow down" in error.message
    assert len(server.requests) == 1  # the SDK's own retries are off


async def test_retry_after_ms_header_wins(server: JudgeServer) -> None:
    reply = StandinReply(status=429, headers={"retry-after-ms": "1500", "Retry-After": "9"})
    error = await failure(server, reply)
    assert error.retry_after == 1.5


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_are_retryable(server: JudgeServer, status: int) -> None:
    error = await failure(server, StandinReply.server_error(status, "model crashed"))
    assert error.retryable and error.status == status
    assert error.retry_after is None
    assert "model crashed" in error.message


async def test_auth_errors_are_not_retryable(server: JudgeServer) -> None:
    error = await failure(server, StandinReply("invalid api key", status=401))
    assert not error.retryable and error.status == 401


async def test_a_garbage_body_is_a_retryable_error_saying_so(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.garbage("<html>bad gateway"))
    assert error.retryable and error.status is None
    assert "not a valid response" in error.message


async def test_json_of_the_wrong_shape_is_a_retryable_error(server: JudgeServer) -> None:
    error = await failure(server, StandinReply(raw_body='{"unexpected": true}'))
    assert error.retryable
    assert "no choices" in error.message


async def test_an_empty_answer_is_not_retryable(server: JudgeServer) -> None:
    error = await failure(server, StandinReply(""))
    assert not error.retryable
    assert "no text" in error.message and "finish_reason stop" in error.message


async def test_a_slow_reply_past_the_sdk_timeout_is_a_retryable_timeout(
    server: JudgeServer,
) -> None:
    error = await failure(server, StandinReply("late", delay=30), timeout_s=0.2)
    assert error.retryable and error.status is None
    assert "0.2s request timeout" in error.message


async def test_an_unreachable_endpoint_is_a_retryable_connection_error() -> None:
    with JudgeServer("x") as gone:
        url = gone.openai_base_url
    backend = OpenAICompatBackend("judge-m", base_url=url, timeout_s=5)
    with pytest.raises(JudgeCallError) as info:
        await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert info.value.retryable
    assert "cannot reach" in info.value.message


async def test_environment_variables_choose_endpoint_and_key(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    backend = create_backend("env-model", timeout_s=5)
    reply = await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert reply.text == '{"verdict": "valid"}'
    (request,) = server.requests
    assert request.model == "env-model"
    assert request.headers["authorization"] == "Bearer sk-test-123"


async def test_make_backend_builds_it_from_the_model_string(server: JudgeServer) -> None:
    # without /v1 works too
    backend = make_backend("openai:stand-in", base_url=server.base_url, timeout_s=5)
    assert isinstance(backend, OpenAICompatBackend)
    assert (backend.backend, backend.model) == ("openai", "stand-in")
    assert (await backend.complete(MESSAGES, GenerationSettings())).text
    await backend.aclose()
    assert server.requests[0].model == "stand-in"


def test_openai_itself_without_a_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAICompatBackend("gpt-4o-mini")


def test_openai_itself_is_asked_for_max_completion_tokens() -> None:
    # OpenAI's reasoning models refuse max_tokens; self-hosted servers know only it
    # (the request the stand-in saw above carried max_tokens).
    backend = OpenAICompatBackend("gpt-x", base_url="https://api.openai.com/v1", api_key="k")
    assert backend._max_tokens_field == "max_completion_tokens"


# -- helpers every backend shares --------------------------------------------------------


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "4"}) == 4.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "750"}) == 0.75
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({"Retry-After": "-3"}) is None
    assert retry_after_seconds({}) is None
    assert retry_after_seconds(None) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    waited = retry_after_seconds({"Retry-After": later})
    assert waited is not None and 100 < waited <= 120
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=60), usegmt=True)
    assert retry_after_seconds({"Retry-After": earlier}) == 0.0


def test_split_system_joins_system_parts_and_keeps_turns() -> None:
    system, turns = split_system(
        [
            {"role": "system", "content": "a"},
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "system", "content": "b"},
            {"role": "user", "content": "q2"},
        ]
    )
    assert system == "a\n\nb"
    assert turns == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]


async def test_calls_in_flight_share_one_aiohttp_pool_or_are_spread_over_httpx_pools(
    server: JudgeServer, transport: str
) -> None:
    # aiohttp's pool holds the 32 connections of 32 calls in flight; httpcore's pool
    # checks each of its connections on every request it assigns, so without aiohttp
    # the calls are spread over the backend's clients, 4 connections each.
    release = threading.Event()
    server.set_script(StandinReply('{"verdict": "valid"}', hold=release))
    backend = backend_for(server)
    calls = [
        asyncio.ensure_future(backend.complete(MESSAGES, GenerationSettings())) for _ in range(32)
    ]
    try:
        while server.in_flight < 32:
            await asyncio.sleep(0.01)
        transports = [client._client._transport for client in backend._shards]
        if transport == "aiohttp":
            pools = [len(t.client.connector._acquired) for t in transports]
        else:
            pools = [len(t._pool.connections) for t in transports]
    finally:
        release.set()
        replies = await asyncio.gather(*calls)
        await backend.aclose()
    assert {type(t).__name__ for t in transports} == {
        "AiohttpTransport" if transport == "aiohttp" else "AsyncHTTPTransport"
    }
    assert sum(pools) == 32
    assert len(pools) == (1 if transport == "aiohttp" else 8)
    assert max(pools) == 32 // len(pools)
    assert {r.text for r in replies} == {'{"verdict": "valid"}'}


async def test_without_httpx_aiohttp_a_warning_says_calls_cost_more(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    without_aiohttp(monkeypatch)
    monkeypatch.setattr(backends, "_warned_no_aiohttp", False)
    with caplog.at_level(logging.WARNING, logger="assay.models.backends"):
        first, second = backend_for(server), backend_for(server)
    await first.aclose()
    await second.aclose()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, warnings  # once per process, not per judge
    assert "httpx's own transport" in warnings[0]
    assert "assay[openai]" in warnings[0]
