"""Judge cost over each store backend (issue #38): a capped run's verdicts are in the
store's judge cache, a dry run counts them as cache hits, and a run with a higher cap
makes only the missing calls; the run's stored summary holds the cost."""

from __future__ import annotations

import pytest

import assay
from assay.models.cost import reply_for_schema
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

ROWS = [
    {"request": f"Question {i}?", "response": f"Answer {i}.", "expected_response": f"Answer {i}"}
    for i in range(3)
]


def _reply(request: StandinRequest) -> StandinReply:
    return StandinReply(reply_for_schema(request.json_schema), input_tokens=80, output_tokens=8)


def test_a_capped_run_is_resumed_from_the_stores_cache(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    kwargs = {"format": "mlflow", "judge": "openai:gpt-4o-mini", "store": store_url}
    metrics = ["correctness", "safety"]
    with JudgeServer(_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        capped = assay.evaluate(ROWS, metrics, max_judge_calls=4, concurrency=1, **kwargs)
        assert len(server.requests) == 4 and capped.summary["judge/refused"] == 2
        estimate = assay.evaluate(ROWS, metrics, dry_run=True, **kwargs)
        assert estimate.summary["judge/cache_hits"] == 4
        assert estimate.summary["judge/calls"] == 2
        full = assay.evaluate(ROWS, metrics, **kwargs)
        assert len(server.requests) == 6  # only the 2 missing calls
        assert full.summary["judge/cache_hits"] == 4
    with Store.open(store_url) as db:
        runs = db.list_runs(limit=5)
    stored = {run.id: run.summary for run in runs}
    assert stored[full.run_id]["judge/cost/correctness/openai:gpt-4o-mini/cache_hits"] >= 1
    assert stored[capped.run_id]["judge/max_calls"] == 4
    assert stored[capped.run_id]["judge/usd"] > 0
