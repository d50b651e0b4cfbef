"""Fuzzing the CES (REST /v1beta and gRPC) and Vertex surfaces: no answer is a 5xx.

The REST `/v1` surface has its property test over the OpenAPI document
(test_openapi_truth.py); this one covers the wire surfaces (issue #31). Hypothesis
draws request bodies from the request messages' own descriptors (every field, enum,
map, repeated field and nested message of the method, to a bounded depth), mixed with
hostile values (bodies nested thousands deep, `1e400`, 30-digit integers, unknown
names, arbitrary JSON); over gRPC it sends such messages serialized, cut short, or
replaced by arbitrary bytes. Every answer must be a client error in the status shape
(or a success): never 5xx, INTERNAL or UNKNOWN. The server runs in this process on
loopback, so its peak memory over the whole suite is asserted to grow by less than a
bound. Fixed seeds and bounded example counts keep it repeatable and well under a
minute.
"""

from __future__ import annotations

import json
import re
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from service_server import RunningServer, create_key, serve

from assay.service.wire import ces_grpc
from assay.service.wire.descriptors import EVALUATION_SERVICE, Rpc, rpcs
from assay.store import Store

EXAMPLES = 150
# Peak memory of this process (the server included) may grow by at most this much.
RSS_BOUND_KIB = 400 * 1024
_VARIABLE = re.compile(r"\{([a-z_.]+)(?:=([^}]*))?\}")
_METHODS = [r for r in rpcs() if r.service == EVALUATION_SERVICE]
# Methods that would start work the fuzz does not need (runs of an agent, judge calls).
_SKIPPED = {"RunEvaluation", "GenerateEvaluation", "RunEvaluationResultMetrics"}
_FUZZED = [r for r in _METHODS if r.name not in _SKIPPED and r.http]

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and the infinities too: json.dumps writes them, Python reads them
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
_HOSTILE_TEXT = st.sampled_from(
    [
        "[" * 20_000 + "]" * 20_000,
        '{"a": ' + "{" * 5_000 + "}" * 5_000 + "}",
        '{"x": 1e400}',
        '{"n": 123456789012345678901234567890}',
        '{"displayName": "\\ud800"}',
        '{"displayName": "a\\u0000b"}',
        "not json",
        "",
    ]
)


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats() | st.integers(-5, 5)
    if kind in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        names = st.sampled_from(["apps/shop/evaluations/e1", "projects/p/locations/l", "x"])
        return st.text(max_size=12) | names
    if field.enum_type is not None:
        return st.sampled_from(list(field.enum_type.values_by_name)) | st.integers(-3, 99)
    return st.integers(min_value=-(2**64), max_value=2**64) | st.text(max_size=4)


def _message(descriptor: Descriptor, depth: int) -> st.SearchStrategy[Any]:
    """JSON for `descriptor` (proto3 JSON names), nested messages up to `depth` levels."""
    if descriptor.full_name.startswith("google.protobuf."):
        return _JSON | st.text(max_size=30)
    if depth <= 0:
        return st.just({})
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value = _single(entry.fields_by_name["value"], depth - 1)
            optional[field.json_name] = st.dictionaries(st.text(max_size=6), value, max_size=2)
        elif field.is_repeated:
            optional[field.json_name] = st.lists(_single(field, depth - 1), max_size=2)
        else:
            optional[field.json_name] = _single(field, depth - 1)
    return st.fixed_dictionaries({}, optional=optional)


def _single(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.message_type is not None:
        return _message(field.message_type, depth)
    return _scalar(field)


def _path(rpc: Rpc) -> tuple[str, str, str | None]:
    """(verb, URL path, body field) of the method's first HTTP rule, ids filled in."""
    rule = rpc.http[0]

    def fill(match: re.Match[str]) -> str:
        template = match[2] or "*"
        return "/".join("fuzz" if p in ("*", "**") else p for p in template.split("/"))

    path = _VARIABLE.sub(fill, rule["uri"]).replace("/apps/fuzz", "/apps/shop")
    return rule["method"].upper(), path, rule.get("body")


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, str, int]]:
    folder: Path = tmp_path_factory.mktemp("wire-fuzz")
    with Store.open(f"sqlite:///{folder / 'store.db'}") as store:
        server = serve(store, files_root=folder)
        ctx = server._server.config.app.state.ctx
        grpc_server, port = ces_grpc.start(ctx, "127.0.0.1", 0, auth=True)
        try:
            yield server, create_key(store), port
        finally:
            grpc_server.stop(grace=None)
            server.stop()


def _check_rest_answer(reply: httpx.Response, what: str) -> None:
    # 501 UNIMPLEMENTED: the speech methods assay does not serve (test_ces_walk.NOT_SERVED).
    assert reply.status_code < 500 or reply.status_code == 501, (
        what,
        reply.status_code,
        reply.text[:300],
    )
    if reply.status_code >= 400:
        error = reply.json()["error"]
        assert error["status"] and error["message"], (what, reply.text[:300])


