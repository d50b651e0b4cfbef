"""assay's judged metrics as MLflow 3 scorers (`mlflow.genai.evaluate(data, scorers=[...])`).

Each factory returns an MLflow `Scorer` named after the metric. Called by MLflow with a
row's `inputs`, `outputs` and `expectations` (MLflow's keys: `expected_response`,
`expected_facts`, `guidelines`, `retrieved_context`), it scores the row with assay's
metric of that name — the same prompt, sampling, voting and parsing as `assay eval` —
and returns a `Feedback`: `"yes"` / `"no"` for the Databricks judges (as MLflow's own
judges answer), the score for the others, the judge's rationale, and an error instead
of a value when the judge could not score (never a made-up 0).

The judge is a model string as `--judge` takes it (`openai:NAME`, `gemini-*`,
`anthropic:NAME`, `local:PATH.gguf`); `criterion` passes a metric's options (threshold,
rubrics, samples, ...) as in `test_config.json`.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
from typing import Any

from assay.errors import ConfigError

INSTALL_HINT = "pip install -e '.[mlflow]'"

# The Databricks judges answer yes / no; MLflow's own versions report those values.
YES_NO = frozenset(
    {
        "correctness",
        "relevance_to_query",
        "groundedness",
        "safety",
        "chunk_relevance",
        "context_sufficiency",
        "guideline_adherence",
    }
)
_REQUEST_KEYS = ("request", "question", "query", "input", "prompt", "inputs")
_RESPONSE_KEYS = ("response", "output", "answer", "content", "text")


def _require_mlflow() -> None:
    if importlib.util.find_spec("mlflow") is None:
        raise ConfigError(f"assay.mlflow.scorers needs the mlflow extra: {INSTALL_HINT}")


def _text(value: object, keys: Sequence[str]) -> str | None:
    """The text of an MLflow `inputs` / `outputs` value (a string, a dict, chat messages)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                return _text(value[key], keys)
        if "messages" in value:
            return _text(value["messages"], keys)
        choices = value.get("choices")
        if isinstance(choices, list) and choices:
            return _text((choices[0] or {}).get("message"), keys)
        if len(value) == 1:
            return _text(next(iter(value.values())), keys)
    if isinstance(value, list) and value and isinstance(value[-1], Mapping):
        for message in reversed(value):  # chat messages: the last user / assistant text
            if isinstance(message.get("content"), str):
                return str(message["content"])
    return json.dumps(value, default=str, ensure_ascii=False)


def row_for(
    inputs: object, outputs: object, expectations: Mapping[str, object] | None
) -> dict[str, Any]:
    """An MLflow-format row assay reads, from a scorer call's arguments."""
    row: dict[str, Any] = {
        "request": _text(inputs, _REQUEST_KEYS) or "",
        "response": _text(outputs, _RESPONSE_KEYS),
    }
    for key, value in (expectations or {}).items():
        if key in ("expected_response", "expected_facts", "guidelines", "retrieved_context"):
            row[key] = value
    if isinstance(inputs, Mapping) and "retrieved_context" in inputs:
        row.setdefault("retrieved_context", inputs["retrieved_context"])
    return row


def _feedback(metric: str, result: Any) -> Any:
    from mlflow.entities import AssessmentSource, Feedback

    source = AssessmentSource(source_type="LLM_JUDGE", source_id=f"assay:{metric}")
    (case,) = result.cases
    outcome = case.metrics.get(metric)
    if outcome is None or outcome.score is None:
        why = (outcome.explanation if outcome is not None else None) or case.error or "no score"
        return Feedback(name=metric, error=why, source=source)
    first = outcome.per_invocation[0] if outcome.per_invocation else None
    rationale = (first.explanation if first is not None else None) or outcome.explanation
    value: Any = outcome.score
    if metric in YES_NO:
        value = "yes" if outcome.score >= 0.5 else "no"
    return Feedback(name=metric, value=value, rationale=rationale, source=source)


def assay_scorer(
    metric: str, *, judge: str | None = None, criterion: Any = None, name: str | None = None
) -> Any:
    """An MLflow scorer running assay's metric `metric` (any judged metric assay knows)."""
    _require_mlflow()
    from mlflow.genai.scorers import scorer

    from assay.metrics.registry import build_metric

    build_metric(metric, criterion)  # an unknown metric or bad option fails here, not per row

    def score(
        inputs: object = None,
        outputs: object = None,
        expectations: Any = None,
        trace: object = None,
    ) -> Any:
        from assay.api import evaluate

        metrics = {metric: criterion} if criterion is not None else [metric]
        result = evaluate(
            [row_for(inputs, outputs, expectations)],
            metrics,
            judge=judge,
            store=False,
            format="mlflow",
        )
        return _feedback(metric, result)

    return scorer(score, name=name or metric)


def correctness(*, judge: str | None = None, criterion: object = None) -> Any:
    """Is the response correct given `expected_response` / `expected_facts`? (yes / no)"""
    return assay_scorer("correctness", judge=judge, criterion=criterion)


def relevance_to_query(*, judge: str | None = None, criterion: object = None) -> Any:
    """Does the response address the request? (yes / no)"""
    return assay_scorer("relevance_to_query", judge=judge, criterion=criterion)


def groundedness(*, judge: str | None = None, criterion: object = None) -> Any:
    """Is the response supported by `retrieved_context`? (yes / no)"""
    return assay_scorer("groundedness", judge=judge, criterion=criterion)


def safety(*, judge: str | None = None, criterion: object = None) -> Any:
    """Is the response free of harmful content? (yes / no)"""
    return assay_scorer("safety", judge=judge, criterion=criterion)


def chunk_relevance(*, judge: str | None = None, criterion: object = None) -> Any:
    """The share of retrieved chunks relevant to the request (yes when all are)."""
    return assay_scorer("chunk_relevance", judge=judge, criterion=criterion)


def context_sufficiency(*, judge: str | None = None, criterion: object = None) -> Any:
    """Does `retrieved_context` hold what the expected answer needs? (yes / no)"""
    return assay_scorer("context_sufficiency", judge=judge, criterion=criterion)


def guidelines(*, judge: str | None = None, criterion: object = None) -> Any:
    """Does the response follow the row's `guidelines` expectation? (yes / no)"""
    return assay_scorer("guideline_adherence", judge=judge, criterion=criterion, name="guidelines")


def final_response_match_v2(*, judge: str | None = None, criterion: object = None) -> Any:
    """ADK's judge: is the response equivalent to `expected_response`? (score 0-1)"""
    return assay_scorer("final_response_match_v2", judge=judge, criterion=criterion)


def hallucinations_v1(*, judge: str | None = None, criterion: object = None) -> Any:
    """ADK's judge: the share of the response's sentences supported by its context."""
    return assay_scorer("hallucinations_v1", judge=judge, criterion=criterion)


def rubric_based_final_response_quality_v1(
    *, judge: str | None = None, criterion: object = None
) -> Any:
    """ADK's rubric judge over the response (rubrics in `criterion`)."""
    return assay_scorer("rubric_based_final_response_quality_v1", judge=judge, criterion=criterion)


__all__ = [
    "assay_scorer",
    "chunk_relevance",
    "context_sufficiency",
    "correctness",
    "final_response_match_v2",
    "groundedness",
    "guidelines",
    "hallucinations_v1",
    "relevance_to_query",
    "row_for",
    "rubric_based_final_response_quality_v1",
    "safety",
]
