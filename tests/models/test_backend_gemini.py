"""The Gemini backend through the real `google-genai` SDK against the stand-in."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from assay.errors import ConfigError
from assay.models.backends.gemini import GeminiBackend, create_backend
from assay.models.resolve import make_backend
from assay.models.types import GenerationSettings
from assay.models.types import ModelCallError as JudgeCallError
from assay.testing import JudgeServer, StandinReply
from standin_judge import clear_google_environment

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4}},
    "required": ["score"],
}
MESSAGES = [
    {"role": "system", "content": "You rate similarity from 0 to 4."},
    {"role": "user", "content": "Reference: Paris. Answer: Paris, France."},
    {"role": "assistant", "content": '{"score": 4}'},
    {"role": "user", "content": "Again, as JSON."},
]
MODEL = "gemini-2.5-flash"


@pytest.fixture(autouse=True)
def _no_google_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_google_environment(monkeypatch)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer('{"score": 4}') as running:
        yield running


def backend_for(server: JudgeServer, timeout_s: float = 10.0) -> GeminiBackend:
    return GeminiBackend(MODEL, base_url=server.base_url, timeout_s=timeout_s)


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
    server.set_script(StandinReply('{"score": 3}', input_tokens=30, output_tokens=4))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings(temperature=0.2, max_tokens=40))
    await backend.aclose()
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ('{"score": 3}', 30, 4)
    (request,) = server.requests
    assert request.dialect == "gemini"
    assert request.model == MODEL
    assert request.path.endswith(f"/models/{MODEL}:generateContent")
    assert request.system == "You rate similarity from 0 to 4."
    # the conversation keeps its turns; the assistant's turn is Gemini's "model" role
    assert [c["role"] for c in request.body["contents"]] == ["user", "model", "user"]
    assert request.user == "Again, as JSON."
    assert (request.temperature, request.max_tokens) == (0.2, 40)
    assert request.json_schema is None
    assert request.headers["x-goog-api-key"] == "assay-no-key"
    assert not server.errors


async def test_json_schema_is_sent_as_a_json_response_schema(server: JudgeServer) -> None:
    backend = backend_for(server)
    await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
    await backend.aclose()
    (request,) = server.requests
    config = request.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert request.json_schema == SCHEMA


async def test_a_model_rejecting_the_schema_gets_plain_text_from_then_on(
    server: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.set_script(
        lambda r: (
            StandinReply("responseJsonSchema is not supported", status=400)
            if r.json_schema is not None
            else '{"score": 2}'
        )
    )
    backend = backend_for(server)
    with caplog.at_level(logging.WARNING, logger="assay.models.backends"):
        for _ in range(2):
            reply = await backend.complete(MESSAGES, GenerationSettings(json_schema=SCHEMA))
            assert reply.text == '{"score": 2}'
    await backend.aclose()
    assert [r.json_schema is not None for r in server.requests] == [True, False, False]
    assert "gemini judge" in caplog.text


async def test_thinking_parts_are_left_out_and_thinking_tokens_counted(
    server: JudgeServer,
) -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Let me compare the two answers...", "thought": True},
                        {"text": '{"score": 1}'},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 12,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 20,
        },
    }
    server.set_script(StandinReply(raw_body=json.dumps(body)))
    backend = backend_for(server)
    reply = await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ('{"score": 1}', 12, 25)


async def test_a_blocked_prompt_is_not_retryable(server: JudgeServer) -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "unsafe"}}
    error = await failure(server, StandinReply(raw_body=json.dumps(body)))
    assert not error.retryable
    assert "prompt blocked" in error.message and "SAFETY" in error.message


async def test_an_empty_candidate_is_not_retryable(server: JudgeServer) -> None:
    body = {
        "candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MAX_TOKENS"}]
    }
    error = await failure(server, StandinReply(raw_body=json.dumps(body)))
    assert not error.retryable
    assert "MAX_TOKENS" in error.message


async def test_429_is_retryable_with_the_servers_retry_after(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.rate_limited(retry_after=7, message="quota"))
    assert error.retryable and error.overloaded
    assert (error.status, error.retry_after) == (429, 7.0)
    assert "quota" in error.message
    assert len(server.requests) == 1  # the SDK's own retries are off


@pytest.mark.parametrize("status", [500, 503, 504])
async def test_server_errors_are_retryable(server: JudgeServer, status: int) -> None:
    error = await failure(server, StandinReply.server_error(status, "backend hiccup"))
    assert error.retryable and error.status == status
    assert "backend hiccup" in error.message
    assert len(server.requests) == 1


async def test_a_bad_request_is_not_retryable(server: JudgeServer) -> None:
    error = await failure(server, StandinReply("API key not valid", status=400))
    assert not error.retryable and error.status == 400
    assert "API key not valid" in error.message


async def test_a_garbage_body_is_a_retryable_error_saying_so(server: JudgeServer) -> None:
    error = await failure(server, StandinReply.garbage("<html>oops"))
    assert error.retryable and error.status is None
    assert "not a valid response" in error.message


async def test_an_empty_json_body_is_a_retryable_error(server: JudgeServer) -> None:
    error = await failure(server, StandinReply(raw_body="{}"))
    assert error.retryable
    assert "no candidates" in error.message


async def test_a_slow_reply_past_the_sdk_timeout_is_a_retryable_timeout(
    server: JudgeServer,
) -> None:
    error = await failure(server, StandinReply("late", delay=30), timeout_s=0.2)
    assert error.retryable and error.status is None
    assert "0.2s request timeout" in error.message


async def test_an_unreachable_endpoint_is_a_retryable_connection_error() -> None:
    with JudgeServer("x") as gone:
        url = gone.base_url
    backend = GeminiBackend(MODEL, base_url=url, timeout_s=5)
    with pytest.raises(JudgeCallError) as info:
        await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert info.value.retryable
    assert "cannot reach" in info.value.message


async def test_the_api_key_comes_from_the_environment(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gm-key-1")
    backend = create_backend("gemini-2.0-flash", base_url=server.base_url, timeout_s=5)
    await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    (request,) = server.requests
    assert request.headers["x-goog-api-key"] == "gm-key-1"
    assert request.model == "gemini-2.0-flash"


@pytest.mark.parametrize("model", [MODEL, "gemini:gemini-2.5-pro"])
async def test_make_backend_builds_it_from_adk_style_names(server: JudgeServer, model: str) -> None:
    backend = make_backend(model, base_url=server.base_url, timeout_s=5)
    assert isinstance(backend, GeminiBackend)
    assert backend.backend == "gemini"
    assert (await backend.complete(MESSAGES, GenerationSettings())).text == '{"score": 4}'
    await backend.aclose()
    assert server.requests[0].model == model.removeprefix("gemini:")


def test_no_credentials_is_a_config_error_naming_the_variables() -> None:
    with pytest.raises(ConfigError, match="GEMINI_API_KEY") as info:
        GeminiBackend(MODEL)
    assert "GOOGLE_GENAI_USE_VERTEXAI" in str(info.value)


async def test_vertex_without_application_credentials_fails_plainly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    # point application-default credentials at nothing, whatever this machine has
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
    # without a project the SDK looks for credentials at once
    with pytest.raises(ConfigError, match="cannot set up the Gemini client"):
        GeminiBackend(MODEL)
    # with one it looks at the first call
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    backend = GeminiBackend(MODEL, timeout_s=5)
    with pytest.raises(JudgeCallError, match="Google authentication failed") as info:
        await backend.complete(MESSAGES, GenerationSettings())
    await backend.aclose()
    assert not info.value.retryable
