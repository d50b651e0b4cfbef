"""Google's CES client over its default transport, gRPC, against assay's gRPC server.

The server is the one `assay serve --grpc-port` starts, on the same context (store,
agent, run executor) as a real uvicorn server; the client is `google-cloud-ces`'s
own gRPC transport on an insecure loopback channel.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from google.cloud.ces_v1beta.services.evaluation_service.transports import (
    EvaluationServiceGrpcTransport,
)
from service_server import RunningServer, create_key
from test_ces_rest import PARENT, golden_evaluation, rest_client, scenario_evaluation
from test_runs import weather_agent
from typer.testing import CliRunner

from assay.agents.callable import CallableAgent
from assay.cli import app
from assay.service import wire
from assay.service.wire import ces_grpc
from assay.store import Store


class _ApiKey(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Adds the API key to every call, as client_options.api_key does on Google's endpoint."""

    def __init__(self, key: str) -> None:
        self.key = key

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        metadata = [*(details.metadata or []), ("x-goog-api-key", self.key)]
        return continuation(details._replace(metadata=metadata), request)


@pytest.fixture
def grpc_port(
    store: Store, start_server: Callable[..., RunningServer]
) -> Iterator[tuple[RunningServer, int]]:
    served = start_server(store, agent=CallableAgent(weather_agent))
    ctx = served._server.config.app.state.ctx  # the app's own context
    server, port = ces_grpc.start(ctx, "127.0.0.1", 0, auth=True)
    yield served, port
    server.stop(grace=None)


def grpc_client(port: int, key: str | None) -> ces.EvaluationServiceClient:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    if key is not None:
        channel = grpc.intercept_channel(channel, _ApiKey(key))
    transport = EvaluationServiceGrpcTransport(channel=channel)
    return ces.EvaluationServiceClient(transport=transport)


def test_lifecycle_over_grpc(grpc_port: tuple[RunningServer, int]) -> None:
    served, port = grpc_port
    key = create_key(served.store)
    client = grpc_client(port, key)
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather", ["smoke"]), evaluation_id="weather"
    )
    assert golden.name == f"{PARENT}/evaluations/weather"
    scenario = client.create_evaluation(parent=PARENT, evaluation=scenario_evaluation("booking"))
    assert client.get_evaluation(name=scenario.name).scenario.max_turns == 6
    pages = list(client.list_evaluations(request={"parent": PARENT, "page_size": 1}).pages)
    assert [len(p.evaluations) for p in pages] == [1, 1]
    tagged = client.list_evaluations(request={"parent": PARENT, "filter": 'tags:"smoke"'})
    assert [e.name for e in tagged] == [golden.name]

    changed = client.update_evaluation(
        evaluation=ces.Evaluation(name=golden.name, description="v2", etag=golden.etag),
        update_mask={"paths": ["description"]},
    )
    assert changed.description == "v2"
    with pytest.raises(exceptions.Aborted):
        client.update_evaluation(
            evaluation=ces.Evaluation(name=golden.name, description="v3", etag=golden.etag),
            update_mask={"paths": ["description"]},
        )
    with pytest.raises(exceptions.AlreadyExists):
        client.create_evaluation(
            parent=PARENT, evaluation=golden_evaluation("x"), evaluation_id="weather"
        )
    with pytest.raises(exceptions.InvalidArgument) as bad:
        client.get_evaluation(name="projects/acme/locations/us/apps/shop/evaluations/bad~id")
    assert "is not a valid resource name" in bad.value.message
    assert bad.value.details and bad.value.details[0].field_violations[0].field == "name"
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation(name=f"{PARENT}/evaluations/nope")

    operation = client.run_evaluation(
        request={"app": PARENT, "evaluations": [golden.name], "golden_run_method": "NAIVE"}
    )
    run_name = operation.result(timeout=60).evaluation_run
    run = client.get_evaluation_run(name=run_name)
    assert run.state == ces.EvaluationRun.EvaluationRunState.COMPLETED
    results = list(client.list_evaluation_results(parent=golden.name))
    assert [r.evaluation_status for r in results] == [ces.EvaluationResult.Outcome.PASS]
    listed = client.list_evaluations(request={"parent": PARENT, "last_ten_results": True})
    by_name = {e.name: e for e in listed}
    assert [r.name for r in by_name[golden.name].last_ten_results] == [results[0].name]

    # One store: what went in over gRPC is what REST reads.
    assert rest_client(served, key).get_evaluation_run(name=run_name).name == run_name
    client.delete_evaluation(name=golden.name)
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_result(name=results[0].name)


def test_grpc_needs_a_key_and_names_unserved_methods(grpc_port: tuple[RunningServer, int]) -> None:
    served, port = grpc_port
    with pytest.raises(exceptions.Unauthenticated):
        grpc_client(port, None).list_evaluations(parent=PARENT)
    with pytest.raises(exceptions.Unauthenticated):
        grpc_client(port, "not-a-key").list_evaluations(parent=PARENT)
    client = grpc_client(port, create_key(served.store))
    with pytest.raises(exceptions.MethodNotImplemented) as missing:
        client.upload_evaluation_audio(name=f"{PARENT}/evaluations/x", audio_content=b"RIFF")
    assert "speech recognition" in missing.value.message


def test_assay_serve_grpc_port(tmp_path: Any) -> None:
    """`assay serve --grpc-port` as a user starts it: REST and gRPC on one store."""

    def free() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
            return port

    http_port, rpc_port = free(), free()
    store = f"sqlite:///{tmp_path}/serve.db"
    command = [sys.executable, "-m", "assay", "serve", "--no-auth", "--store", store,
               "--port", str(http_port), "--grpc-port", str(rpc_port),
               "--log-level", "warning"]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        client = grpc_client(rpc_port, None)
        deadline = time.monotonic() + 60
        while True:
            try:
                made = client.create_evaluation(
                    parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="w"
                )
                break
            except exceptions.ServiceUnavailable:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "assay serve did not answer gRPC"
                time.sleep(0.2)
        assert made.name == f"{PARENT}/evaluations/w"
        reply = httpx.get(f"http://127.0.0.1:{http_port}/v1beta/{made.name}", timeout=30)
        assert reply.json()["displayName"] == "weather"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_grpc_port_without_the_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "ces_available", lambda: False)
    result = CliRunner().invoke(app, ["serve", "--no-auth", "--grpc-port", "0"])
    assert result.exit_code == 2
    assert "pip install -e '.[ces]'" in result.output
