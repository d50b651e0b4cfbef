"""Vertex AI's computation metrics on text: `exact_match`, `bleu`, `rouge_*` (SPEC §4.5).

| name | Vertex spec | per invocation |
|---|---|---|
| `exact_match` | `ExactMatchSpec` | 1 iff the response equals the reference exactly |
| `bleu` | `BleuSpec(use_effective_order)` | sacrebleu sentence BLEU ÷ 100 |
| `rouge` | `RougeSpec(rouge_type, use_stemmer, split_summaries)` | ROUGE F-measure |
| `rouge_1`, `rouge_2`, `rouge_l`, `rouge_l_sum` | `RougeSpec`, type fixed | ROUGE F-measure |

The reference is the expected turn's final response (or a single-turn case's
`expected_response`); without one the invocation has no score. ROUGE rows also carry
`precision` and `recall`. Like Vertex, these metrics have no pass/fail threshold of
their own; give one (`"bleu": 0.4`) to gate on them.

`score_pair(prediction, reference)` scores one Vertex instance directly: the
`evaluateInstances` translation calls it with the instance's strings.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import field_validator

from assay.core.results import Score
from assay.errors import ConfigError
from assay.metrics.base import MetricOptions
from assay.metrics.bleu import sentence_bleu
from assay.metrics.registry import register
from assay.metrics.response import ResponseMetric
from assay.metrics.rouge import RougeType, check_split_summaries, rouge


class _Computation(ResponseMetric):
    needs: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    def score_pair(self, prediction: str, reference: str) -> Score:
        """The score of one (prediction, reference) pair, as Vertex's instance has them."""
        return self.score_text(prediction, reference)


@register
class ExactMatch(_Computation):
    """1 iff the final response is exactly the reference (no normalising), else 0."""

    name: ClassVar[str] = "exact_match"
    description: ClassVar[str] = "1 iff the response is exactly the reference"
    default_threshold: ClassVar[float | None] = 1.0

    def score_text(self, response: str, reference: str | None) -> Score:
        assert reference is not None
        if response == reference:
            return Score(1.0, "the response is exactly the reference")
        return Score(0.0, "the response differs from the reference")


class BleuOptions(MetricOptions):
    """Vertex's `BleuSpec`."""

    use_effective_order: bool = False


@register
class Bleu(_Computation):
    """Sentence BLEU (sacrebleu, tokenizer 13a, exp smoothing) ÷ 100, as Vertex's `bleu`."""

    name: ClassVar[str] = "bleu"
    description: ClassVar[str] = "sentence BLEU against the reference, 0..1 (sacrebleu, as Vertex)"
    options_model: ClassVar[type[MetricOptions]] = BleuOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        assert reference is not None
        opts = self.options
        assert isinstance(opts, BleuOptions)
        result = sentence_bleu(response, reference, use_effective_order=opts.use_effective_order)
        return Score(result.score, details={"brevity_penalty": result.brevity_penalty})


class RougeOptions(MetricOptions):
    """Vertex's `RougeSpec`; `rouge_type` is fixed by the name except for `rouge`."""

    rouge_type: RougeType | None = None
    use_stemmer: bool = False
    split_summaries: bool = False

    @field_validator("split_summaries")
    @classmethod
    def _usable(cls, split: bool) -> bool:
        if split:
            try:
                check_split_summaries()
            except ConfigError as exc:  # reported under the metric's name by the registry
                raise ValueError(str(exc)) from None
        return split


class _Rouge(_Computation):
    fixed_type: ClassVar[RougeType | None] = None
    options_model: ClassVar[type[MetricOptions]] = RougeOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        assert isinstance(opts, RougeOptions)
        if self.fixed_type is not None and opts.rouge_type not in (None, self.fixed_type):
            raise ConfigError(
                f"bad options for metric {self.name!r}: rouge_type {opts.rouge_type!r} "
                f"contradicts the name, which means {self.fixed_type!r}; "
                f'use the metric "rouge" to choose the type'
            )
        self.rouge_type: RougeType = opts.rouge_type or self.fixed_type or "rougeL"
        self._opts = opts

    def score_text(self, response: str, reference: str | None) -> Score:
        assert reference is not None
        result = rouge(
            reference,
            response,
            self.rouge_type,
            use_stemmer=self._opts.use_stemmer,
            split_summaries=self._opts.split_summaries,
        )
        return Score(
            result.fmeasure, details={"precision": result.precision, "recall": result.recall}
        )


@register
class Rouge(_Rouge):
    """ROUGE F-measure of the type given by `rouge_type` (default rougeL)."""

    name: ClassVar[str] = "rouge"
    description: ClassVar[str] = "ROUGE F-measure of `rouge_type` (default rougeL), as rouge-score"


@register
class Rouge1(_Rouge):
    name: ClassVar[str] = "rouge_1"
    description: ClassVar[str] = "ROUGE-1 F-measure against the reference, as rouge-score"
    fixed_type: ClassVar[RougeType | None] = "rouge1"


@register
class Rouge2(_Rouge):
    name: ClassVar[str] = "rouge_2"
    description: ClassVar[str] = "ROUGE-2 F-measure against the reference, as rouge-score"
    fixed_type: ClassVar[RougeType | None] = "rouge2"


@register
class RougeL(_Rouge):
    name: ClassVar[str] = "rouge_l"
    description: ClassVar[str] = "ROUGE-L (LCS) F-measure against the reference, as rouge-score"
    fixed_type: ClassVar[RougeType | None] = "rougeL"


@register
class RougeLSum(_Rouge):
    name: ClassVar[str] = "rouge_l_sum"
    description: ClassVar[str] = "ROUGE-Lsum (summary-level LCS) F-measure, as rouge-score"
    fixed_type: ClassVar[RougeType | None] = "rougeLsum"
