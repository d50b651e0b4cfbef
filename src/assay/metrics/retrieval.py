"""Retrieval metrics against known relevant documents (SPEC §4.3), by `doc_uri`.

- `document_recall`: distinct expected doc_uris found among the retrieved ones ÷
  distinct expected doc_uris (Databricks' ground-truth document recall; not affected
  by how many documents were retrieved).
- `document_precision`: distinct retrieved doc_uris that are expected ÷ distinct
  retrieved doc_uris.

Retrieved documents are the chunks of the invocation's retrieval steps; expected ones
are the case's `expected_retrieved_context`, else the retrieval steps of the expected
(reference) turn. Chunks without a `doc_uri` are ignored. Missing inputs give no score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from assay.core.cases import Chunk, EvalCase, Turn
from assay.core.results import Score
from assay.metrics.base import Metric
from assay.metrics.registry import register
from assay.metrics.stats import mean

NO_EXPECTED = "no expected documents: the case has no expected_retrieved_context with a doc_uri"
NO_RETRIEVAL = "no retrieved context: the invocation has no retrieval step"
NO_RETRIEVED_URI = "no retrieved chunk has a doc_uri"

RECALL_COLUMN = "retrieval/ground_truth/document_recall"


def _uris(chunks: Sequence[Chunk]) -> set[str]:
    return {c.doc_uri for c in chunks if c.doc_uri is not None}


def expected_uris(expected: Turn | None, case: EvalCase) -> set[str]:
    """Distinct expected doc_uris: the case's expected context, else the reference turn's."""
    if case.expected_retrieved_context:
        return _uris(case.expected_retrieved_context)
    if expected is not None:
        return _uris(expected.retrieved_chunks())
    return set()


def _retrieved(actual: Turn) -> tuple[set[str] | None, str | None]:
    """(distinct retrieved doc_uris, reason when there is nothing to score against)."""
    steps = [s.retrieval for s in actual.steps if s.retrieval is not None]
    if not steps:
        return None, NO_RETRIEVAL
    chunks = [c for r in steps for c in r.chunks]
    uris = _uris(chunks)
    if chunks and not uris:
        return None, NO_RETRIEVED_URI
    return uris, None


@register
class DocumentRecall(Metric):
    """Share of the distinct expected doc_uris that were retrieved (0..1).

    Rows carry Databricks' `retrieval/ground_truth/document_recall` column and the
    summary `retrieval/ground_truth/document_recall/average`, next to the Vertex-style
    `document_recall/score`, `/mean` and `/std`. An invocation that retrieved nothing
    (a retrieval step with no chunks) scores 0.0.
    """

    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    name: ClassVar[str] = "document_recall"
    description: ClassVar[str] = "distinct expected doc_uris retrieved / distinct expected"
    needs: ClassVar[frozenset[str]] = frozenset({"retrieved_context", "expected_retrieved_context"})
    family: ClassVar[str] = "databricks"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        want = expected_uris(expected, case)
        if not want:
            return Score(None, NO_EXPECTED)
        got, reason = _retrieved(actual)
        if got is None:
            return Score(None, reason)
        found = want & got
        return Score(
            len(found) / len(want),
            details={"found": sorted(found), "missing": sorted(want - got)},
        )

    def row_columns(self, score: Score) -> dict[str, object]:
        cols = super().row_columns(score)
        cols[RECALL_COLUMN] = score.value
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, object]:
        cols = super().summary_columns(values)
        cols[f"{RECALL_COLUMN}/average"] = mean(values)
        return cols


@register
class DocumentPrecision(Metric):
    """Share of the distinct retrieved doc_uris that are expected (0..1).

    An invocation that retrieved no document has no score (precision is undefined).
    """

    family: ClassVar[str] = "retrieval"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    name: ClassVar[str] = "document_precision"
    description: ClassVar[str] = (
        "distinct retrieved doc_uris that are expected / distinct retrieved"
    )
    needs: ClassVar[frozenset[str]] = frozenset({"retrieved_context", "expected_retrieved_context"})

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        want = expected_uris(expected, case)
        if not want:
            return Score(None, NO_EXPECTED)
        got, reason = _retrieved(actual)
        if got is None:
            return Score(None, reason)
        if not got:
            return Score(None, "nothing was retrieved: precision is undefined")
        relevant = got & want
        return Score(
            len(relevant) / len(got),
            details={"relevant": sorted(relevant), "irrelevant": sorted(got - want)},
        )
