"""The shared shape of metrics that read an invocation's final response as text.

A response metric scores `(response, reference)` pairs: the response is the actual
turn's final response (the empty text when the agent gave none, as ADK scores it; no
score when the agent failed before responding), the reference is the expected turn's
final response or, for a single-turn case, the case's `expected_response`. Metrics
that compare against a given `value` instead of the reference say so with
`uses_reference`; a metric that needs a reference and has none gives no score with
the reason, never 0.
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import Metric
from assay.metrics.lexical import NO_REFERENCE, reference_text

NO_RESPONSE = "the agent gave no final response"


def nfc(text: str) -> str:
    """Unicode NFC: a composed and a decomposed 'é' compare equal."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def quote(text: str, limit: int = 80) -> str:
    """`text` quoted for an explanation, cut to `limit` characters."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)


class ResponseMetric(Metric, ABC):
    """A metric over the final response text (and, when it needs one, the reference)."""

    needs: ClassVar[frozenset[str]] = frozenset({"response"})

    def uses_reference(self) -> bool:
        """True when this instance compares against the reference response."""
        return "reference" in self.needs

    @abstractmethod
    def score_text(self, response: str, reference: str | None) -> Score:
        """Score one response; `reference` is None exactly when not `uses_reference()`."""
        ...

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        single = case.scenario is None and len(case.reference or case.actual or []) <= 1
        return self._score(actual, expected, case, single_turn=single)

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
        reference: str | None = None
        if self.uses_reference():
            reference = reference_text(expected, case, single_turn=single_turn)
            if reference is None:
                return Score(None, NO_REFERENCE)
        if actual.final_response is None and actual.error:
            return Score(None, f"the agent failed before responding: {actual.error}")
        score = self.score_text(actual.final_response or "", reference)
        if actual.final_response is None and score.value is not None and score.value < 1:
            # Say why a check on "" failed rather than leaving a bare 0 in the report.
            score.explanation = f"{NO_RESPONSE}; {score.explanation or ''}".rstrip("; ")
        return score
