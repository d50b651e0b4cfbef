"""Evaluation expectations, and cancelling / deleting operations, with Google's CES client.

Driven over REST and over gRPC against one real server each time; nothing is patched.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from service_server import RunningServer, create_key
from test_ces_grpc import grpc_client
from test_ces_rest import PARENT, golden_evaluation, rest_client
from test_runs import weather_agent

from assay.agents.callable import CallableAgent
from assay.core.cases import Turn
from assay.service import runs
from assay.service.wire import ces_grpc
from assay.store import Store

Client = ces.EvaluationServiceClient


@pytest.fixture(params=["rest", "grpc"])
def clients(
    request: pytest.FixtureRequest, store: Store, start_server: Callable[..., RunningServer]
) -> Iterator[tuple[RunningServer, Client]]:
    """(server, client over the transport of the param) for a server running `weather_agent`."""
    served = start_server(store, agent=CallableAgent(weather_agent))
    key = create_key(served.store)
    if request.param == "rest":
        yield served, rest_client(served, key)
        return
    ctx = served._server.config.app.state.ctx
    server, port = ces_grpc.start(ctx, "127.0.0.1", 0, auth=True)
    yield served, grpc_client(port, key)
    server.stop(grace=None)


def expectation(name: str, prompt: str, tags: list[str] | None = None) -> ces.EvaluationExpectation:
    return ces.EvaluationExpectation(
        display_name=name,
        tags=tags or [],
        llm_criteria=ces.EvaluationExpectation.LlmCriteria(prompt=prompt),
    )


def test_expectation_crud_and_references(clients: tuple[RunningServer, Client]) -> None:
    served, client = clients
    polite = client.create_evaluation_expectation(
        parent=PARENT,
        evaluation_expectation=expectation("polite", "The agent is polite", ["tone"]),
        evaluation_expectation_id="polite",
    )
    assert polite.name == f"{PARENT}/evaluationExpectations/polite"
    assert polite.llm_criteria.prompt == "The agent is polite" and polite.etag
    brief = client.create_evaluation_expectation(
        parent=PARENT, evaluation_expectation=expectation("brief", "The answer is short")
    )
    assert brief.name.startswith(f"{PARENT}/evaluationExpectations/")
    assert client.get_evaluation_expectation(name=polite.name).display_name == "polite"

    pages = list(
        client.list_evaluation_expectations(request={"parent": PARENT, "page_size": 1}).pages
    )
    assert [len(p.evaluation_expectations) for p in pages] == [1, 1]
    tagged = client.list_evaluation_expectations(
        request={"parent": PARENT, "filter": 'tags:"tone"'}
    )
    assert [e.name for e in tagged] == [polite.name]

    changed = client.update_evaluation_expectation(
        evaluation_expectation=ces.EvaluationExpectation(
            name=polite.name,
            etag=polite.etag,
            llm_criteria=ces.EvaluationExpectation.LlmCriteria(prompt="The agent is very polite"),
        ),
        update_mask={"paths": ["llm_criteria"]},
    )
    assert changed.llm_criteria.prompt == "The agent is very polite"
    assert changed.display_name == "polite" and changed.etag != polite.etag
    with pytest.raises((exceptions.Conflict, exceptions.Aborted)):
        client.update_evaluation_expectation(
            evaluation_expectation=ces.EvaluationExpectation(
                name=polite.name, etag=polite.etag, display_name="x"
            ),
            update_mask={"paths": ["display_name"]},
        )
    with pytest.raises(exceptions.BadRequest) as blank:
        client.create_evaluation_expectation(
            parent=PARENT, evaluation_expectation=expectation("empty", "  ")
        )
    assert "llmCriteria.prompt" in blank.value.message

    # An evaluation names expectation resources of its app; they must exist.
    evaluation = golden_evaluation("weather")
    evaluation.golden.evaluation_expectations = [polite.name]
    made = client.create_evaluation(parent=PARENT, evaluation=evaluation, evaluation_id="weather")
    assert list(made.golden.evaluation_expectations) == [polite.name]
    dangling = golden_evaluation("dangling")
    dangling.golden.evaluation_expectations = [f"{PARENT}/evaluationExpectations/nope"]
    with pytest.raises(exceptions.BadRequest) as missing:
        client.create_evaluation(parent=PARENT, evaluation=dangling)
    assert "golden.evaluationExpectations[0]" in missing.value.message
    # ... and cannot be deleted while an evaluation names them.
    with pytest.raises(exceptions.BadRequest) as used:
        client.delete_evaluation_expectation(name=polite.name)
    assert made.name.removeprefix("projects/acme/locations/us/") in used.value.message

    # A run snapshots the expectation as the judged criterion it stands for.
    operation = client.run_evaluation(request={"app": PARENT, "evaluations": [made.name]})
    operation.result(timeout=60)
    ctx = served._server.config.app.state.ctx
    run = ctx.store.get_run(
        client.get_operation({"name": operation.operation.name}).name.rsplit("run-", 1)[1]
    )
    golden = run.config["service"]["evaluations"]["weather"]["golden"]
    assert golden["evaluationExpectations"] == [
        {"displayName": "polite", "llmCriteria": {"prompt": "The agent is very polite"}}
    ]
    # No judge model: nothing judged; and golden_expectations only when some turn
    # expects a tool response, transfer or variable update (this golden does not).
    assert run.metrics == [m for m in runs.GOLDEN_METRICS if m != "golden_expectations"]

    client.delete_evaluation(name=made.name)
    client.delete_evaluation_expectation(name=polite.name)
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_expectation(name=polite.name)
    assert [e.name for e in client.list_evaluation_expectations(parent=PARENT)] == [brief.name]


class _Gate:
    """An agent that waits until released, so a run stays RUNNING as long as a test needs."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    async def __call__(self, text: str) -> Turn:
        self.entered.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return await weather_agent(text)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_cancel_and_delete_operation(
    transport: str, store: Store, start_server: Callable[..., RunningServer]
) -> None:
    gate = _Gate()
    served = start_server(store, agent=CallableAgent(gate, name="gated"))
    key = create_key(served.store)
    grpc_server: Any = None
    if transport == "rest":
        client = rest_client(served, key)
    else:
        ctx = served._server.config.app.state.ctx
        grpc_server, port = ces_grpc.start(ctx, "127.0.0.1", 0, auth=True)
        client = grpc_client(port, key)
    try:
        made = client.create_evaluation(
            parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
        )
        operation = client.run_evaluation(request={"app": PARENT, "evaluations": [made.name]})
        assert gate.entered.wait(30)
        name = operation.operation.name
        with pytest.raises(exceptions.BadRequest) as running:
            client.delete_operation({"name": name})
        assert "still running" in running.value.message

        client.cancel_operation({"name": name})
        with pytest.raises(exceptions.Cancelled):
            operation.result(timeout=60)
        run_name = operation.metadata.evaluation_run
        run = client.get_evaluation_run(name=run_name)
        assert run.state == ces.EvaluationRun.EvaluationRunState.CANCELLED
        assert run.progress.completed_count == 0
        with pytest.raises(exceptions.BadRequest) as again:
            client.cancel_operation({"name": name})
        assert "already finished (CANCELLED)" in again.value.message
        gate.release.set()
        # Stopping the agent does not revive the run.
        assert client.get_evaluation_run(name=run_name).state == run.state

        # Deleting the operation forgets it; the run stays readable.
        client.delete_operation({"name": name})
        with pytest.raises(exceptions.NotFound):
            client.get_operation({"name": name})
        ops = client.list_operations({"name": "projects/acme/locations/us"})
        assert name not in [o.name for o in ops.operations]
        assert client.get_evaluation_run(name=run_name).name == run_name
    finally:
        gate.release.set()
        if grpc_server is not None:
            grpc_server.stop(grace=None)
