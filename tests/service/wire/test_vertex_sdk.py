"""The Vertex AI SDK's own evaluation (`EvalTask`) against a real `assay serve`.

`vertexai.init(api_endpoint=..., api_transport="rest")` points the SDK at the server;
every computation metric is then one real `evaluateInstances` call per row, and the
numbers must be the ones `assay eval` gives on the same rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import vertexai
from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1beta1.types import evaluation_service as vertex_types
from service_server import RunningServer
from vertexai.preview.evaluation import EvalTask
from vertexai.preview.evaluation.metrics import Rouge, TrajectorySingleToolUse

from assay.api import evaluate
from assay.service.wire import vertex
from assay.store import Store

ROWS: list[dict[str, Any]] = [
    {
        "prompt": "Weather in Paris?",
        "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
        "response": "This is a test candidate response.",
        "reference": "This is a test reference.",
    },
    {
        "prompt": "Book and pay",
        "predicted_trajectory": [
            {"tool_name": "pay", "tool_input": {"amount": 10}},
            {"tool_name": "book", "tool_input": {"table": 2}},
        ],
        "reference_trajectory": [
            {"tool_name": "book", "tool_input": {"table": 2}},
            {"tool_name": "pay", "tool_input": {"amount": 10}},
            {"tool_name": "confirm", "tool_input": {}},
        ],
        "response": "Booked the running shoes table",
        "reference": "The table is booked and paid",
    },
    {
        "prompt": "Nothing to do",
        "predicted_trajectory": [],
        "reference_trajectory": [],
        "response": "ok",
        "reference": "ok",
    },
]
TRAJECTORY = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
]


@pytest.fixture
def served(tmp_path: Path, start_server: Callable[..., RunningServer]) -> Iterator[RunningServer]:
    # evaluateInstances keeps nothing: one SQLite store is enough.
    server = start_server(Store.open(f"sqlite:///{tmp_path}/vertex.db"), auth=False)
    vertexai.init(
        project="acme",
        location="us-central1",
        api_endpoint=server.base_url,
        api_transport="rest",
        credentials=AnonymousCredentials(),
    )
    yield server


def _assay_scores(metrics: dict[str, Any]) -> dict[str, list[float | None]]:
    result = evaluate(ROWS, metrics=metrics)
    return {name: [case.metrics[name].score for case in result.cases] for name in metrics}


def test_eval_task_gets_assays_numbers(served: RunningServer) -> None:
    rouge = Rouge(rouge_type="rouge1", use_stemmer=True)
    single = TrajectorySingleToolUse(tool_name="pay")
    task = EvalTask(dataset=pd.DataFrame(ROWS), metrics=[*TRAJECTORY, single, rouge])
    table = task.evaluate().metrics_table

    rouge_name, rouge_options = vertex._rouge({"rougeType": "rouge1", "useStemmer": True})
    expected = _assay_scores(
        {
            **dict.fromkeys(TRAJECTORY),
            "trajectory_single_tool_use": {"tool_name": "pay"},
            rouge_name: rouge_options or None,
        }
    )
    columns = {
        **{m: m for m in TRAJECTORY},
        "trajectory_single_tool_use": "trajectory_single_tool_use",
    }
    columns[rouge_name] = "rouge"
    for name, column in columns.items():
        got = list(table[f"{column}/score"])
        assert not any(math.isnan(v) for v in got), (column, got)
        # The wire's score is a proto float (32 bits), as on Google's service.
        assert got == pytest.approx(expected[name], abs=1e-6), (column, got, expected[name])
    assert list(table["trajectory_exact_match/score"]) == [1.0, 0.0, 1.0]
    assert list(table["trajectory_precision/score"]) == [1.0, 1.0, 1.0]
    assert list(table["trajectory_recall/score"]) == pytest.approx([1.0, 2 / 3, 1.0])
    assert table["rouge/score"][0] == pytest.approx(8 / 11, abs=1e-6)


TEXT_METRICS = ["exact_match", "bleu", "rouge_1", "rouge_2", "rouge_l", "rouge_l_sum"]


def test_text_metrics_get_assays_numbers(served: RunningServer) -> None:
    table = EvalTask(dataset=pd.DataFrame(ROWS), metrics=TEXT_METRICS).evaluate().metrics_table
    expected = _assay_scores(dict.fromkeys(TEXT_METRICS))
    for name in TEXT_METRICS:
        got = list(table[f"{name}/score"])
        assert not any(math.isnan(v) for v in got), (name, got)
        assert got == pytest.approx(expected[name], abs=1e-6), (name, got, expected[name])
    assert list(table["exact_match/score"]) == [0.0, 0.0, 1.0]


def _message(*calls: tuple[str, dict[str, Any]]) -> str:
    tool_calls = [{"name": name, "arguments": args} for name, args in calls]
    return json.dumps({"content": "", "tool_calls": tool_calls})


TOOL_METRICS = ["tool_call_valid", "tool_name_match", "tool_parameter_key_match",
                "tool_parameter_kv_match"]  # fmt: skip
TOOL_ROWS = [
    {"response": _message(("get_weather", {"city": "Paris"})),
     "reference": _message(("get_weather", {"city": "Paris"}))},
    {"response": _message(("get_weather", {"city": "paris ", "unit": "C"})),
     "reference": _message(("get_weather", {"city": "Paris"}))},
    {"response": "no tool call at all", "reference": _message(("book", {"table": 2}))},
]  # fmt: skip


def test_tool_call_metrics_get_assays_numbers(served: RunningServer) -> None:
    task = EvalTask(dataset=pd.DataFrame(TOOL_ROWS), metrics=TOOL_METRICS)
    table = task.evaluate().metrics_table
    # assay eval on the same rows, their tool-call strings read as the rows' calls.
    rows = [
        vertex._row(vertex.FAMILIES["toolNameMatch"], {"prediction": r["response"],
                    "reference": r["reference"]}, "row")
        for r in TOOL_ROWS
    ]  # fmt: skip
    result = evaluate(rows, metrics=dict.fromkeys(TOOL_METRICS))
    for name in TOOL_METRICS:
        got = list(table[f"{name}/score"])
        want = [case.metrics[name].score for case in result.cases]
        assert got == pytest.approx(want, abs=1e-6), (name, got, want)
    assert list(table["tool_call_valid/score"]) == [1.0, 1.0, 0.0]
    assert list(table["tool_name_match/score"]) == [1.0, 1.0, 0.0]
    assert list(table["tool_parameter_key_match/score"]) == [1.0, 0.5, 0.0]


def test_families_are_the_sdks_own_fields() -> None:
    request = vertex_types.EvaluateInstancesRequest.pb().DESCRIPTOR
    response = vertex_types.EvaluateInstancesResponse.pb().DESCRIPTOR
    inputs = {f.json_name: f for f in request.fields}
    results = {f.json_name: f for f in response.fields}
    for stem, family in vertex.FAMILIES.items():
        field = inputs[f"{stem}Input"]
        spec = field.message_type.fields_by_name["metric_spec"].message_type
        assert set(family.spec_fields) == {f.json_name for f in spec.fields}, stem
        instance = field.message_type.fields_by_name["instances"].message_type
        assert set(family.instance_fields) <= {f.json_name for f in instance.fields}, stem
        values = results[f"{stem}Results"].message_type
        assert f"{stem}MetricValues" in {f.json_name for f in values.fields}, stem


def test_wire_variants_and_bad_input(served: RunningServer) -> None:
    http = httpx.Client(base_url=served.base_url, timeout=30)
    call = {"tool_calls": [{"tool_name": "search", "tool_input": '{"q": "x"}'}]}
    # The newer client: an extra '/' before the verb, snake_case keys.
    reply = http.post(
        "/v1beta1/projects/acme/locations/us-central1/:evaluateInstances",
        json={
            "trajectory_exact_match_input": {
                "metric_spec": {},
                "instances": [{"predicted_trajectory": call, "reference_trajectory": call}],
            }
        },
    )
    assert reply.status_code == 200, reply.text
    assert reply.json() == {
        "trajectoryExactMatchResults": {"trajectoryExactMatchMetricValues": [{"score": 1.0}]}
    }
    base = "/v1beta1/projects/acme/locations/us-central1:evaluateInstances"
    bad: list[tuple[dict[str, Any], int, str]] = [
        (
            {"trajectoryExactMatchInput": {"instances": [{"predictedTrajectory": {"toolCalls": [
                {"toolName": "s", "toolInput": "{not json"}]}}]}},
            400,
            "trajectory_exact_match_input.instances[0].predicted_trajectory.tool_calls[0].tool_input",
        ),
        ({"rougeInput": {"metricSpec": {"rougeType": "rouge9"}, "instances": [{}]}}, 400,
         "rouge_type"),
        ({"rougeInput": {"metricSpec": {}, "instances": [{"prediction": "a", "colour": 1}]}}, 400,
         'Unknown name "colour"'),
        ({"trajectoryRecallInput": {"metricSpec": {}, "instances": []}}, 400, "non-empty"),
        ({"fluencyInput": {"instance": {}}}, 501, "does not compute fluencyInput"),
        ({}, 400, "exactly one <metric>Input"),
    ]  # fmt: skip
    for body, status, text in bad:
        reply = http.post(base, json=body)
        assert reply.status_code == status, (body, reply.text)
        assert text in reply.json()["error"]["message"], reply.text


# The newer SDK: vertexai.Client().evals.evaluate() sends these to evaluateInstances.
CLIENT_METRICS = ["exact_match", "bleu", "rouge_1", "rouge_l_sum"]


def _client_scores(
    served: RunningServer, rows: list[dict[str, Any]], names: list[str]
) -> tuple[dict[str, list[float | None]], dict[str, float | None]]:
    """Per-row scores and means of `vertexai.Client().evals.evaluate()` against assay."""
    from google.oauth2.credentials import Credentials
    from vertexai import types

    # A fixed token: google-genai sends it as a Bearer token and never refreshes it
    # (AnonymousCredentials would be refreshed, and fail); with auth on, an assay API key.
    client = vertexai.Client(
        project="acme",
        location="us-central1",
        credentials=Credentials(token="unused"),
        http_options={"base_url": served.base_url, "api_version": "v1beta1"},
    )
    result = client.evals.evaluate(
        dataset=pd.DataFrame(rows), metrics=[types.Metric(name=n) for n in names]
    )
    got: dict[str, list[float | None]] = {n: [] for n in names}
    for case in result.eval_case_results:
        for name, value in case.response_candidate_results[0].metric_results.items():
            assert value.error_message is None, (name, value.error_message)
            got[name].append(value.score)
    return got, {s.metric_name: s.mean_score for s in result.summary_metrics}


def test_client_evals_evaluate_gets_assays_numbers(served: RunningServer) -> None:
    rows = [{k: r[k] for k in ("prompt", "response", "reference")} for r in ROWS]
    # The SDK sends rouge_1 as rougeType rouge1 and rouge_l_sum as rougeLsum, no stemmer.
    got, means = _client_scores(served, rows, CLIENT_METRICS)
    expected = evaluate(rows, metrics=dict.fromkeys(CLIENT_METRICS))
    for name in CLIENT_METRICS:
        want = [case.metrics[name].score for case in expected.cases]
        assert got[name] == pytest.approx(want, abs=1e-6), (name, got[name], want)
    assert got["exact_match"] == [0.0, 0.0, 1.0]
    assert means["exact_match"] == pytest.approx(1 / 3)

    tool_rows = [{"prompt": "tools", **r} for r in TOOL_ROWS]
    got, _means = _client_scores(served, tool_rows, TOOL_METRICS)
    wire_rows = [
        vertex._row(vertex.FAMILIES["toolNameMatch"], {"prediction": r["response"],
                    "reference": r["reference"]}, "row")
        for r in TOOL_ROWS
    ]  # fmt: skip
    expected = evaluate(wire_rows, metrics=dict.fromkeys(TOOL_METRICS))
    for name in TOOL_METRICS:
        want = [case.metrics[name].score for case in expected.cases]
        assert got[name] == pytest.approx(want, abs=1e-6), (name, got[name], want)
    assert got["tool_parameter_key_match"] == [1.0, 0.5, 0.0]