def test_ces_rest_answers_no_5xx(served: tuple[RunningServer, str, int]) -> None:
    server, key, _port = served
    before = _peak_kib()
    with httpx.Client(
        base_url=server.base_url, timeout=60, headers={"x-goog-api-key": key}
    ) as http:

        @seed(20261201)
        @settings(
            max_examples=EXAMPLES,
            derandomize=True,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            rpc = data.draw(st.sampled_from(_FUZZED))
            verb, path, body_field = _path(rpc)
            content: str | None = None
            if body_field is not None:
                if data.draw(st.integers(0, 4)) == 0:
                    content = data.draw(_HOSTILE_TEXT)
                else:
                    target = rpc.request.DESCRIPTOR
                    if body_field != "*":
                        target = target.fields_by_name[body_field].message_type
                    value = data.draw(_message(target, 6) | _JSON)
                    content = json.dumps(value)
            reply = http.request(
                verb, path, content=content, headers={"content-type": "application/json"}
            )
            _check_rest_answer(reply, f"{rpc.name} {verb} {path} {(content or '')[:200]}")

        check()
    assert _peak_kib() - before < RSS_BOUND_KIB


_DEEP = "[" * 3_000 + "]" * 3_000
_CALLS_DEEP_TEXT = (
    '{"content": "", "tool_calls": [{"name": "t", "arguments": {"a": ' + _DEEP + "}}]}"
)
_CALLS_DEEP_INPUT = {"toolCalls": [{"toolName": "t", "toolInput": '{"a": ' + _DEEP + "}"}]}
_CALLS = st.sampled_from(
    [
        {"toolCalls": [{"toolName": "t", "toolInput": "{"}]},
        _CALLS_DEEP_INPUT,
        json.dumps({"content": "", "tool_calls": [{"name": "t", "arguments": {"a": 1}}]}),
        _CALLS_DEEP_TEXT,
    ]
)
# A tool-call message nested deep, as a prediction and as tool_input.
_VERTEX_HOSTILE = st.sampled_from(
    [
        json.dumps({key: {"metricSpec": {}, "instances": [instance]}})
        for key, instance in [
            ("toolCallValidInput", {"prediction": _CALLS_DEEP_TEXT, "reference": ""}),
            ("toolNameMatchInput", {"prediction": "", "reference": _CALLS_DEEP_TEXT}),
            ("trajectoryExactMatchInput", {"predictedTrajectory": _CALLS_DEEP_INPUT}),
        ]
    ]
)
_INSTANCE_KEYS = ["prediction", "reference", "predictedTrajectory", "referenceTrajectory"]
_VERTEX_INPUTS = [
    "toolCallValidInput",
    "trajectoryExactMatchInput",
    "exactMatchInput",
    "bleuInput",
    "rougeInput",
    "toolCallValidInput",
    "toolNameMatchInput",
    "trajectoryExactMatchInput",
    "trajectoryPrecisionInput",
    "unknownInput",
]


def test_vertex_answers_no_5xx(served: tuple[RunningServer, str, int]) -> None:
    server, key, _port = served
    url = "/v1beta1/projects/acme/locations/us-central1:evaluateInstances"
    instance = st.dictionaries(
        st.sampled_from(_INSTANCE_KEYS),
        st.one_of(_CALLS, _CALLS, _JSON, st.text(max_size=40)),  # tool calls weighed twice
        max_size=4,
    )
    body = st.builds(
        lambda key, spec, instances: {key: {"metricSpec": spec, "instances": instances}},
        st.sampled_from(_VERTEX_INPUTS),
        st.just({})
        | st.dictionaries(st.sampled_from(["rougeType", "useStemmer", "x"]), _JSON, max_size=2),
        st.lists(instance, max_size=3) | _JSON,
    )
    with httpx.Client(
        base_url=server.base_url, timeout=60, headers={"x-goog-api-key": key}
    ) as http:

        @seed(20261202)
        @settings(
            max_examples=EXAMPLES,
            derandomize=True,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            if data.draw(st.integers(0, 4)) == 0:
                content = data.draw(_HOSTILE_TEXT | _VERTEX_HOSTILE)
            else:
                content = json.dumps(data.draw(body | _JSON))
            reply = http.post(url, content=content, headers={"content-type": "application/json"})
            _check_rest_answer(reply, content[:300])

        check()


_BAD_CODES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}


def test_grpc_answers_no_internal(served: tuple[RunningServer, str, int]) -> None:
    _server, key, port = served
    before = _peak_kib()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:

        @seed(20261203)
        @settings(
            max_examples=EXAMPLES,
            derandomize=True,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            rpc = data.draw(st.sampled_from(_FUZZED))
            message = rpc.request()
            value = data.draw(_message(rpc.request.DESCRIPTOR, 6))
            try:
                json_format.ParseDict(value, message, ignore_unknown_fields=True)
            except (json_format.ParseError, ValueError, TypeError):
                message = rpc.request()  # a value the client could not send: the empty one
            payload = message.SerializeToString()
            how = data.draw(st.sampled_from(["whole", "cut", "bytes"]))
            if how == "cut" and payload:
                payload = payload[: data.draw(st.integers(0, len(payload) - 1))]
            elif how == "bytes":
                payload = data.draw(st.binary(max_size=64))
            call = channel.unary_unary(
                f"/{rpc.service}/{rpc.name}", request_serializer=None, response_deserializer=None
            )
            try:
                call(payload, metadata=[("x-goog-api-key", key)], timeout=60)
            except grpc.RpcError as exc:
                assert exc.code() not in _BAD_CODES, (rpc.name, how, payload[:80], exc.details())

        check()
    assert _peak_kib() - before < RSS_BOUND_KIB
