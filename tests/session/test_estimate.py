"""`assay.evaluate(..., dry_run=True)` and the judge caps from Python (issue #38)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError
from assay.models.cost import reply_for_schema
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

ROWS = [
    {"request": f"Capital number {i}?", "response": f"City {i}.", "expected_response": f"City {i}"}
    for i in range(4)
]


def _reply(request: StandinRequest) -> StandinReply:
    return StandinReply(reply_for_schema(request.json_schema), input_tokens=50, output_tokens=5)


def test_evaluate_dry_run_predicts_the_calls_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    metrics = ["correctness", "final_response_match_v2"]
    with JudgeServer(_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        kwargs = {"format": "mlflow", "judge": "openai:gpt-4o-mini", "store": store}
        estimate = assay.evaluate(ROWS, metrics, dry_run=True, **kwargs)
        assert server.requests == [] and estimate.cases == []
        summary = estimate.summary
        assert summary["dry_run"] is True
        assert summary["judge/calls"] == 4 + 4 * 5
        assert summary["judge/cost/correctness/openai:gpt-4o-mini/calls"] == 4
        assert summary["agent/calls"] == 0
        result = assay.evaluate(ROWS, metrics, **kwargs)
        assert len(server.requests) == summary["judge/calls"]
        assert result.summary["judge/calls"] == summary["judge/calls"]
        assert json.dumps(result.summary)  # the cost keys are plain JSON


def test_evaluate_max_judge_calls_leaves_the_rest_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with JudgeServer(_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        result = assay.evaluate(
            ROWS, ["correctness", "response_match_score"], format="mlflow",
            judge="openai:gpt-4o-mini", max_judge_calls=2, concurrency=1,
        )  # fmt: skip
        assert len(server.requests) == 2
    judged = [c.metrics["correctness"] for c in result.cases]
    assert sum(1 for m in judged if m.score is None) == 2
    assert all(
        m.explanation is not None and m.explanation.startswith("judge budget reached")
        for m in judged
        if m.score is None
    )
    # The deterministic metric is scored for every case: nothing else is lost.
    assert all(c.metrics["response_match_score"].score is not None for c in result.cases)
    assert result.summary["judge/refused"] == 2


def test_evaluate_rejects_a_bad_cap() -> None:
    with pytest.raises(ConfigError, match="--max-judge-usd must be a positive number"):
        assay.evaluate(ROWS, ["correctness"], format="mlflow", dry_run=True, max_judge_usd=0)


def test_a_ces_goldens_expectations_stand_in_for_the_agents_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CES golden keeps the agent's expected reply in its expectations, not in the
    # turn's response: the estimate acts them out, so a judge of turns with a response
    # (hallucination) is counted as the run with an agent then calls it.
    from assay.core.cases import Step, ToolCall, Turn

    golden = {
        "displayName": "paris",
        "golden": {
            "turns": [
                {
                    "steps": [
                        {"userInput": {"text": "Weather in Paris?"}},
                        {
                            "expectation": {
                                "toolCall": {"tool": "get_weather", "args": {"city": "Paris"}}
                            }
                        },
                        {"expectation": {"agentResponse": {"chunks": [{"text": "Sunny."}]}}},
                    ]
                }
            ]
        },
    }
    path = tmp_path / "paris.json"
    path.write_text(json.dumps(golden), encoding="utf-8")

    def agent(text: str) -> Turn:
        call = ToolCall(name="get_weather", args={"city": "Paris"})
        return Turn(steps=[Step(tool_call=call)], final_response="Sunny.")

    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    metrics = ["semantic_similarity", "hallucination"]
    with JudgeServer(_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        kwargs = {"agent": agent, "judge": "openai:gpt-4o-mini"}
        estimate = assay.evaluate(str(path), metrics, dry_run=True, **kwargs).summary
        assert server.requests == []
        assert estimate["judge/cost/hallucination/openai:gpt-4o-mini/calls"] == 1
        assert estimate["judge/cost/semantic_similarity/openai:gpt-4o-mini/calls"] == 1
        result = assay.evaluate(str(path), metrics, **kwargs)
    assert len(server.requests) == estimate["judge/calls"] == 2
    assert result.summary["judge/calls"] == 2


def test_a_dry_run_with_judge_batch_prices_a_judge_without_a_key_at_batch_prices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No API key: the judge's client cannot be built, its backend's batch interface is
    # still known, so its calls are priced as the batch run would pay them.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    kwargs = {"format": "mlflow", "judge": "anthropic:claude-3-5-haiku", "dry_run": True}
    batched = assay.evaluate(ROWS, ["correctness"], judge_batch=True, **kwargs).summary
    live = assay.evaluate(ROWS, ["correctness"], **kwargs).summary
    assert batched["judge/calls"] == live["judge/calls"] == 4
    assert batched["judge/batched_calls"] == 4 and live["judge/batched_calls"] == 0
    assert batched["judge/usd"] == pytest.approx(live["judge/usd"] / 2)
    assert live["judge/usd"] > 0
