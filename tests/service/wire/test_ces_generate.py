"""GenerateEvaluation and RunEvaluationResultMetrics through Google's CES client, over
REST and gRPC, against a real `assay serve` (the `client` fixture of test_ces_walk)."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from test_ces_rest import PARENT, golden_evaluation, scenario_evaluation
from test_ces_walk import client, wire

from assay.service.context import ServiceContext
from assay.service.settings import ServiceLimits

__all__ = ["client", "wire"]
# FAILED_PRECONDITION: HTTP 400 over REST (the client raises BadRequest), the status over gRPC.
PRECONDITION = (exceptions.FailedPrecondition, exceptions.BadRequest)
INVALID = (exceptions.InvalidArgument, exceptions.BadRequest)


def _run_once(client: ces.EvaluationServiceClient, name: str) -> ces.EvaluationResult:
    operation = client.run_evaluation(
        request=ces.RunEvaluationRequest(app=PARENT, evaluations=[name])
    )
    run = operation.result(timeout=60).evaluation_run
    results = [r for r in client.list_evaluation_results(parent=name) if r.evaluation_run == run]
    assert len(results) == 1
    return results[0]


def _conversation(result: ces.EvaluationResult) -> str:
    evaluation, result_id = result.name.split("/evaluations/")[1].split("/results/")
    return f"{PARENT}/conversations/{evaluation}-{result_id}"


def test_generate_a_golden_evaluation_from_a_recorded_conversation(
    client: ces.EvaluationServiceClient,
) -> None:
    # The agent asks for Paris's weather, not Rome's, so this golden fails...
    recorded = golden_evaluation("weather")
    recorded.golden.turns[0].steps[1].expectation.tool_call.args = {"city": "Rome"}
    source = client.create_evaluation(parent=PARENT, evaluation=recorded, evaluation_id="w")
    first = _run_once(client, source.name)
    assert first.evaluation_status == ces.EvaluationResult.Outcome.FAIL

    # ... and the evaluation generated from its conversation expects what it did.
    operation = client.generate_evaluation(conversation=_conversation(first))
    generated = operation.result(timeout=30)
    assert isinstance(generated, ces.Evaluation)
    assert generated.name.startswith(f"{PARENT}/evaluations/")
    assert client.get_evaluation(name=generated.name) == generated
    steps = generated.golden.turns[0].steps
    assert steps[0].user_input.text == "Weather in Paris?"
    calls = [s.expectation.tool_call for s in steps if s.expectation.tool_call.tool]
    assert [(c.tool, dict(c.args)) for c in calls] == [("get_weather", {"city": "Paris"})]
    replies = [s.expectation.agent_response for s in steps if s.expectation.agent_response.chunks]
    assert [r.chunks[0].text for r in replies] == ["Sunny."]
    # The operation is stored like CES's: readable and listed until deleted.
    assert client.get_operation({"name": operation.operation.name}).done
    listed = client.list_operations({"name": "projects/acme/locations/us"}).operations
    assert operation.operation.name in [o.name for o in listed]
    client.delete_operation({"name": operation.operation.name})
    with pytest.raises(exceptions.NotFound):
        client.get_operation({"name": operation.operation.name})

    # A run of the generated evaluation against the same agent passes.
    assert _run_once(client, generated.name).evaluation_status == ces.EvaluationResult.Outcome.PASS


def test_generate_refuses_what_it_cannot_make(client: ces.EvaluationServiceClient) -> None:
    source = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="w"
    )
    conversation = _conversation(_run_once(client, source.name))
    with pytest.raises(PRECONDITION, match=r"SCENARIO.*--judge-model"):
        client.generate_evaluation(
            request=ces.GenerateEvaluationRequest(
                conversation=conversation,
                evaluation_type=ces.GenerateEvaluationRequest.EvaluationType.SCENARIO,
            )
        )
    with pytest.raises(exceptions.NotFound, match="LIVE"):
        client.generate_evaluation(
            request=ces.GenerateEvaluationRequest(
                conversation=conversation, source=ces.Conversation.Source.LIVE
            )
        )
    with pytest.raises(exceptions.NotFound):
        client.generate_evaluation(conversation=f"{PARENT}/conversations/w-0000000000000000-7")
    with pytest.raises(INVALID, match="conversation"):
        client.generate_evaluation(conversation=f"{PARENT}/conversations/nodash")
    # An enum number the client's enum lacks (gRPC passes it through as it is).
    unknown = ces.GenerateEvaluationRequest(conversation=conversation)
    ces.GenerateEvaluationRequest.pb(unknown).evaluation_type = 9
    with pytest.raises(INVALID, match="evaluation_type"):
        client.generate_evaluation(request=unknown)


def test_run_metrics_again_scores_the_recorded_conversation_against_the_evaluation_now(
    client: ces.EvaluationServiceClient,
) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="w"
    )
    result = _run_once(client, golden.name)
    assert result.evaluation_status == ces.EvaluationResult.Outcome.PASS
    again = client.run_evaluation_result_metrics(evaluation_result_id=result.name)
    answer = again.result(timeout=30)
    assert isinstance(answer, ces.RunEvaluationResultMetricsResponse)
    assert answer.status == ces.EvaluationResult.Outcome.PASS

    # Expect another city now: the same recorded conversation fails the changed evaluation.
    changed = golden_evaluation("weather")
    changed.golden.turns[0].steps[1].expectation.tool_call.args = {"city": "Rome"}
    changed.name, changed.etag = golden.name, golden.etag
    client.update_evaluation(evaluation=changed, update_mask={"paths": ["golden"]})
    answer = client.run_evaluation_result_metrics(evaluation_result_id=result.name).result(30)
    assert answer.status == ces.EvaluationResult.Outcome.FAIL
    # The stored result stays the record of its run.
    kept = client.get_evaluation_result(name=result.name)
    assert kept.evaluation_status == ces.EvaluationResult.Outcome.PASS

    with pytest.raises(exceptions.NotFound):
        client.run_evaluation_result_metrics(
            evaluation_result_id=f"{golden.name}/results/0000000000000000-3"
        )
    with pytest.raises(INVALID, match="evaluation_result_id"):
        client.run_evaluation_result_metrics(evaluation_result_id=f"{golden.name}/results/x")


def test_run_metrics_of_a_scenario_says_it_needs_a_run(client: ces.EvaluationServiceClient) -> None:
    scenario = client.create_evaluation(
        parent=PARENT, evaluation=scenario_evaluation("booking"), evaluation_id="s"
    )
    result = _run_once(client, scenario.name)
    with pytest.raises(PRECONDITION, match="judge"):
        client.run_evaluation_result_metrics(evaluation_result_id=result.name)


def test_generate_a_scenario_with_the_servers_judge(
    wire: tuple[ces.EvaluationServiceClient, ServiceContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, ctx = wire
    from assay.testing.judge_server import JudgeServer, StandinRequest

    prompts: list[str] = []

    def writer(request: StandinRequest) -> str:
        prompts.append(request.messages[-1]["content"])
        return (
            "Here it is.\n"
            '{"task": "You want the weather in Paris.", "rubrics": ["The agent gives the weather"]}'
        )

    source = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="w"
    )
    conversation = _conversation(_run_once(client, source.name))
    with JudgeServer(writer) as standin:
        monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        ctx.judge_model = "openai:judge"  # as `assay serve --judge-model` sets it
        request = ces.GenerateEvaluationRequest(
            conversation=conversation,
            evaluation_type=ces.GenerateEvaluationRequest.EvaluationType.SCENARIO,
        )
        generated = client.generate_evaluation(request=request).result(timeout=30)
    assert generated.scenario.task == "You want the weather in Paris."
    assert list(generated.scenario.rubrics) == ["The agent gives the weather"]
    assert generated.scenario.max_turns == 2
    assert client.get_evaluation(name=generated.name) == generated
    # The judge read the recorded conversation.
    assert "user: Weather in Paris?" in prompts[0]
    assert 'tool call: get_weather({"city": "Paris"})' in prompts[0]


def test_run_metrics_of_a_scenario_with_the_servers_judge(
    wire: tuple[ces.EvaluationServiceClient, ServiceContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from assay.service import runs
    from assay.store.namespace import Namespace, namespace_scope
    from assay.testing.judge_server import JudgeServer
    from assay.testing.standin_schema import schema_script

    client, ctx = wire
    scenario = client.create_evaluation(
        parent=PARENT, evaluation=scenario_evaluation("booking"), evaluation_id="s"
    )
    # The stand-in plays the simulated user (plain text) and answers each judge's JSON
    # schema with a valid instance.
    with JudgeServer(schema_script("A table for two tonight, please.")) as standin:
        monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        # CES's RunEvaluationRequest has no user model: start the simulated run as the
        # /v1 API does, in the client's project and location.
        ctx.limits = ServiceLimits(allowed_models=("openai:u",))  # as --allow-model does
        with namespace_scope(Namespace("acme", "us")):
            started = runs.start_run(
                ctx, "shop", {"evaluations": ["apps/shop/evaluations/s"], "userModel": "openai:u"}
            )
        run = f"{PARENT}/evaluationRuns/{started['metadata']['evaluationRun'].rsplit('/', 1)[-1]}"
        deadline = time.monotonic() + 60
        while client.get_evaluation_run(name=run).state.name == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        result = next(iter(client.list_evaluation_results(parent=scenario.name)))
        asked = len(standin.requests)
        ctx.judge_model = "openai:judge"
        answer = client.run_evaluation_result_metrics(evaluation_result_id=result.name)
        status = answer.result(timeout=60).status
        judged = [r.messages[-1]["content"] for r in standin.requests[asked:]]
    assert status in (ces.EvaluationResult.Outcome.PASS, ces.EvaluationResult.Outcome.FAIL)
    # The scenario's judges read the recorded conversation and the task.
    assert judged and any("Book a table for two tonight" in p for p in judged)
    assert any("A table for two tonight, please." in p for p in judged)
