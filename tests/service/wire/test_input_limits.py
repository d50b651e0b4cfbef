"""Hostile input on the CES (/v1beta, gRPC) and Vertex surfaces: 400 / INVALID_ARGUMENT
naming the field, as /v1 answers, never a 500 (issue #31).

Before: bodies nested 10,000 or 100,000 deep, golden args nested 5,000 deep, `1e400`,
CSV cells over 131,072 characters and deeply nested CSV args answered 500 INTERNAL; a
30-digit integer in a Struct was stored as 1.2345678901234568e+29; over gRPC, a Struct
50 levels deep or garbage bytes answered INTERNAL. Against a real server on loopback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from google.protobuf import struct_pb2
from service_server import RunningServer, create_key
from test_ces_grpc import grpc_client
from test_ces_rest import PARENT, golden_evaluation, rest_client

from assay.service.settings import ServiceLimits
from assay.service.wire import ces_grpc
from assay.store import Store

CREATE = f"/v1beta/{PARENT}/evaluations"
VERTEX = "/v1beta1/projects/acme/locations/us-central1:evaluateInstances"
ARGS = "evaluation.golden.turns[0].steps[1].expectation.toolCall.args"
SNAKE_ARGS = "evaluation.golden.turns[0].steps[1].expectation.tool_call.args"


@pytest.fixture
def served(store: Store, start_server: Callable[..., RunningServer]) -> RunningServer:
    return start_server(store)


@pytest.fixture
def http(served: RunningServer) -> Iterator[httpx.Client]:
    key = create_key(served.store)
    with httpx.Client(
        base_url=served.base_url, timeout=60, headers={"x-goog-api-key": key}
    ) as client:
        yield client


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _golden_with_args(args_json: str) -> str:
    body = ces.Evaluation.to_json(golden_evaluation("hostile"))
    text = json.dumps(json.loads(body))
    assert '{"city": "Paris"}' in text
    return text.replace('{"city": "Paris"}', args_json)


def _error(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == 400, (reply.status_code, reply.text[:500])
    error: dict[str, Any] = reply.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    return error


def _field(error: dict[str, Any]) -> str:
    field: str = error["details"][0]["fieldViolations"][0]["field"]
    return field


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_ces_bodies_nested_deep_are_400(http: httpx.Client, depth: int) -> None:
    error = _error(http.post(CREATE, content='{"displayName": ' + _deep(depth) + "}"))
    assert _field(error) == "evaluation" and "nested deeper than 100" in error["message"]


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        ('{"a": ' + _deep(5_000) + "}", "evaluation", "nested deeper than 100"),
        ('{"a": ' + _deep(150) + "}", f"{ARGS}.a[0]", "nested deeper than 100"),
        ('{"x": 1e400}', f"{ARGS}.x", "finite"),
        ('{"n": 123456789012345678901234567890}', f"{ARGS}.n", "64-bit"),
        ('{"n": 1152921504606846977}', f"{SNAKE_ARGS}.n", "as a string"),  # 2^60 + 1
    ],
    ids=["args 5000 deep", "args 150 deep", "1e400", "30 digits", "2^60+1"],
)
def test_ces_golden_args_are_checked_naming_the_field(
    http: httpx.Client, args: str, field: str, words: str
) -> None:
    error = _error(http.post(CREATE, content=_golden_with_args(args)))
    assert _field(error).startswith(field), error
    assert words in error["message"], error["message"]
    assert http.get(CREATE).json() == {}  # nothing was stored


def test_integers_a_struct_holds_exactly_are_kept_exactly(http: httpx.Client) -> None:
    reply = http.post(CREATE, content=_golden_with_args('{"n": 9007199254740992, "m": -42}'))
    assert reply.status_code == 200, reply.text
    args = reply.json()["golden"]["turns"][0]["steps"][1]["expectation"]["toolCall"]["args"]
    assert args == {"n": 2**53, "m": -42}


def _trajectory(tool_input: str) -> dict[str, Any]:
    call = {"toolName": "get_weather", "toolInput": tool_input}
    instance = {
        "predictedTrajectory": {"toolCalls": [call]},
        "referenceTrajectory": {"toolCalls": [call]},
    }
    return {"trajectoryExactMatchInput": {"metricSpec": {}, "instances": [instance]}}


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_vertex_bodies_nested_deep_are_400(http: httpx.Client, depth: int) -> None:
    body = '{"exactMatchInput": {"metricSpec": {}, "instances": ' + _deep(depth) + "}}"
    error = _error(http.post(VERTEX, content=body))
    assert _field(error) == "body" and "nested deeper than 100" in error["message"]


def test_vertex_values_are_checked_naming_the_field(http: httpx.Client) -> None:
    body = '{"exactMatchInput": {"metricSpec": {}, "instances": [{"prediction": 1e400}]}}'
    error = _error(http.post(VERTEX, content=body))
    assert _field(error) == "exactMatchInput.instances[0].prediction", error
    deep_input = '{"a": ' + _deep(5_000) + "}"
    error = _error(http.post(VERTEX, json=_trajectory(deep_input)))
    field = "trajectory_exact_match_input.instances[0].predicted_trajectory.tool_calls[0]"
    assert _field(error) == f"{field}.tool_input" and "nested deeper" in error["message"]
    # The same request within the limits is answered.
    fine = http.post(VERTEX, json=_trajectory('{"city": "Paris"}'))
    assert fine.status_code == 200, fine.text


def _csv(*rows: str) -> bytes:
    return ("display_name,turn_index,action_type,text,tool,args\n" + "\n".join(rows)).encode()


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (
            ["big,,,,,", f',1,user_input,"{"x" * 131_073}",,'],
            "line 3: the cell of column 'text' holds 131073 characters; the limit is 131072",
        ),
        (
            ["deep,,,,,", ',1,tool_call,,lookup,"{""a"": ' + _deep(5_000) + '}"'],
            "line 3: column args: nested deeper than 100",
        ),
    ],
    ids=["big cell", "nested args"],
)
def test_csv_cells_are_checked_naming_the_line_and_column(
    served: RunningServer, rows: list[str], words: str
) -> None:
    client = rest_client(served, create_key(served.store))
    with pytest.raises(exceptions.BadRequest) as info:
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=_csv(*rows))
        )
    assert f"csv_content: {words}" in info.value.message, info.value.message


@pytest.fixture
def grpc_port(served: RunningServer) -> Iterator[int]:
    ctx = served._server.config.app.state.ctx
    server, port = ces_grpc.start(ctx, "127.0.0.1", 0, auth=True)
    yield port
    server.stop(grace=None)


def _nested_struct(depth: int) -> struct_pb2.Struct:
    """{"a": {"a": ... {"leaf": 1}}}, `depth` levels, built without recursion."""
    value = struct_pb2.Struct()
    value.fields["leaf"].number_value = 1
    for _ in range(depth):
        outer = struct_pb2.Struct()
        outer.fields["a"].struct_value.CopyFrom(value)
        value = outer
    return value


def _with_args(args: struct_pb2.Struct) -> Any:
    message = ces.Evaluation.pb(golden_evaluation("deep"))
    message.golden.turns[0].steps[1].expectation.tool_call.args.CopyFrom(args)
    return message


def _raw_call(port: int, key: str, payload: bytes) -> grpc.RpcError:
    """The error CreateEvaluation answers to `payload` sent as it is."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            "/google.cloud.ces.v1beta.EvaluationService/CreateEvaluation",
            request_serializer=None,
            response_deserializer=None,
        )
        with pytest.raises(grpc.RpcError) as info:
            call(payload, metadata=[("x-goog-api-key", key)], timeout=30)
    return info.value


