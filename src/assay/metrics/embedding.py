"""`embedding_similarity`: cosine similarity of the response and reference embeddings.

Embeddings come from an OpenAI-compatible `POST {base_url}/embeddings` endpoint (OpenAI,
vLLM, Ollama, LM Studio, llama.cpp server, proxies). Like the judges, the base URL is
the criterion's `base_url`, else `OPENAI_BASE_URL`, else OpenAI's; the key is
`OPENAI_API_KEY` (or the variable named by `api_key_env`); the model is `model`, else
`ASSAY_EMBEDDING_MODEL`, else `text-embedding-3-small`. One request embeds every text
of a case not already embedded; vectors are kept in memory per (endpoint, model, text)
for the life of the metric, so a reference shared by many cases is embedded once.

An endpoint that cannot be reached or answers an error leaves the case without a score
(`NOT_EVALUATED`) with the error text — never a similarity of 0.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import MetricOptions
from assay.metrics.lexical import NO_REFERENCE, reference_text
from assay.metrics.registry import register
from assay.metrics.response import ResponseMetric

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class EmbeddingOptions(MetricOptions):
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = Field(default=30.0, gt=0)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is all zeros."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


class EmbeddingError(Exception):
    """The endpoint could not embed the texts (kept as the metric's explanation)."""


@register
class EmbeddingSimilarity(ResponseMetric):
    """Cosine similarity of the response's and the reference's embeddings."""

    name: ClassVar[str] = "embedding_similarity"
    description: ClassVar[str] = (
        "cosine similarity of response and reference embeddings (OpenAI-compatible endpoint)"
    )
    needs: ClassVar[frozenset[str]] = frozenset({"response", "reference", "embeddings"})
    options_model: ClassVar[type[MetricOptions]] = EmbeddingOptions
    default_threshold: ClassVar[float | None] = 0.8
    score_range: ClassVar[tuple[float, float] | None] = (-1.0, 1.0)
    family: ClassVar[str] = "embeddings"

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        self._vectors: dict[tuple[str, str, str], list[float]] = {}

    def endpoint(self) -> tuple[str, str, str | None]:
        """(base URL, model, API key) as resolved now (environment included)."""
        opts = self.options
        assert isinstance(opts, EmbeddingOptions)
        base = opts.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        model = opts.model or os.environ.get("ASSAY_EMBEDDING_MODEL") or DEFAULT_MODEL
        return base.rstrip("/"), model, os.environ.get(opts.api_key_env) or None

    async def embed(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """Vectors of `texts`, fetching only those not embedded before."""
        base, model, key = self.endpoint()
        missing = sorted({t for t in texts if (base, model, t) not in self._vectors})
        if missing:
            for text, vector in zip(
                missing, await self._fetch(base, model, key, missing), strict=True
            ):
                self._vectors[(base, model, text)] = vector
        return {t: self._vectors[(base, model, t)] for t in texts}

    async def _fetch(
        self, base: str, model: str, key: str | None, texts: list[str]
    ) -> list[list[float]]:
        import httpx  # only when embeddings are fetched: not at every `assay` start

        opts = self.options
        assert isinstance(opts, EmbeddingOptions)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url = f"{base}/embeddings"
        try:
            async with httpx.AsyncClient(timeout=opts.timeout) as client:
                reply = await client.post(
                    url, json={"model": model, "input": texts}, headers=headers
                )
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embeddings endpoint {url} failed: {exc!r}") from None
        if reply.status_code != 200:
            raise EmbeddingError(
                f"embeddings endpoint {url} answered {reply.status_code}: {reply.text[:200]}"
            )
        try:
            data: Any = reply.json()["data"]
            vectors = [d["embedding"] for d in sorted(data, key=lambda d: d["index"])]
        except (ValueError, KeyError, TypeError):
            raise EmbeddingError(
                f"embeddings endpoint {url} gave an unreadable reply: {reply.text[:200]}"
            ) from None
        if len(vectors) != len(texts) or not all(
            isinstance(v, list) and v and all(isinstance(x, int | float) for x in v)
            for v in vectors
        ):
            raise EmbeddingError(f"embeddings endpoint {url} gave {len(vectors)} malformed vectors")
        return [[float(x) for x in v] for v in vectors]

    def score_text(self, response: str, reference: str | None) -> Score:
        raise TypeError("embedding_similarity is scored asynchronously (ascore_case)")

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        single = len(actual) == 1 and case.scenario is None
        pairs: list[tuple[str, str] | Score] = []
        for turn, exp in zip(actual, expected, strict=True):
            reference = reference_text(exp, case, single_turn=single)
            if reference is None:
                pairs.append(Score(None, NO_REFERENCE))
            elif turn.final_response is None and turn.error:
                pairs.append(Score(None, f"the agent failed before responding: {turn.error}"))
            else:
                pairs.append((turn.final_response or "", reference))
        texts = [t for p in pairs if isinstance(p, tuple) for t in p]
        try:
            vectors = await self.embed(texts) if texts else {}
        except EmbeddingError as exc:
            per = [p if isinstance(p, Score) else Score(None, str(exc)) for p in pairs]
            return self.make_result(None, per, explanation=str(exc))
        per = [
            p
            if isinstance(p, Score)
            else Score(cosine(vectors[p[0]], vectors[p[1]]), "cosine of the embeddings")
            for p in pairs
        ]
        return self.result_from_invocations(per)

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        import asyncio

        return asyncio.run(self.ascore_case(case, actual, expected))
