"""The judge stand-in server, spoken to over raw HTTP (no SDK) in its three dialects."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from assay.testing import JudgeServer, StandinReply, StandinRequest
from assay.testing.judge_server import StandinToolCall, load_script

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}

OPENAI_BODY: dict[str, Any] = {
    "model": "judge-m",
    "messages": [
        {"role": "system", "content": "You grade answers."},
        {"role": "user", "content": [{"type": "text", "text": "Is 2+2=4 right?"}]},
    ],
    "temperature": 0.5,
    "max_tokens": 64,
    "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
}
GEMINI_BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "first question"}]},
        {"role": "model", "parts": [{"text": "an earlier answer"}]},
        {"role": "user", "parts": [{"text": "Is 2+2=4 right?"}]},
    ],
    "systemInstruction": {"parts": [{"text": "You grade answers."}]},
    "generationConfig": {
        "temperature": 0.0,
        "maxOutputTokens": 32,
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
    },
}
ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 128,
    "system": "You grade answers.",
    "messages": [{"role": "user", "content": "Is 2+2=4 right?"}],
    "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
}
GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
ROUTES = {
    "openai": ("/v1/chat/completions", OPENAI_BODY),
    "gemini": (GEMINI_PATH, GEMINI_BODY),
    "anthropic": ("/v1/messages", ANTHROPIC_BODY),
}


# One client for the module: building an httpx client (its TLS context) per request
# would dominate the run time.
_HTTP = httpx.Client(timeout=10, limits=httpx.Limits(max_connections=100))


@pytest.fixture(scope="module", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    _HTTP.close()


def post(server: JudgeServer, path: str, body: Any) -> httpx.Response:
    return _HTTP.post(server.base_url + path, json=body)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("ok") as running:
        yield running


def test_openai_request_is_normalised_and_answered_with_usage(server: JudgeServer) -> None:
    server.set_script(StandinReply('{"verdict": "yes"}', input_tokens=11, output_tokens=3))
    reply = post(server, "/v1/chat/completions", OPENAI_BODY)
    assert reply.status_code == 200
    body = reply.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "judge-m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": '{"verdict": "yes"}'}
    assert body["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    (request,) = server.requests
    assert request.dialect == "openai"
    assert request.model == "judge-m"
    assert request.system == "You grade answers."
    assert request.user == "Is 2+2=4 right?"
    assert request.json_schema == SCHEMA
    assert (request.temperature, request.max_tokens) == (0.5, 64)
    assert request.headers["content-type"] == "application/json"
    assert not server.errors


def test_openai_path_without_v1_and_n_choices(server: JudgeServer) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "two words"}], "n": 3}
    reply = post(server, "/chat/completions", body).json()
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2]
    assert {c["message"]["content"] for c in reply["choices"]} == {"ok"}
    # default token counts are whitespace words of the prompt and of the reply
    assert reply["usage"]["prompt_tokens"] == 2
    assert reply["usage"]["completion_tokens"] == 1


def test_gemini_request_is_normalised_and_answered(server: JudgeServer) -> None:
    server.set_script(StandinReply("valid", input_tokens=7, output_tokens=1))
    body = post(server, GEMINI_PATH, GEMINI_BODY).json()
    assert body["candidates"][0]["content"] == {"role": "model", "parts": [{"text": "valid"}]}
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"]["promptTokenCount"] == 7
    assert body["usageMetadata"]["candidatesTokenCount"] == 1
    (request,) = server.requests
    assert request.dialect == "gemini"
    assert request.model == "gemini-2.5-flash"
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "user"]
    assert request.json_schema == SCHEMA
    assert (request.temperature, request.max_tokens) == (0.0, 32)


def test_gemini_openapi_response_schema_is_seen_too(server: JudgeServer) -> None:
    body = {**GEMINI_BODY, "generationConfig": {"responseSchema": {"type": "OBJECT"}}}
    assert post(server, GEMINI_PATH, body).status_code == 200
    assert server.requests[0].json_schema == {"type": "OBJECT"}


def test_anthropic_request_is_normalised_and_answered(server: JudgeServer) -> None:
    server.set_script(StandinReply("fine", input_tokens=5, output_tokens=1))
    body = post(server, "/v1/messages", ANTHROPIC_BODY).json()
    assert body["type"] == "message"
    assert body["content"] == [{"type": "text", "text": "fine"}]
    assert body["usage"] == {"input_tokens": 5, "output_tokens": 1}
    (request,) = server.requests
    assert request.dialect == "anthropic"
    assert request.system == "You grade answers."
    assert request.json_schema == SCHEMA
    assert request.max_tokens == 128


@pytest.mark.parametrize(
    ("path", "body", "why"),
    [
        (
            "/v1/messages",
            {"model": "c", "messages": [{"role": "user", "content": "x"}]},
            "max_tokens",
        ),
        ("/v1/chat/completions", {"model": "m", "messages": []}, "messages"),
        (GEMINI_PATH, {"contents": "not a list"}, "contents"),
        ("/v1/chat/completions", ["not", "an", "object"], "JSON object"),
    ],
)
def test_malformed_requests_get_400_and_are_kept_as_errors(
    server: JudgeServer, path: str, body: Any, why: str
) -> None:
    reply = post(server, path, body)
    assert reply.status_code == 400
    assert why in reply.text
    assert server.requests == []
    assert len(server.errors) == 1 and why in server.errors[0]


def test_a_body_that_is_not_json_gets_400(server: JudgeServer) -> None:
    reply = _HTTP.post(server.base_url + "/v1/chat/completions", content=b"{nope")
    assert reply.status_code == 400
    assert server.errors


def test_unknown_paths_get_404(server: JudgeServer) -> None:
    assert post(server, "/v1/audio/speech", {"input": "x"}).status_code == 404
    # /embeddings is a route (deterministic vectors); a request without a model is a 400.
    assert post(server, "/v1/embeddings", {"input": "x"}).status_code == 400
    assert _HTTP.get(server.base_url + "/v1/models").status_code == 404


@pytest.mark.parametrize("dialect", ["openai", "gemini", "anthropic"])
def test_rate_limit_carries_retry_after_in_each_dialects_error_shape(
    server: JudgeServer, dialect: str
) -> None:
    server.set_script(StandinReply.rate_limited(retry_after=2.5, message="slow down"))
    path, body = ROUTES[dialect]
    reply = post(server, path, body)
    assert reply.status_code == 429
    assert reply.headers["retry-after"] == "2.5"
    error = reply.json()["error"]
    assert error["message"] == "slow down"
    expected_kind = {
        "openai": ("type", "rate_limit_exceeded"),
        "gemini": ("status", "RESOURCE_EXHAUSTED"),
        "anthropic": ("type", "rate_limit_error"),
    }[dialect]
    assert error[expected_kind[0]] == expected_kind[1]


def test_whole_seconds_retry_after_and_none(server: JudgeServer) -> None:
    server.set_script([StandinReply.rate_limited(3), StandinReply.rate_limited(None)])
    first = post(server, "/v1/messages", ANTHROPIC_BODY)
    second = post(server, "/v1/messages", ANTHROPIC_BODY)
    assert first.headers["retry-after"] == "3"
    assert "retry-after" not in second.headers
    assert second.status_code == 429


@pytest.mark.parametrize("dialect", ["openai", "gemini", "anthropic"])
def test_server_errors_in_each_dialect(server: JudgeServer, dialect: str) -> None:
    server.set_script(StandinReply.server_error(503, "overloaded"))
    path, body = ROUTES[dialect]
    reply = post(server, path, body)
    assert reply.status_code == 503
    assert "overloaded" in reply.text
    if dialect == "gemini":
        assert reply.json()["error"]["status"] == "UNAVAILABLE"


def test_garbage_body_is_sent_verbatim_as_json(server: JudgeServer) -> None:
    server.set_script(StandinReply.garbage("<html>502 bad gateway"))
    reply = post(server, "/v1/chat/completions", OPENAI_BODY)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.text == "<html>502 bad gateway"


def test_list_script_is_consumed_in_order_then_reports_exhaustion(server: JudgeServer) -> None:
    server.set_script(["first", StandinReply("second")])
    texts = [post(server, "/chat/completions", OPENAI_BODY) for _ in range(3)]
    assert [t.json()["choices"][0]["message"]["content"] for t in texts[:2]] == [
        "first",
        "second",
    ]
    assert texts[2].status_code == 500
    assert server.errors == ["script exhausted after 2 replies"]
    assert [r.index for r in server.requests] == [0, 1, 2]


def test_callable_script_sees_the_request_and_its_failures_are_reported(
    server: JudgeServer,
) -> None:
    seen: list[StandinRequest] = []

    def script(request: StandinRequest) -> str:
        seen.append(request)
        if "explode" in request.prompt:
            raise RuntimeError("boom")
        return request.user.upper()

    server.set_script(script)
    ok = post(server, "/v1/messages", ANTHROPIC_BODY).json()
    assert ok["content"][0]["text"] == "IS 2+2=4 RIGHT?"
    bad_body = {**ANTHROPIC_BODY, "messages": [{"role": "user", "content": "explode"}]}
    bad = post(server, "/v1/messages", bad_body)
    assert bad.status_code == 500
    assert "boom" in bad.text
    assert server.errors == ["script raised RuntimeError: boom"]
    assert [r.index for r in seen] == [0, 1]


def test_delayed_replies_are_waited_out_concurrently_and_counted(server: JudgeServer) -> None:
    release = threading.Event()
    server.set_script(StandinReply("late", delay=0.05, hold=release))
    count = 8
    with ThreadPoolExecutor(count) as pool:
        futures = [
            pool.submit(post, server, "/v1/chat/completions", OPENAI_BODY) for _ in range(count)
        ]
        deadline = time.monotonic() + 10
        while server.in_flight < count and time.monotonic() < deadline:
            time.sleep(0.01)
        # every request is being held at once: they are served concurrently
        assert server.in_flight == count
        release.set()
        replies = [f.result() for f in futures]
    assert all(r.json()["choices"][0]["message"]["content"] == "late" for r in replies)
    assert server.peak_in_flight == count
    assert server.in_flight == 0


def test_concurrent_requests_each_get_one_scripted_reply() -> None:
    count = 64
    script = [f"reply-{i}" for i in range(count)]
    with JudgeServer(script) as server, ThreadPoolExecutor(16) as pool:
        replies = list(
            pool.map(lambda _: post(server, "/chat/completions", OPENAI_BODY), range(count))
        )
        texts = sorted(r.json()["choices"][0]["message"]["content"] for r in replies)
        assert texts == sorted(script)
        assert sorted(r.index for r in server.requests) == list(range(count))
        assert not server.errors


def test_stop_cuts_short_held_replies_and_releases_the_port() -> None:
    server = JudgeServer(StandinReply("never", hold=threading.Event())).start()
    port = server.port
    outcome: list[BaseException | httpx.Response] = []

    def call() -> None:
        try:
            outcome.append(post(server, "/v1/chat/completions", OPENAI_BODY))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 10
    while server.in_flight < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop()
    caller.join(10)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.HTTPError)
    assert not [t for t in threading.enumerate() if t.name.startswith(f"judge-server:{port}")]
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    server.stop()  # stopping twice is harmless


def test_keep_alive_connections_are_reused() -> None:
    with JudgeServer("ok") as server, httpx.Client(base_url=server.base_url) as client:
        for _ in range(5):
            assert client.post("/v1/chat/completions", json=OPENAI_BODY).status_code == 200
        handlers = [
            t for t in threading.enumerate() if t.name == f"judge-server:{server.port}:conn"
        ]
        # one connection thread served all five requests: HTTP/1.1 keep-alive
        assert len(handlers) == 1
        assert len(server.requests) == 5


def test_a_request_without_a_usable_content_length_gets_411(server: JudgeServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n{}"
        )
        status_line = conn.makefile("rb").readline()
    assert status_line.startswith(b"HTTP/1.1 411 ")
    assert server.requests == []


# -- tool calling ----------------------------------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER_CALL = {"name": "get_weather", "arguments": {"city": "Paris"}}


def test_openai_tool_calls_and_tool_traffic(server: JudgeServer) -> None:
    server.set_script(
        [
            StandinReply("checking", tool_calls=[WEATHER_CALL], input_tokens=9, output_tokens=4),
            StandinReply("It is sunny."),
        ]
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather now",
                "parameters": WEATHER_SCHEMA,
            },
        }
    ]
    first_body = {
        "model": "m",
        "tools": tools,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    first = post(server, "/v1/chat/completions", first_body).json()
    choice = first["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "checking"
    (call,) = choice["message"]["tool_calls"]
    assert call == {
        "id": "call_0_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert first["usage"] == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    follow_up = {
        **first_body,
        "messages": [
            *first_body["messages"],
            choice["message"],
            {"role": "tool", "tool_call_id": "call_0_0", "content": '{"sky": "clear"}'},
        ],
    }
    second = post(server, "/v1/chat/completions", follow_up).json()
    assert second["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in second["choices"][0]["message"]
    first_seen, second_seen = server.requests
    assert first_seen.tools == (
        {"name": "get_weather", "description": "Weather now", "parameters": WEATHER_SCHEMA},
    )
    assert first_seen.tool_calls == () and first_seen.tool_results == ()
    assert second_seen.tool_calls == (
        {"id": "call_0_0", "name": "get_weather", "arguments": {"city": "Paris"}},
    )
    assert second_seen.tool_results == (
        {"id": "call_0_0", "name": "get_weather", "content": '{"sky": "clear"}'},
    )
    assert [m["role"] for m in second_seen.messages] == ["user", "assistant", "tool"]
    assert second_seen.user == "Weather in Paris?"
    # the body is kept exactly as sent, assistant tool_calls included
    assert second_seen.body["messages"][1]["tool_calls"][0]["id"] == "call_0_0"


def test_scripted_ids_raw_argument_strings_and_several_calls(server: JudgeServer) -> None:
    server.set_script(
        StandinReply(
            tool_calls=[
                {"name": "a", "arguments": "{not json", "id": "mine"},
                StandinToolCall("b", {"x": 1}),
            ]
        )
    )
    body = post(server, "/v1/chat/completions", OPENAI_BODY).json()
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert [c["id"] for c in message["tool_calls"]] == ["mine", "call_0_1"]
    assert message["tool_calls"][0]["function"]["arguments"] == "{not json"
    # default output tokens count the words of the calls' names and arguments
    assert body["usage"]["completion_tokens"] == 6  # a, {not, json, b, {"x":, 1}


def test_bad_scripted_tool_calls_fail_where_they_are_written() -> None:
    with pytest.raises(TypeError, match="non-empty name"):
        StandinReply(tool_calls=[{"arguments": {}}])
    with pytest.raises(TypeError, match="unknown keys"):
        StandinReply(tool_calls=[{"name": "a", "params": {}}])
    with pytest.raises(TypeError, match="a list of calls"):
        StandinReply(tool_calls={"name": "a"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="object or a JSON string"):
        StandinReply(tool_calls=[{"name": "a", "arguments": [1]}])


def test_gemini_function_calls_and_responses(server: JudgeServer) -> None:
    server.set_script(
        [StandinReply(tool_calls=[{**WEATHER_CALL, "id": "fc-1"}]), StandinReply("Sunny.")]
    )
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather",
                    "parametersJsonSchema": WEATHER_SCHEMA,
                }
            ]
        }
    ]
    first = post(server, GEMINI_PATH, {**GEMINI_BODY, "tools": tools}).json()
    assert first["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"}}
    ]
    contents = [
        *GEMINI_BODY["contents"],
        first["candidates"][0]["content"],
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "id": "fc-1",
                        "response": {"sky": "clear"},
                    }
                }
            ],
        },
    ]
    post(server, GEMINI_PATH, {**GEMINI_BODY, "tools": tools, "contents": contents})
    first_seen, second_seen = server.requests
    assert first_seen.tools[0]["parameters"] == WEATHER_SCHEMA
    assert second_seen.tool_calls == (
        {"id": "fc-1", "name": "get_weather", "arguments": {"city": "Paris"}},
    )
    assert second_seen.tool_results == (
        {"id": "fc-1", "name": "get_weather", "content": {"sky": "clear"}},
    )
    assert second_seen.messages[-1] == {"role": "tool", "content": '{"sky": "clear"}'}
    assert second_seen.user == "Is 2+2=4 right?"


def test_gemini_sdk_round_trip_with_a_function_call(server: JudgeServer) -> None:
    from google import genai
    from google.genai import types

    server.set_script(
        [StandinReply(tool_calls=[WEATHER_CALL], input_tokens=12), StandinReply("Sunny in Paris.")]
    )
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
    declaration = types.FunctionDeclaration(
        name="get_weather", description="Weather now", parameters_json_schema=WEATHER_SCHEMA
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[declaration])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    question = types.Content(role="user", parts=[types.Part.from_text(text="Weather in Paris?")])
    first = client.models.generate_content(
        model="gemini-2.5-flash", contents=[question], config=config
    )
    (call,) = first.function_calls or []
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    assert first.usage_metadata is not None and first.usage_metadata.prompt_token_count == 12
    answer = types.Part.from_function_response(name="get_weather", response={"sky": "clear"})
    assert first.candidates and first.candidates[0].content
    second = client.models.generate_content(
        model="gemini-2.5-flash",
        contents=[
            question,
            first.candidates[0].content,
            types.Content(role="user", parts=[answer]),
        ],
        config=config,
    )
    assert second.text == "Sunny in Paris."
    seen = server.requests[1]
    assert seen.tools[0]["name"] == "get_weather"
    assert seen.tool_calls[0]["arguments"] == {"city": "Paris"}
    assert seen.tool_results[0]["content"] == {"sky": "clear"}


def test_anthropic_tool_use_and_tool_results(server: JudgeServer) -> None:
    server.set_script(StandinReply("Let me look.", tool_calls=[WEATHER_CALL]))
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": WEATHER_SCHEMA}]
    body = post(server, "/v1/messages", {**ANTHROPIC_BODY, "tools": tools}).json()
    assert body["stop_reason"] == "tool_use"
    assert body["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_0_0", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    messages = [
        *ANTHROPIC_BODY["messages"],
        {"role": "assistant", "content": body["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_0_0", "content": "clear"}],
        },
    ]
    post(server, "/v1/messages", {**ANTHROPIC_BODY, "tools": tools, "messages": messages})
    seen = server.requests[1]
    assert seen.tools[0]["parameters"] == WEATHER_SCHEMA
    assert seen.tool_results == ({"id": "toolu_0_0", "name": "get_weather", "content": "clear"},)
    assert seen.messages[-1] == {"role": "tool", "content": "clear"}


def test_string_arguments_that_are_not_an_object_fail_in_object_dialects(
    server: JudgeServer,
) -> None:
    server.set_script(StandinReply(tool_calls=[{"name": "a", "arguments": "[1, 2]"}]))
    reply = post(server, GEMINI_PATH, GEMINI_BODY)
    assert reply.status_code == 500
    assert "must be a JSON object" in reply.text
    assert server.errors and "bad scripted reply" in server.errors[0]


def test_malformed_tool_declarations_get_400(server: JudgeServer) -> None:
    body = {**OPENAI_BODY, "tools": [{"type": "function", "function": {"description": "x"}}]}
    reply = post(server, "/v1/chat/completions", body)
    assert reply.status_code == 400
    assert "tools[0].function needs a 'name'" in reply.text


def test_command_line_scripts_are_loaded_by_name() -> None:
    from examples.openai_tools.standin import script

    assert load_script("examples.openai_tools.standin:script") is script
    with pytest.raises(SystemExit, match="expected MODULE:ATTRIBUTE"):
        load_script("no_colon")
    with pytest.raises(SystemExit, match="has no attribute 'nope'"):
        load_script("examples.openai_tools.standin:nope")
