"""Google's own CES client (`google-cloud-ces`, transport="rest") against a real service.

The client is used exactly as its users use it, with `api_endpoint` pointed at a
uvicorn server on 127.0.0.1; nothing is patched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1beta as ces
from service_server import RunningServer, create_key
from test_mcp import call, mcp_session
from test_runs import weather_agent

from assay.agents.callable import CallableAgent
from assay.store import Store

PARENT = "projects/acme/locations/us/apps/shop"


def rest_client(server: RunningServer, key: str | None = None) -> ces.EvaluationServiceClient:
    options: dict[str, Any] = {"api_endpoint": server.base_url}
    if key is not None:
        options["api_key"] = key
        return ces.EvaluationServiceClient(transport="rest", client_options=options)
    return ces.EvaluationServiceClient(
        transport="rest", client_options=options, credentials=AnonymousCredentials()
    )


def golden_evaluation(display_name: str, tags: list[str] | None = None) -> ces.Evaluation:
    step = ces.Evaluation.Step
    expect = ces.Evaluation.GoldenExpectation
    return ces.Evaluation(
        display_name=display_name,
        tags=tags or [],
        golden=ces.Evaluation.Golden(
            turns=[
                ces.Evaluation.GoldenTurn(
                    steps=[
                        step(user_input=ces.SessionInput(text="Weather in Paris?")),
                        step(
                            expectation=expect(
                                tool_call=ces.ToolCall(tool="get_weather", args={"city": "Paris"})
                            )
                        ),
                        step(
                            expectation=expect(
                                agent_response=ces.Message(
                                    role="agent", chunks=[ces.Chunk(text="Sunny.")]
                                )
                            )
                        ),
                    ]
                )
            ]
        ),
    )


def scenario_evaluation(display_name: str) -> ces.Evaluation:
    return ces.Evaluation(
        display_name=display_name,
        scenario=ces.Evaluation.Scenario(
            task="Book a table for two tonight",
            max_turns=6,
            rubrics=["The agent confirms the booking time"],
            user_goal_behavior=ces.Evaluation.Scenario.UserGoalBehavior.USER_GOAL_REJECTED,
        ),
    )


@pytest.fixture
def served(store: Store, start_server: Callable[..., RunningServer]) -> Iterator[RunningServer]:
    yield start_server(store, agent=CallableAgent(weather_agent))


def test_evaluation_lifecycle_through_the_client(served: RunningServer) -> None:
    key = create_key(served.store)
    client = rest_client(served, key)

    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather", ["smoke"]), evaluation_id="weather"
    )
    assert golden.name == f"{PARENT}/evaluations/weather"
    assert golden.etag and golden.create_time.year >= 2024
    scenario = client.create_evaluation(parent=PARENT, evaluation=scenario_evaluation("booking"))
    assert scenario.name.startswith(f"{PARENT}/evaluations/")
    behavior = scenario.scenario.user_goal_behavior
    assert behavior == ces.Evaluation.Scenario.UserGoalBehavior.USER_GOAL_REJECTED

    got = client.get_evaluation(name=golden.name)
    assert got.golden.turns[0].steps[1].expectation.tool_call.args["city"] == "Paris"

    pager = client.list_evaluations(request={"parent": PARENT, "page_size": 1})
    pages = list(pager.pages)
    assert [len(p.evaluations) for p in pages] == [1, 1]
    assert {e.name for p in pages for e in p.evaluations} == {golden.name, scenario.name}
    tagged = client.list_evaluations(request={"parent": PARENT, "filter": 'tags:"smoke"'})
    assert [e.name for e in tagged] == [golden.name]

    changed = client.update_evaluation(
        evaluation=ces.Evaluation(name=golden.name, description="v2", etag=golden.etag),
        update_mask={"paths": ["description"]},
    )
    assert changed.description == "v2" and changed.display_name == "weather"
    assert changed.etag != golden.etag
    with pytest.raises(exceptions.Conflict) as stale:  # HTTP 409, status ABORTED
        client.update_evaluation(
            evaluation=ces.Evaluation(name=golden.name, description="v3", etag=golden.etag),
            update_mask={"paths": ["description"]},
        )
    assert "etag" in stale.value.message
    with pytest.raises(exceptions.Conflict) as duplicate:  # HTTP 409, ALREADY_EXISTS
        client.create_evaluation(
            parent=PARENT, evaluation=golden_evaluation("other"), evaluation_id="weather"
        )
    assert "already exists" in duplicate.value.message


def test_run_evaluation_operation_runs_and_results(served: RunningServer) -> None:
    client = rest_client(served, create_key(served.store))
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    # The client sends these enums as numbers (proto3 JSON with enum-encoding=int).
    operation = client.run_evaluation(
        request=ces.RunEvaluationRequest(
            app=PARENT,
            evaluations=[golden.name],
            golden_run_method=ces.GoldenRunMethod.NAIVE,
            config=ces.EvaluationConfig(tool_call_behaviour=ces.EvaluationToolCallBehaviour.REAL),
            display_name="nightly",
        )
    )
    assert operation.operation.name.startswith("projects/acme/locations/us/operations/")
    response = operation.result(timeout=60)
    assert isinstance(response, ces.RunEvaluationResponse)
    run_name = response.evaluation_run
    assert run_name.startswith(f"{PARENT}/evaluationRuns/")
    assert operation.metadata.evaluation_run == run_name
    assert list(operation.metadata.evaluations) == [golden.name]

    run = client.get_evaluation_run(name=run_name)
    assert run.state == ces.EvaluationRun.EvaluationRunState.COMPLETED
    assert run.display_name == "nightly"
    assert run.golden_run_method == ces.GoldenRunMethod.NAIVE
    assert run.progress.total_count == 1 and run.progress.passed_count == 1
    assert [r.name for r in client.list_evaluation_runs(parent=PARENT)] == [run_name]

    results = list(client.list_evaluation_results(parent=golden.name))
    assert len(results) == 1
    result = results[0]
    assert result.name.startswith(f"{golden.name}/results/")
    assert result.evaluation_run == run_name
    assert result.evaluation_status == ces.EvaluationResult.Outcome.PASS
    assert result.execution_state == ces.EvaluationResult.ExecutionState.COMPLETED
    assert client.get_evaluation_result(name=result.name).name == result.name

    listed = list(client.list_evaluations(request={"parent": PARENT, "last_ten_results": True}))
    assert [r.name for r in listed[0].last_ten_results] == [result.name]
    plain = list(client.list_evaluations(parent=PARENT))
    assert list(plain[0].last_ten_results) == []
    assert list(client.get_evaluation(name=golden.name).evaluation_runs) == [run_name]

    # The operation stays readable through the operations mixin.
    again = client.get_operation({"name": operation.operation.name})
    assert again.done and not again.HasField("error")
    listed_ops = client.list_operations({"name": "projects/acme/locations/us"})
    assert [o.name for o in listed_ops.operations] == [operation.operation.name]

    # Deleting the evaluation deletes its results: a new one under the same id starts clean.
    client.delete_evaluation(name=golden.name)
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_result(name=result.name)
    fresh = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    assert list(fresh.evaluation_runs) == []
    assert list(client.list_evaluation_results(parent=fresh.name)) == []


def test_mcp_tools_see_the_default_namespace(served: RunningServer) -> None:
    """The MCP tools (and /v1) address projects/default/locations/global, only that."""
    key = create_key(served.store)
    client = rest_client(served, key)
    default = "projects/default/locations/global/apps/shop"
    made = client.create_evaluation(
        parent=default, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("elsewhere"), evaluation_id="elsewhere"
    )

    async def through_mcp(name: str) -> Any:
        async with mcp_session(served, key) as session:
            try:
                return await call(session, "get_evaluation", {"name": name})
            except AssertionError as failed:  # `call` asserts the tool succeeded
                return str(failed)

    seen = asyncio.run(through_mcp("apps/shop/evaluations/weather"))
    assert seen["displayName"] == "weather" and seen["etag"] == made.etag
    assert "NOT_FOUND" in asyncio.run(through_mcp("apps/shop/evaluations/elsewhere"))


def test_projects_and_locations_do_not_see_each_other(served: RunningServer) -> None:
    client = rest_client(served, create_key(served.store))
    other = "projects/other/locations/eu/apps/shop"
    mine = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation(name=f"{other}/evaluations/weather")
    assert list(client.list_evaluations(parent=other)) == []
    # The same id and display name may exist in each namespace.
    theirs = client.create_evaluation(
        parent=other, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    assert theirs.name == f"{other}/evaluations/weather" and theirs.etag != mine.etag

    operation = client.run_evaluation(request={"app": PARENT, "evaluations": [mine.name]})
    run_name = operation.result(timeout=60).evaluation_run
    foreign_run = run_name.replace(PARENT, other)
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_run(name=foreign_run)
    assert list(client.list_evaluation_runs(parent=other)) == []
    assert list(client.list_evaluation_results(parent=theirs.name)) == []
    assert len(list(client.list_evaluation_results(parent=mine.name))) == 1
    with pytest.raises(exceptions.NotFound):
        client.get_operation(
            {"name": operation.operation.name.replace("acme/locations/us", "other/locations/eu")}
        )
    assert client.list_operations({"name": "projects/other/locations/eu"}).operations == []
    client.delete_evaluation(name=theirs.name)
    assert client.get_evaluation(name=mine.name).etag == mine.etag

    # Locations: those of the project that hold data; any well-formed one can be read.
    listed = client.list_locations({"name": "projects/acme"})
    assert [(loc.name, loc.location_id) for loc in listed.locations] == [
        ("projects/acme/locations/us", "us")
    ]
    assert client.get_location({"name": "projects/acme/locations/asia"}).location_id == "asia"
    defaults = client.list_locations({"name": "projects/default"})
    assert [loc.location_id for loc in defaults.locations] == ["global"]


def _auth(server: RunningServer) -> dict[str, str]:
    return {"x-goog-api-key": create_key(server.store)}


def test_bad_input_gets_googles_status(served: RunningServer) -> None:
    http = httpx.Client(base_url=served.base_url, timeout=30, headers=_auth(served))
    client = rest_client(served, create_key(served.store))
    client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    cases: list[tuple[str, str, dict[str, Any] | None, int, str]] = [
        ("POST", f"/v1beta/{PARENT}:runEvaluation",
         {"evaluations": [f"{PARENT}/evaluations/weather"], "goldenRunMethod": 7},
         400, "Invalid value at 'golden_run_method' "
         "(type.googleapis.com/google.cloud.ces.v1beta.GoldenRunMethod), 7"),
        ("POST", f"/v1beta/{PARENT}/evaluations", {"displayName": "x", "colour": "red"},
         400, 'Unknown name "colour"'),
        ("POST", f"/v1beta/{PARENT}/evaluations",
         {"displayName": "x", "golden": {"turns": [{"steps": [{"usrInput": {}}]}]}},
         400, "at 'evaluation.golden.turns[0].steps[0]'"),
        ("GET", f"/v1beta/{PARENT}/evaluations?pageSize=2&colour=red", None,
         400, "Cannot bind query parameter. Field 'colour'"),
        ("GET", f"/v1beta/{PARENT}/evaluations/bad~id", None, 400,
         "is not a valid resource name; expected projects/{project}/locations/{location}/apps/"),
        ("POST", f"/v1beta/{PARENT}:runEvaluation",
         {"evaluations": ["projects/other/locations/us/apps/shop/evaluations/weather"]},
         400, "but the request is for projects/acme/locations/us"),
        ("GET", f"/v1beta/{PARENT}/evaluations/nope", None, 404, "not found"),
        ("POST", f"/v1beta/{PARENT}/evaluations", "{not json", 400, "Invalid JSON payload"),
        ("GET", "/v1beta/projects/acme/locations/us/operations/run-gone", None, 404, "not found"),
    ]  # fmt: skip
    for verb, path, body, status, text in cases:
        if isinstance(body, str):
            reply = http.request(verb, path, content=body)
        else:
            reply = http.request(verb, path, json=body)
        assert reply.status_code == status, (path, reply.text)
        assert text in reply.json()["error"]["message"], (path, reply.text)
    # A key is needed unless the server runs without auth.
    bare = httpx.get(f"{served.base_url}/v1beta/{PARENT}/evaluations", timeout=30)
    assert bare.status_code == 401
    assert "x-goog-api-key" in bare.json()["error"]["message"]


def test_unknown_enum_from_client_side_error_names_field(served: RunningServer) -> None:
    client = rest_client(served, create_key(served.store))
    with pytest.raises(exceptions.BadRequest) as bad:
        client.create_evaluation(
            parent=PARENT,
            evaluation={"display_name": "x", "scenario": {"task": "t", "user_goal_behavior": 9}},
        )
    assert "user_goal_behavior" in bad.value.message


def test_datasets_through_the_client(served: RunningServer) -> None:
    client = rest_client(served, create_key(served.store))
    made = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    dataset = client.create_evaluation_dataset(
        parent=PARENT,
        evaluation_dataset=ces.EvaluationDataset(display_name="smoke", evaluations=[made.name]),
        evaluation_dataset_id="smoke",
    )
    assert dataset.name == f"{PARENT}/evaluationDatasets/smoke"
    assert list(dataset.evaluations) == [made.name]
    assert list(client.get_evaluation(name=made.name).evaluation_datasets) == [dataset.name]
    renamed = client.update_evaluation_dataset(
        evaluation_dataset=ces.EvaluationDataset(name=dataset.name, display_name="smoke-2"),
        update_mask={"paths": ["display_name"]},
    )
    assert renamed.display_name == "smoke-2" and list(renamed.evaluations) == [made.name]
    assert [d.name for d in client.list_evaluation_datasets(parent=PARENT)] == [dataset.name]
    operation = client.run_evaluation(request={"app": PARENT, "evaluation_dataset": dataset.name})
    run = client.get_evaluation_run(name=operation.result(timeout=60).evaluation_run)
    assert list(run.evaluations) == [made.name]
    with pytest.raises(exceptions.BadRequest) as bad:  # another project's evaluation
        client.create_evaluation_dataset(
            parent=PARENT,
            evaluation_dataset=ces.EvaluationDataset(
                display_name="x", evaluations=[made.name.replace("acme", "other")]
            ),
        )
    assert "evaluation_dataset.evaluations[0]" in bad.value.message
    client.delete_evaluation_dataset(name=dataset.name)
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_dataset(name=dataset.name)