@pytest.mark.parametrize("depth", [50, 200])
def test_grpc_struct_args_nested_deep_are_invalid_argument(
    served: RunningServer, grpc_port: int, depth: int
) -> None:
    key = create_key(served.store)
    # Sent as bytes: the client's own message classes refuse to build it, a client of
    # another language need not.
    request = ces.CreateEvaluationRequest.pb()(parent=PARENT, evaluation_id="deep")
    request.evaluation.CopyFrom(_with_args(_nested_struct(depth)))
    error = _raw_call(grpc_port, key, request.SerializeToString())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert "request" in (error.details() or "") and "nests at most 100" in (error.details() or "")
    # 20 levels fit in protobuf's limit and are stored.
    client = grpc_client(grpc_port, key)
    fine = ces.Evaluation.wrap(_with_args(_nested_struct(20)))
    made = client.create_evaluation(parent=PARENT, evaluation=fine, evaluation_id="ok")
    assert made.name.endswith("/evaluations/ok")


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff\xff", b"\x0a\x05ab", b"\x12" + b"\xff" * 20])
def test_grpc_garbage_bytes_are_invalid_argument(
    served: RunningServer, grpc_port: int, garbage: bytes
) -> None:
    error = _raw_call(grpc_port, create_key(served.store), garbage)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert "request" in (error.details() or "")


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan])
def test_grpc_struct_numbers_json_cannot_hold_are_invalid_argument(
    served: RunningServer, grpc_port: int, number: float
) -> None:
    message = ces.Evaluation.pb(golden_evaluation("odd number"))
    message.golden.turns[0].steps[1].expectation.tool_call.args.fields["n"].number_value = number
    request = ces.CreateEvaluationRequest.pb()(parent=PARENT, evaluation=message)
    error = _raw_call(grpc_port, create_key(served.store), request.SerializeToString())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert (error.details() or "").startswith("args:"), error.details()


