"""MLflow's retriever metrics (`mlflow.evaluate(..., model_type="retriever")`), by doc id.

`precision_at_k`, `recall_at_k` and `ndcg_at_k` score the ranked list of retrieved doc
ids (the `doc_uri`s of the invocation's retrieval steps, in order, duplicates kept)
against the ground-truth ids (the case's `expected_retrieved_context`, else the
reference turn's retrieval), on the top `k` (option `k`, default 3: MLflow's
`retriever_k`). The numbers are MLflow's (`mlflow.metrics.*_at_k`), edge cases included:

- `precision_at_k`: relevant ids among the top k ÷ ids among the top k (a duplicate
  counts each time); 0 when nothing is retrieved.
- `recall_at_k`: distinct ground-truth ids among the top k ÷ ground-truth ids; with no
  ground truth, 1 if nothing was retrieved, else 0.
- `ndcg_at_k`: NDCG of the top k with binary relevance (a repeat of a relevant id is one
  more relevant document); 1 when there is neither ground truth nor anything
  retrieved, 0 when only one of them is missing.

"No ground truth" is an empty list (MLflow's `[]` target); a case with no ground-truth
column at all, or an invocation with no retrieval step, has no score. A retrieved chunk
without a `doc_uri` has no id to rank: no score, saying so. Rows carry MLflow's column
`{metric with k}/score` (`precision_at_3/score`) and the summary its `/mean`,
`/variance` (population) and `/p90` next to assay's own.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, StrictInt

from assay.core.cases import EvalCase, Turn
from assay.core.results import Score
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import register
from assay.metrics.stats import mean

NO_GROUND_TRUTH = (
    "no ground truth: the case has no expected_retrieved_context (and its reference turn "
    "no retrieval)"
)
NO_RETRIEVAL = "no retrieved context: the invocation has no retrieval step"
NO_DOC_ID = "retrieved chunk {index} has no doc_uri: ranked metrics need every document's id"


class AtKOptions(MetricOptions):
    """`k`: how many of the top-ranked retrieved documents count (MLflow's `retriever_k`)."""

    k: StrictInt = Field(default=3, gt=0)


def ground_truth(expected: Turn | None, case: EvalCase) -> list[str] | None:
    """The ground-truth doc ids, or None when the case has none at all."""
    if case.expected_retrieved_context is not None:
        return [c.doc_uri for c in case.expected_retrieved_context if c.doc_uri is not None]
    if expected is not None and any(s.retrieval is not None for s in expected.steps):
        return [c.doc_uri for c in expected.retrieved_chunks() if c.doc_uri is not None]
    return None


def retrieved_ids(actual: Turn) -> tuple[list[str] | None, str | None]:
    """(the retrieved doc ids in rank order, the reason there are none to score)."""
    if not any(s.retrieval is not None for s in actual.steps):
        return None, NO_RETRIEVAL
    ids = []
    for index, chunk in enumerate(actual.retrieved_chunks()):
        if chunk.doc_uri is None:
            return None, NO_DOC_ID.format(index=index)
        ids.append(chunk.doc_uri)
    return ids, None


def precision_at_k(retrieved: Sequence[str], truth: Sequence[str], k: int) -> float:
    top = retrieved[:k]
    if not top:
        return 0.0
    wanted = set(truth)
    return sum(1 for doc in top if doc in wanted) / len(top)


def recall_at_k(retrieved: Sequence[str], truth: Sequence[str], k: int) -> float:
    wanted, top = set(truth), set(retrieved[:k])
    if wanted:
        return len(wanted & top) / len(wanted)
    return 1.0 if not top else 0.0


def ndcg_at_k(retrieved: Sequence[str], truth: Sequence[str], k: int) -> float:
    if not retrieved and not truth:
        return 1.0
    if not retrieved or not truth:
        return 0.0
    top, wanted = retrieved[:k], set(truth)
    gains = [1.0 if doc in wanted else 0.0 for doc in top]
    dcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(gains))
    # Each repeat of a relevant id in the top k is one more relevant document.
    repeats = Counter(doc for doc in top if doc in wanted)
    relevant = len(wanted) + sum(n - 1 for n in repeats.values())
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(top), relevant)))
    return dcg / ideal


def _variance(values: Sequence[float], m: float) -> float:
    return sum((v - m) ** 2 for v in values) / len(values)


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    pos = 0.9 * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


class _AtK(Metric):
    family: ClassVar[str] = "mlflow"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    options_model: ClassVar[type[MetricOptions]] = AtKOptions
    needs: ClassVar[frozenset[str]] = frozenset({"retrieved_context", "expected_retrieved_context"})

    def _k(self) -> int:
        assert isinstance(self.options, AtKOptions)
        return self.options.k

    formula: ClassVar[staticmethod[[Sequence[str], Sequence[str], int], float]]
    """The metric's own number on (retrieved ids, ground-truth ids, k)."""

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        truth = ground_truth(expected, case)
        if truth is None:
            return Score(None, NO_GROUND_TRUTH)
        retrieved, reason = retrieved_ids(actual)
        if retrieved is None:
            return Score(None, reason)
        k = self._k()
        wanted = set(truth)
        return Score(
            self.formula(retrieved, truth, k),
            details={"k": k, "relevant": [doc for doc in retrieved[:k] if doc in wanted]},
        )

    def _mlflow_name(self) -> str:
        return f"{self.name.removesuffix('_k')}_{self._k()}"

    def row_columns(self, score: Score) -> dict[str, object]:
        cols = super().row_columns(score)
        cols[f"{self._mlflow_name()}/score"] = score.value
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, object]:
        cols = super().summary_columns(values)
        m = mean(values)
        if m is not None and values:
            name = self._mlflow_name()
            cols[f"{name}/mean"] = m
            cols[f"{name}/variance"] = _variance(values, m)
            cols[f"{name}/p90"] = _p90(values)
        return cols


@register
class PrecisionAtK(_AtK):
    """MLflow's `precision_at_k`: relevant ids among the top k retrieved ÷ ids among them."""

    name: ClassVar[str] = "precision_at_k"
    description: ClassVar[str] = "relevant doc ids in the top k retrieved / top k (MLflow)"
    formula = staticmethod(precision_at_k)


@register
class RecallAtK(_AtK):
    """MLflow's `recall_at_k`: distinct ground-truth ids in the top k ÷ ground-truth ids."""

    name: ClassVar[str] = "recall_at_k"
    description: ClassVar[str] = "ground-truth ids in the top k retrieved / ground truth (MLflow)"
    formula = staticmethod(recall_at_k)


@register
class NdcgAtK(_AtK):
    """MLflow's `ndcg_at_k`: NDCG of the top k retrieved with binary relevance."""

    name: ClassVar[str] = "ndcg_at_k"
    description: ClassVar[str] = "NDCG of the top k retrieved doc ids, binary relevance (MLflow)"
    formula = staticmethod(ndcg_at_k)
