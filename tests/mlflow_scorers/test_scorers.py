"""assay's judges as MLflow scorers, in a real `mlflow.genai.evaluate` run (SQLite
tracking store), judged by the stand-in judge server over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import Feedback

from assay.mlflow import scorers
from assay.testing import JudgeServer, StandinRequest

DATA = [
    {
        "inputs": {"question": "What is the capital of France?"},
        "outputs": "Paris is the capital of France.",
        "expectations": {"expected_response": "Paris."},
    },
    {
        "inputs": {"question": "What is the capital of Peru?"},
        "outputs": "Lyon is the capital of Peru.",
        "expectations": {"expected_response": "Lima."},
    },
]


def verdict(request: StandinRequest) -> str:
    """Yes when the judged response names the expected city, with a rationale."""
    prompt = "\n".join(m["content"] for m in request.messages)
    right = "Paris is the capital" in prompt
    why = "The response names Paris, as the reference." if right else "It says Lyon, not Lima."
    return json.dumps({"rationale": why, "rating": "yes" if right else "no"})


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer(verdict) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        yield server


def test_a_scorer_returns_feedback_with_the_judges_rationale(judge: JudgeServer) -> None:
    correctness = scorers.correctness(judge="openai:stand-in")
    right = correctness(**DATA[0])
    assert isinstance(right, Feedback)
    assert (right.name, right.value) == ("correctness", "yes")
    assert right.rationale == "The response names Paris, as the reference."
    wrong = correctness(**DATA[1])
    assert (wrong.value, wrong.rationale) == ("no", "It says Lyon, not Lima.")


def test_mlflow_genai_evaluate_runs_assay_scorers(
    judge: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # MLflow's artifact root is ./mlruns: not in the checkout
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    # MLflow remembers the active experiment across stores; name one in this store.
    mlflow.set_experiment("assay-scorers")
    result = mlflow.genai.evaluate(
        data=DATA, scorers=[scorers.correctness(judge="openai:stand-in")]
    )
    assert result.metrics["correctness/mean"] == pytest.approx(0.5)  # yes -> 1, no -> 0
    table = result.result_df
    assert table is not None
    assert sorted(table["correctness/value"]) == ["no", "yes"]
    assert "It says Lyon, not Lima." in set(table["correctness/rationale"])


def test_no_judge_is_an_error_feedback_not_a_score(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    feedback = scorers.correctness()(**DATA[0])  # no judge model configured
    assert feedback.value is None and feedback.error is not None


def test_an_unknown_metric_fails_when_the_scorer_is_made() -> None:
    with pytest.raises(Exception, match="no_such_judge"):
        scorers.assay_scorer("no_such_judge")
