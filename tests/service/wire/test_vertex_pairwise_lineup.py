"""`assay compare --judge` and the Vertex SDK's `PairwiseMetric` through `assay serve`
report the same choices and win rates for the same answers and the same judge."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import vertexai
from google.auth.credentials import AnonymousCredentials
from service_server import RunningServer
from typer.testing import CliRunner
from vertexai.preview.evaluation import EvalTask, PairwiseMetric

from assay.cli import app
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinRequest
from assay.testing.standin_judges import longer_answer

runner = CliRunner()

#: (case id, prompt, run A's answer = the baseline, run B's answer = the candidate)
CASES = [
    ("c1", "Turn on the kitchen light", "Done.", "I switched on the kitchen light for you."),
    ("c2", "What is the thermostat at?", "It is set to 21 degrees in the living room.",
     "21 degrees."),
    ("c3", "Lock the door", "Locked.", "The front door is now locked."),
    ("c4", "Is the oven off?", "Yes, the oven is off.", "Yes, the oven is off."),
    ("c5", "Open the blinds", "Opening.", "Opened!!"),
]  # fmt: skip
TEMPLATE = (
    "Which is better?\n<baseline>{baseline_model_response}</baseline>\n"
    "<candidate>{response}</candidate>"
)


def judge(request: StandinRequest) -> str:
    """Prefers the longer answer: assay's both-orders prompt (`longer_answer`), or
    the Vertex SDK's pairwise prompt answered by `assay serve` (baseline, candidate)."""
    prompt = request.messages[-1]["content"]
    found = re.search(r"<baseline>(.*?)</baseline>\s*<candidate>(.*?)</candidate>", prompt, re.S)
    if found is None:
        return longer_answer(request).text
    baseline, candidate = found.group(1), found.group(2)
    choice = ("TIE" if len(baseline) == len(candidate)
              else "CANDIDATE" if len(candidate) > len(baseline) else "BASELINE")  # fmt: skip
    return json.dumps({"choice": choice, "explanation": f"{choice} is longer"})


def test_compare_and_the_vertex_sdk_agree(
    tmp_path: Path,
    start_server: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    for side, column in (("a", 2), ("b", 3)):
        (tmp_path / side).mkdir()
        rows = [{"id": c[0], "prompt": c[1], "response": c[column]} for c in CASES]
        (tmp_path / side / "home.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert runner.invoke(app, ["eval", str(tmp_path / side / "home.jsonl"), "--store",
                                   store]).exit_code in (0, 1)  # fmt: skip
    with JudgeServer(judge) as standin:
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
        args = ["compare", "latest~1", "latest", "--store", store, "--json"]
        args += ["--judge", "openai:standin", "--metric", "pairwise_longer"]
        result = runner.invoke(app, [*args, "--criteria", "The longer one."])
        assert result.exit_code == 0, result.output
        ours = json.loads(result.output)["pairwise"]

        server = start_server(Store.open(f"sqlite:///{tmp_path}/vertex.db"), auth=False)
        server._server.config.app.state.ctx.judge_model = "openai:judge"
        vertexai.init(project="acme", location="us-central1", api_endpoint=server.base_url,
                      api_transport="rest", credentials=AnonymousCredentials())  # fmt: skip
        metric = PairwiseMetric(metric="pairwise_longer", metric_prompt_template=TEMPLATE)
        data = pd.DataFrame([{"prompt": c[1], "baseline_model_response": c[2], "response": c[3]}
                             for c in CASES])  # fmt: skip
        vertex = EvalTask(dataset=data, metrics=[metric]).evaluate()
    choices = {r["case_id"]: r["pairwise_choice"] for r in ours["results"]}
    assert [choices[c[0]] for c in CASES] == list(
        vertex.metrics_table["pairwise_longer/pairwise_choice"]
    )
    assert [choices[c[0]] for c in CASES] == ["CANDIDATE", "BASELINE", "CANDIDATE", "TIE", "TIE"]
    for name in ("candidate_model_win_rate", "baseline_model_win_rate"):
        key = f"pairwise_longer/{name}"
        assert ours[key] == pytest.approx(vertex.summary_metrics[key]), key
    assert ours["pairwise_longer/candidate_model_win_rate"] == pytest.approx(0.4)
