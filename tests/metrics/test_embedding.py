"""embedding_similarity against the stand-in server's deterministic /v1/embeddings."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from assay.core.cases import EvalCase, Turn
from assay.core.results import Status
from assay.metrics.embedding import cosine
from assay.metrics.registry import build_metric
from assay.testing import JudgeServer, StandinReply
from assay.testing.standin_embeddings import embed


def _score(metric, response: str | None, reference: str | None):  # type: ignore[no-untyped-def]
    case = EvalCase(id="c", expected_response=reference)
    return asyncio.run(metric.ascore_case(case, [Turn(final_response=response)], [None]))


def test_similarity_is_the_cosine_of_the_endpoints_vectors() -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        metric = build_metric(
            "embedding_similarity", {"base_url": server.openai_base_url, "model": "emb-1"}
        )
        ref = "The parcel was shipped on Monday"
        resp = "Your parcel shipped Monday"
        result = _score(metric, resp, ref)
        assert result.score == pytest.approx(cosine(embed(resp), embed(ref)))
        assert 0.3 < result.score < 1.0
        assert _score(metric, ref, ref).score == pytest.approx(1.0)
        assert server.embedding_requests[0]["model"] == "emb-1"


def test_texts_are_embedded_once_per_endpoint_and_model() -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        metric = build_metric("embedding_similarity", {"base_url": server.openai_base_url})
        _score(metric, "a b c", "a b d")
        _score(metric, "a b c", "a b d")
        _score(metric, "a b e", "a b d")
        sent = [r["input"] for r in server.embedding_requests]
        assert sent == [["a b c", "a b d"], ["a b e"]]


def test_env_base_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ASSAY_EMBEDDING_MODEL", "env-model")
        metric = build_metric("embedding_similarity", 0.5)
        assert _score(metric, "same words", "same words").status == Status.PASSED
        assert server.embedding_requests[0]["model"] == "env-model"


def test_an_unreachable_endpoint_is_not_evaluated_with_the_error() -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        dead = server.openai_base_url
    metric = build_metric("embedding_similarity", {"base_url": dead, "timeout": 2})
    result = _score(metric, "a", "b")
    assert result.score is None and result.status == Status.NOT_EVALUATED
    assert result.explanation is not None and "embeddings endpoint" in result.explanation


def test_missing_reference_and_sync_scoring() -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        metric = build_metric("embedding_similarity", {"base_url": server.openai_base_url})
        assert metric.is_async
        missing = _score(metric, "a", None)
        assert missing.status == Status.NOT_EVALUATED
        assert missing.explanation is not None and "no reference response" in missing.explanation
        sync = metric.score_case(EvalCase(id="c", expected_response="x y"),
                                 [Turn(final_response="x y")], [None])  # fmt: skip
        assert sync.score == pytest.approx(1.0)


def test_the_standin_rejects_bad_embedding_requests() -> None:
    with JudgeServer(StandinReply(text="unused")) as server:
        bad = httpx.post(f"{server.openai_base_url}/embeddings", json={"input": [1]})
        assert bad.status_code == 400
        assert "input must be" in bad.json()["error"]["message"]