def test_one_depth_limit_holds_on_every_surface(served: RunningServer, http: httpx.Client) -> None:
    """The server's ServiceLimits.max_depth, not a constant of each surface."""
    ctx = served._server.config.app.state.ctx
    ctx.limits = ServiceLimits(max_depth=12)
    args = '{"a": ' + _deep(15) + "}"
    v1 = http.post(
        "/v1/apps/shop/evaluations",
        content=_golden_with_args(args),
        headers={"content-type": "application/json"},
    )
    v1beta = http.post(CREATE, content=_golden_with_args(args))
    vertex = http.post(VERTEX, json=_trajectory(args))
    for reply in (v1, v1beta, vertex):
        assert "nested deeper than 12 levels" in _error(reply)["message"], reply.text
    ctx.limits = ServiceLimits()  # 15 levels are within the default
    assert http.post(CREATE, content=_golden_with_args(args)).status_code == 200


def test_vertex_tool_call_messages_nested_deep_are_400(http: httpx.Client) -> None:
    deep = json.dumps({"content": "", "tool_calls": [{"name": "t", "arguments": "x"}]})
    deep = deep.replace('"x"', '{"a": ' + _deep(5_000) + "}")
    instance = {"prediction": deep, "reference": deep}
    body = {"toolCallValidInput": {"metricSpec": {}, "instances": [instance]}}
    error = _error(http.post(VERTEX, json=body))
    assert _field(error) == "tool_call_valid_input.instances[0].prediction", error
    assert "nested deeper than 100" in error["message"]


@pytest.mark.parametrize("rouge_type", [[None], {"a": 1}, 7])
def test_a_vertex_rouge_type_that_is_no_string_is_400(http: httpx.Client, rouge_type: Any) -> None:
    """Found by the wire fuzz: an unhashable rougeType was a TypeError 500."""
    body = {"rougeInput": {"metricSpec": {"rougeType": rouge_type}, "instances": [{}]}}
    error = _error(http.post(VERTEX, json=body))
    assert _field(error) == "rouge_input.metric_spec.rouge_type", error
