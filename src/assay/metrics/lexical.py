"""Lexical response metrics: `response_match_score` (ROUGE-1, SPEC §4.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import Metric
from assay.metrics.registry import register
from assay.metrics.tokenize import rouge1

NO_REFERENCE = (
    "no reference response: the expected invocation has no final_response"
    " (and, for a single-turn case, the case has no expected_response)"
)


def reference_text(expected: Turn | None, case: EvalCase, *, single_turn: bool) -> str | None:
    """The reference response of one invocation.

    The expected turn's final response; for a single-turn case without one, the case's
    `expected_response` (row formats keep the reference there). None when neither exists.
    """
    if expected is not None and expected.final_response is not None:
        return expected.final_response
    if single_turn:
        return case.expected_response
    return None


def is_single_turn(case: EvalCase) -> bool:
    """True for a case with at most one reference/recorded turn and no scenario."""
    return case.scenario is None and len(case.reference or case.actual or []) <= 1


@register
class ResponseMatchScore(Metric):
    """ROUGE-1 F-measure (Porter-stemmed unigrams) of the final response vs the reference.

    Same numbers as rouge-score's `RougeScorer(["rouge1"], use_stemmer=True)` on ASCII
    text and as ADK's `response_match_score` on any text (Unicode-aware tokens: one
    per CJK character, one per Thai/Lao/Khmer/Myanmar cluster, other words whole).
    An invocation without a final response scores as the empty text (0.0), as in ADK;
    one without a reference has no score. Case score = mean over invocations.
    """

    family: ClassVar[str] = "adk"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    name: ClassVar[str] = "response_match_score"
    description: ClassVar[str] = "ROUGE-1 F-measure of the final response against the reference"
    needs: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    default_threshold: ClassVar[float | None] = 0.8

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return self._score(actual, expected, case, single_turn=is_single_turn(case))

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        single = len(actual) == 1 and case.scenario is None
        per = [
            self._score(a, e, case, single_turn=single)
            for a, e in zip(actual, expected, strict=True)
        ]
        return self.result_from_invocations(per)

    def _score(
        self, actual: Turn, expected: Turn | None, case: EvalCase, *, single_turn: bool
    ) -> Score:
        reference = reference_text(expected, case, single_turn=single_turn)
        return self.score_texts(actual.final_response, reference, actual.error)

    def score_texts(self, response: str | None, reference: str | None, error: str | None) -> Score:
        """One invocation's score from its texts (the lean row path scores through this)."""
        if reference is None:
            return Score(None, NO_REFERENCE)
        if response is None:
            if error:
                return Score(None, f"the agent failed before responding: {error}")
            # ADK scores a missing response as the empty text; say so rather than
            # leaving a bare 0.0 in the report.
            return Score(0.0, "the agent gave no final response")
        return Score(rouge1(response, reference).fmeasure)
