"""The Anthropic backend through the real `anthropic` SDK against the stand-in."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import anthropic
import pytest

from assay.errors import ConfigError
from assay.models.backends.anthropic import (
    DEFAULT_MAX_TOKENS,
    AnthropicBackend,
    closed_objects,
    create_backend,
)
from assay.models.resolve import make_backend
from assay.models.types import GenerationSettings
from assay.models.types import ModelCallError as JudgeCallError
from assay.testing import JudgeServer, StandinReply

SCHEMA = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"verdict": {"type": "string"}}},
        },
    },
    "required": ["rationale"],
}
MESSAGES = [
    {"role": "system", "content": "You check rubric items."},
    {"role": "user", "content": "Rubric: mentions Paris. Answer: Paris."},
]


@pytest.fixture(autouse=True)
def _no_anthropic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test on both transports: aiohttp's (the fast path) and httpx's own (what
    an SDK installed without httpx-aiohttp uses), which must behave the same."""
    if request.param == "httpx":

        def unavailable(**_kwargs: object) -> None:
            raise RuntimeError("the aiohttp client needs the SDK's `aiohttp` extra")

        monkeypatch.setattr(anthropic, "DefaultAioHttpClient", unavailable)
    return str(request.param)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer('{"rationale": "ok"}') as running:
        yield running


def backend_for(server: JudgeServer, timeout_s: float = 10.0) -> AnthropicBackend:
    return AnthropicBackend("claude-judge", base_url=server.base_url, timeout_s=timeout_s)


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
    server.set_script(StandinReply("yes", input_tokens=21, output_tokens=1))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings(temperature=0.9))
    await backend.aclose()
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ("yes", 21, 1)
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.model == "claude-judge"
    # the system prompt is the top-level field, not a message, marked for the prompt
    # cache: it is the prefix every call of a metric shares (issue #38)
    assert request.body["system"] == [
        {"type": "text", "text": "You check rubric items.", "cache_control": {"type": "ephemeral"}}
    ]
    assert request.system == "You check rubric items."
    assert request.body["messages"] == [
        {"role": "user", "content": "Rubric: mentions Paris. Answer: Paris."}
    ]
    # max_tokens is required by the API: a default is always sent
    assert request.max_tokens == DEFAULT_MAX_TOKENS
    # the API version SDK 2.x speaks refuses sampling parameters
    assert "temperature" not in request.body
    assert "output_config" not in request.body
    assert not server.errors


async def test_max_tokens_setting_is_sent(server: JudgeServer) -> None:
    backend = backend_for(server)
    await backend.complete(MESSAGES, GenerationSettings(max_tokens=300))
    await backend.aclose()
    assert server.requests[0].max_tokens == 300


async def test_json_schema_is_sent_as_output_format_with_closed_objects(
    server: JudgeServer,
) -> None:
    backend = backend_for(server)
    await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    await backend.aclose()
    (request,) = server.requests
    fmt = request.body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"] == closed_objects(SCHEMA)
    assert fmt["schema"]["additionalProperties"] is False
    assert fmt["schema"]["properties"]["items"]["items"]["additionalProperties"] is False


def test_closed_objects_keeps_explicit_choices_and_leaves_the_input_alone() -> None:
    schema = {"type": "object", "additionalProperties": True, "properties": {}}
    assert closed_objects(schema) == schema
    closed = closed_objects(SCHEMA)
    assert "additionalProperties" not in SCHEMA
    assert closed["properties"]["rationale"] == {"type": "string"}


