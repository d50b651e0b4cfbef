"""Vertex's judged metrics (`PointwiseMetric`, `PairwiseMetric`, the named templates) from
the real SDK's `EvalTask` against `assay serve`, judged by the server's judge — here
assay's stand-in judge server, scripted to rate what the prompt shows it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import vertexai
from google.auth.credentials import AnonymousCredentials
from service_server import RunningServer
from vertexai.preview.evaluation import (
    EvalTask,
    MetricPromptTemplateExamples,
    PairwiseMetric,
    PairwiseMetricPromptTemplate,
    PointwiseMetric,
    PointwiseMetricPromptTemplate,
)

from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinRequest

ROWS = [
    {"prompt": "Capital of France?", "response": "Paris.", "baseline_model_response": "Lyon."},
    {"prompt": "Capital of Italy?", "response": "Milan.", "baseline_model_response": "Rome."},
]
URL = "/v1beta1/projects/acme/locations/us-central1:evaluateInstances"


def rate(request: StandinRequest) -> str:
    """A judge that reads the rendered prompt: right capitals score 5, wrong ones 1."""
    prompt = request.messages[-1]["content"]
    if '"choice"' in prompt:
        # Pairwise: the candidate (response) is right in the first row only.
        choice = "CANDIDATE" if "Paris." in prompt else "BASELINE"
        return f'Thinking it over.\n{{"choice": "{choice}", "explanation": "{choice} is right"}}'
    score = 5 if "Paris." in prompt else 1
    return f'The response is checked.\n{{"score": {score}, "explanation": "rated {score}"}}'


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer(rate) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        yield server


def _serve(
    tmp_path: Path, start_server: Callable[..., RunningServer], judge: str | None
) -> RunningServer:
    server = start_server(Store.open(f"sqlite:///{tmp_path}/vertex.db"), auth=False)
    server._server.config.app.state.ctx.judge_model = judge  # as `--judge-model` sets it
    vertexai.init(
        project="acme",
        location="us-central1",
        api_endpoint=server.base_url,
        api_transport="rest",
        credentials=AnonymousCredentials(),
    )
    return server


def test_pointwise_and_pairwise_metrics_get_the_judges_scores(
    tmp_path: Path, start_server: Callable[..., RunningServer], standin: JudgeServer
) -> None:
    _serve(tmp_path, start_server, "openai:judge")
    correct = PointwiseMetric(
        metric="correct_capital",
        metric_prompt_template=PointwiseMetricPromptTemplate(
            criteria={"correct": "The response names the capital the prompt asks for."},
            rating_rubric={"5": "correct", "1": "wrong"},
        ),
    )
    better = PairwiseMetric(
        metric="better_capital",
        metric_prompt_template=PairwiseMetricPromptTemplate(
            criteria={"correct": "The response names the capital the prompt asks for."},
            rating_rubric={"A": "A is better", "B": "B is better", "SAME": "equal"},
        ),
    )
    coherence = MetricPromptTemplateExamples.Pointwise.COHERENCE
    table = (
        EvalTask(dataset=pd.DataFrame(ROWS), metrics=[correct, better, coherence])
        .evaluate()
        .metrics_table
    )
    assert list(table["correct_capital/score"]) == [5.0, 1.0]
    assert list(table["correct_capital/explanation"]) == ["rated 5", "rated 1"]
    assert list(table["coherence/score"]) == [5.0, 1.0]
    assert list(table["better_capital/pairwise_choice"]) == ["CANDIDATE", "BASELINE"]
    assert not any(math.isnan(v) for v in table["coherence/score"])
    # The judge saw each row's own values in the SDK's template.
    prompts = [r.messages[-1]["content"] for r in standin.requests]
    assert any("Capital of Italy?" in p and "Milan." in p for p in prompts)
    assert all(not re.search(r"\{response\}|\{prompt\}", p) for p in prompts)


def _pointwise(template: Any = "Rate {response}.", instance: Any = None) -> dict[str, Any]:
    json_instance = json.dumps({"response": "Paris."}) if instance is None else instance
    return {
        "pointwiseMetricInput": {
            "metricSpec": {"metricPromptTemplate": template},
            "instance": {"jsonInstance": json_instance},
        }
    }


def test_raw_output_bad_input_and_no_judge(
    tmp_path: Path, start_server: Callable[..., RunningServer], standin: JudgeServer
) -> None:
    server = _serve(tmp_path, start_server, "openai:judge")
    http = httpx.Client(base_url=server.base_url, timeout=30)
    raw = _pointwise()
    raw["pointwiseMetricInput"]["metricSpec"]["customOutputFormatConfig"] = {
        "returnRawOutput": True
    }
    reply = http.post(URL, json=raw)
    assert reply.status_code == 200, reply.text
    result = reply.json()["pointwiseMetricResult"]
    assert result["score"] == 5.0
    assert '"score": 5' in result["customOutput"]["rawOutputs"]["rawOutput"][0]

    bad = [
        (_pointwise(template=""), "pointwise_metric_input.metric_spec.metric_prompt_template"),
        (_pointwise(instance="{not json"), "pointwise_metric_input.instance.json_instance"),
        (_pointwise(instance="[1]"), "pointwise_metric_input.instance.json_instance"),
    ]
    for body, field in bad:
        reply = http.post(URL, json=body)
        assert reply.status_code == 400, reply.text
        assert field in reply.json()["error"]["message"], reply.text

    server._server.config.app.state.ctx.judge_model = None
    reply = http.post(URL, json=_pointwise())
    assert reply.status_code == 400
    assert reply.json()["error"]["status"] == "FAILED_PRECONDITION"
    assert "--judge-model" in reply.json()["error"]["message"]


def test_a_judge_out_of_shape_is_unavailable_not_a_score(
    tmp_path: Path, start_server: Callable[..., RunningServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    with JudgeServer("I would rather not say.") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        served = _serve(tmp_path, start_server, "openai:judge")
        reply = httpx.post(served.base_url + URL, json=_pointwise(), timeout=30)
        assert reply.status_code == 503, reply.text
        assert "rather not say" in reply.json()["error"]["message"]
        assert len(server.requests) == 2  # asked again once for the JSON answer


def test_assay_serve_judge_model_option(tmp_path: Path, standin: JudgeServer) -> None:
    import os
    import socket
    import subprocess
    import sys
    import time

    from typer.testing import CliRunner

    from assay.cli import app

    bad = CliRunner().invoke(app, ["serve", "--no-auth", "--judge-model", "nonsense"])
    assert bad.exit_code == 2 and "unknown judge model 'nonsense'" in bad.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "assay", "serve", "--no-auth", "--port", str(port),
               "--store", f"sqlite:///{tmp_path}/served.db", "--judge-model", "openai:judge",
               "--log-level", "warning"]  # fmt: skip
    process = subprocess.Popen(command, env=dict(os.environ), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                reply = httpx.post(f"http://127.0.0.1:{port}{URL}", json=_pointwise(), timeout=30)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)
        assert reply.status_code == 200, reply.text
        assert reply.json()["pointwiseMetricResult"] == {"score": 5.0, "explanation": "rated 5"}
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_client_evals_llm_metric_gets_the_judges_scores(
    tmp_path: Path, start_server: Callable[..., RunningServer], standin: JudgeServer
) -> None:
    from google.oauth2.credentials import Credentials
    from vertexai import types

    server = _serve(tmp_path, start_server, "openai:judge")
    client = vertexai.Client(
        project="acme",
        location="us-central1",
        credentials=Credentials(token="unused"),
        http_options={"base_url": server.base_url, "api_version": "v1beta1"},
    )
    metric = types.LLMMetric(
        name="capital", prompt_template="Is {response} the right answer to {prompt}? Rate 1-5."
    )
    rows = pd.DataFrame([{k: r[k] for k in ("prompt", "response")} for r in ROWS])
    result = client.evals.evaluate(dataset=rows, metrics=[metric])
    got = [
        c.response_candidate_results[0].metric_results["capital"] for c in result.eval_case_results
    ]
    assert [(g.score, g.explanation, g.error_message) for g in got] == [
        (5.0, "rated 5", None),
        (1.0, "rated 1", None),
    ]
    prompts = [r.messages[-1]["content"] for r in standin.requests]
    assert any("Is Milan. the right answer to Capital of Italy?" in p for p in prompts)

    http = httpx.Client(base_url=server.base_url, timeout=30)
    hosted = {"metrics": [{"predefinedMetricSpec": {"metricSpecName": "general_quality_v1"}}],
              "instance": {"response": {"text": "Paris."}}}  # fmt: skip
    reply = http.post(URL, json=hosted)
    assert reply.status_code == 501 and "predefinedMetricSpec" in reply.text
    empty = {"metrics": [{"llmBasedMetricSpec": {}}], "instance": {"response": {"text": "x"}}}
    reply = http.post(URL, json=empty)
    assert reply.status_code == 400 and "metrics[0].llm_based_metric_spec" in reply.text
