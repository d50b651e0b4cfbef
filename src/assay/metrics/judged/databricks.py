"""Databricks / MLflow agent-evaluation judges, with Databricks' output names (SPEC §3).

Answer judges give one yes/no per row: the score is 1.0 for `yes`, 0.0 for `no`, and
rows carry `{step}/llm_judged/{judge}/rating` (`yes`/`no`), `/rationale` and
`/error_message`, the summary `{step}/llm_judged/{judge}/rating/percentage` (safety:
`rating/average`), next to the Vertex-style `{judge}/score` columns. `{step}` is
`response`, except `retrieval` for context_sufficiency (as Databricks names it).
`chunk_relevance` rates each retrieved chunk; its score is the precision
(relevant ÷ retrieved) and its columns are `retrieval/llm_judged/chunk_relevance/
ratings|rationales|error_messages|precision`, summary `.../precision/average`.

A row passes a yes/no judge only on `yes` (default threshold 1.0), as in Databricks'
overall assessment; chunk_relevance has no default threshold (reported, not gating).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from assay.metrics.base import MetricOptions, mean
from assay.metrics.judged.base import JudgedMetric, JudgedOptions
from assay.metrics.registry import register
from assay.model.results import Score


def rating_of(value: float | None) -> str | None:
    """The Databricks rating for a yes/no score (None when there is no score)."""
    if value is None:
        return None
    return "yes" if value >= 1.0 else "no"


class _AnswerJudge(JudgedMetric):
    """A judge with one yes/no verdict per row."""

    family: ClassVar[str] = "databricks"
    default_threshold: ClassVar[float | None] = 1.0
    #: the Databricks step prefix of the output names
    step: ClassVar[str] = "response"
    #: the summary statistic Databricks reports for this judge
    aggregate: ClassVar[str] = "percentage"

    @classmethod
    def prefix(cls) -> str:
        return f"{cls.step}/llm_judged/{cls.name}"

    def row_columns(self, score: Score) -> dict[str, Any]:
        cols = super().row_columns(score)
        scored = score.value is not None
        cols[f"{self.prefix()}/rating"] = rating_of(score.value)
        cols[f"{self.prefix()}/rationale"] = score.explanation if scored else None
        cols[f"{self.prefix()}/error_message"] = None if scored else score.explanation
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        cols = super().summary_columns(values)
        cols[f"{self.prefix()}/rating/{self.aggregate}"] = mean(
            [1.0 if v >= 1.0 else 0.0 for v in values]
        )
        return cols


@register
class Correctness(_AnswerJudge):
    """Is the response correct against `expected_response` or `expected_facts`?"""

    name: ClassVar[str] = "correctness"
    description: ClassVar[str] = "LLM judge: response correct vs expected response/facts (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "response", "expected_response"}
    )


@register
class RelevanceToQuery(_AnswerJudge):
    """Does the response address the request?"""

    name: ClassVar[str] = "relevance_to_query"
    description: ClassVar[str] = "LLM judge: response relevant to the request (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response"})


@register
class Groundedness(_AnswerJudge):
    """Is the response supported by the retrieved context?"""

    name: ClassVar[str] = "groundedness"
    description: ClassVar[str] = "LLM judge: response supported by retrieved context (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "response", "retrieved_context"}
    )


@register
class Safety(_AnswerJudge):
    """Is the response free of harmful or toxic content?"""

    name: ClassVar[str] = "safety"
    description: ClassVar[str] = "LLM judge: no harmful or toxic content (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response"})
    aggregate: ClassVar[str] = "average"


@register
class ContextSufficiency(_AnswerJudge):
    """Is the retrieved context enough to produce the expected response?"""

    name: ClassVar[str] = "context_sufficiency"
    description: ClassVar[str] = "LLM judge: retrieved context sufficient for the expected response"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "retrieved_context", "expected_response"}
    )
    step: ClassVar[str] = "retrieval"


class GuidelineOptions(JudgedOptions):
    """`global_guidelines` apply to every row, in addition to each row's `guidelines`."""

    global_guidelines: list[str] | dict[str, list[str]] | None = None


@register
class GuidelineAdherence(_AnswerJudge):
    """Does the response follow every given guideline?"""

    name: ClassVar[str] = "guideline_adherence"
    description: ClassVar[str] = "LLM judge: response follows every guideline (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response", "guidelines"})
    options_model: ClassVar[type[MetricOptions]] = GuidelineOptions


@register
class ChunkRelevance(JudgedMetric):
    """Per retrieved chunk: relevant to the request? Score = precision."""

    name: ClassVar[str] = "chunk_relevance"
    description: ClassVar[str] = "LLM judge: relevant retrieved chunks / retrieved chunks"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "retrieved_context"})
    family: ClassVar[str] = "databricks"
    prefix: ClassVar[str] = "retrieval/llm_judged/chunk_relevance"

    def row_columns(self, score: Score) -> dict[str, Any]:
        cols = super().row_columns(score)
        for key in ("ratings", "rationales", "error_messages"):
            cols[f"{self.prefix}/{key}"] = score.details.get(key)
        cols[f"{self.prefix}/precision"] = score.value
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        cols = super().summary_columns(values)
        cols[f"{self.prefix}/precision/average"] = mean(values)
        return cols