async def test_a_model_rejecting_structured_output_gets_plain_text_from_then_on(
    server: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.set_script(
        lambda r: (
            StandinReply("output_config: not supported by this model", status=400)
            if r.json_schema is not None
            else "plain"
        )
    )
    backend = backend_for(server)
    with caplog.at_level(logging.WARNING, logger="assay.models.backends"):
        for _ in range(2):
            reply = await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
            assert reply.text == "plain"
    await backend.aclose()
    assert [r.json_schema is not None for r in server.requests] == [True, False, False]
    assert "anthropic judge" in caplog.text


async def test_text_blocks_are_joined_and_cached_tokens_counted(server: JudgeServer) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-judge",
        "content": [{"type": "text", "text": '{"rationale": '}, {"type": "text", "text": '"ok"}'}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000,
            "output_tokens": 6,
        },
    }
    server.set_script(StandinReply(raw_body=json.dumps(body)))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ('{"rationale": "ok"}', 1110, 6)
    assert reply.cached_tokens == 1000


async def test_a_refusal_is_not_retryable(server: JudgeServer) -> None:
    body = {
        "type": "message",
        "role": "assistant",
        "model": "claude-judge",
        "content": [],
        "stop_reason": "refusal",
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }
    error = await failure(server, StandinReply(raw_body=json.dumps(body)))
    assert not error.retryable
    assert "refusal" in error.message


async def test_429_is_retryable_with_the_servers_retry_after(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.rate_limited(retry_after=12, message="tpm"))
    assert error.retryable and error.overloaded
    assert (error.status, error.retry_after) == (429, 12.0)
    assert "tpm" in error.message
    assert len(server.requests) == 1  # the SDK's own retries are off


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_and_overload_are_retryable(server: JudgeServer, status: int) -> None:
    error = await failure(server, StandinReply.server_error(status, "Overloaded"))
    assert error.retryable and error.overloaded
    assert error.status == status
    assert "Overloaded" in error.message


async def test_a_missing_model_is_not_retryable(server: JudgeServer) -> None:
    error = await failure(server, StandinReply("model: claude-judge", status=404))
    assert not error.retryable and error.status == 404


async def test_a_garbage_body_is_a_retryable_error_saying_so(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.garbage())
    assert error.retryable and error.status is None
    assert "not a valid response" in error.message


async def test_json_of_the_wrong_shape_is_a_retryable_error(server: JudgeServer) -> None:
    error = await failure(server, StandinReply(raw_body='{"completion": "old API"}'))
    assert error.retryable
    assert "no content" in error.message


async def test_a_slow_reply_past_the_sdk_timeout_is_a_retryable_timeout(
    server: JudgeServer,
) -> None:
    error = await failure(server, StandinReply("late", delay=30), timeout_s=0.2)
    assert error.retryable and error.status is None
    assert "0.2s request timeout" in error.message


async def test_an_unreachable_endpoint_is_a_retryable_connection_error() -> None:
    with JudgeServer("x") as gone:
        url = gone.base_url
    backend = AnthropicBackend("claude-judge", base_url=url, timeout_s=5)
    with pytest.raises(JudgeCallError) as info:
        await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert info.value.retryable
    assert "cannot reach" in info.value.message


async def test_key_and_endpoint_from_the_environment(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    backend = create_backend("claude-env", timeout_s=5)
    await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    (request,) = server.requests
    assert request.model == "claude-env"
    sent = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert sent.endswith("sk-ant-test")


async def test_make_backend_builds_it_from_the_model_string(server: JudgeServer) -> None:
    backend = make_backend("anthropic:claude-judge", base_url=server.base_url, timeout_s=5)
    assert isinstance(backend, AnthropicBackend)
    assert backend.backend == "anthropic"
    assert (await backend.complete(MESSAGES, GenerationSettings())).text == '{"rationale": "ok"}'
    await backend.aclose()


def test_no_key_for_anthropic_itself_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicBackend("claude-judge")


async def test_calls_go_through_the_transport_chosen(server: JudgeServer, transport: str) -> None:
    backend = backend_for(server)
    try:
        reply = await backend.complete(MESSAGES, GenerationSettings())
        used = type(backend._client._client._transport).__name__
    finally:
        await backend.aclose()
    assert reply.text == '{"rationale": "ok"}'
    assert used == ("AiohttpTransport" if transport == "aiohttp" else "AsyncHTTPTransport")
