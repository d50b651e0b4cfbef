"""Deterministic text checks on the final response (the cheap checks users reach for first).

| name | options | per invocation |
|---|---|---|
| `contains` | `value`, `case_sensitive` | 1 if the response contains `value` |
| `contains_all` | `values`, `case_sensitive` | share of `values` the response contains |
| `contains_any` | `values`, `case_sensitive` | 1 if the response contains one of `values` |
| `starts_with` | `value`, `case_sensitive` | 1 if the response starts with `value` |
| `regex_match` | `pattern`, `flags`, `full_match` | 1 if the pattern matches |
| `equals` | `value`, `case_sensitive`, `ignore_whitespace`, `ignore_punctuation` | 1 if equal |
| `levenshtein` | `value`, `case_sensitive` | 1 − edit distance ÷ longer length |

Texts are compared after Unicode NFC normalisation; `case_sensitive: false` compares
case-folded text (so "STRASSE" contains "straße"). `equals` and `levenshtein` compare
against the reference response unless a `value` is given. Every score carries an
explanation saying why it passed or failed; the case score is the mean over invocations.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from assay.core.results import Score
from assay.metrics.base import MetricOptions
from assay.metrics.registry import register
from assay.metrics.response import ResponseMetric, nfc, quote

NonEmpty = Annotated[str, Field(min_length=1)]


class _CaseOptions(MetricOptions):
    case_sensitive: bool = True


class ValueOptions(_CaseOptions):
    """A check against one literal value."""

    value: NonEmpty


class ValuesOptions(_CaseOptions):
    """A check against a list of literal values."""

    values: list[NonEmpty] = Field(min_length=1)


def _fold(text: str, case_sensitive: bool) -> str:
    text = nfc(text)
    return text if case_sensitive else text.casefold()


class _Check(ResponseMetric):
    default_threshold: ClassVar[float | None] = 1.0
    family: ClassVar[str] = "checks"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)


@register
class Contains(_Check):
    """1 if the final response contains `value`, else 0."""

    name: ClassVar[str] = "contains"
    description: ClassVar[str] = "1 if the response contains `value`"
    options_model: ClassVar[type[MetricOptions]] = ValueOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, ValueOptions)
        if _fold(opts.value, opts.case_sensitive) in _fold(response, opts.case_sensitive):
            return Score(1.0, f"the response contains {quote(opts.value)}")
        return Score(0.0, f"the response does not contain {quote(opts.value)}")


@register
class ContainsAll(_Check):
    """Share of `values` the final response contains (1 when it contains them all)."""

    name: ClassVar[str] = "contains_all"
    description: ClassVar[str] = "share of `values` the response contains (1 = all)"
    options_model: ClassVar[type[MetricOptions]] = ValuesOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, ValuesOptions)
        text = _fold(response, opts.case_sensitive)
        missing = [v for v in opts.values if _fold(v, opts.case_sensitive) not in text]
        found = len(opts.values) - len(missing)
        if not missing:
            return Score(1.0, f"the response contains all {len(opts.values)} values")
        return Score(
            found / len(opts.values),
            f"the response contains {found} of {len(opts.values)} values; missing: "
            + ", ".join(quote(v, 40) for v in missing),
        )


@register
class ContainsAny(_Check):
    """1 if the final response contains at least one of `values`, else 0."""

    name: ClassVar[str] = "contains_any"
    description: ClassVar[str] = "1 if the response contains one of `values`"
    options_model: ClassVar[type[MetricOptions]] = ValuesOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, ValuesOptions)
        text = _fold(response, opts.case_sensitive)
        for value in opts.values:
            if _fold(value, opts.case_sensitive) in text:
                return Score(1.0, f"the response contains {quote(value)}")
        return Score(
            0.0,
            "the response contains none of " + ", ".join(quote(v, 40) for v in opts.values),
        )


@register
class StartsWith(_Check):
    """1 if the final response starts with `value`, else 0."""

    name: ClassVar[str] = "starts_with"
    description: ClassVar[str] = "1 if the response starts with `value`"
    options_model: ClassVar[type[MetricOptions]] = ValueOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, ValueOptions)
        if _fold(response, opts.case_sensitive).startswith(_fold(opts.value, opts.case_sensitive)):
            return Score(1.0, f"the response starts with {quote(opts.value)}")
        return Score(
            0.0,
            f"the response starts with {quote(response[: len(opts.value)], 40)}, "
            f"not {quote(opts.value, 40)}",
        )


RegexFlag = Literal["IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII"]


class RegexOptions(MetricOptions):
    """`pattern` (Python `re` syntax), `flags` by name, `full_match` for the whole text."""

    pattern: NonEmpty
    flags: list[RegexFlag] = Field(default_factory=list)
    full_match: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return pattern


def _flags(names: list[RegexFlag]) -> re.RegexFlag:
    flags = re.RegexFlag(0)
    for name in names:
        flags |= getattr(re, name)
    return flags


@register
class RegexMatch(_Check):
    """1 if `pattern` matches the final response (anywhere, or all of it with `full_match`)."""

    name: ClassVar[str] = "regex_match"
    description: ClassVar[str] = "1 if the regular expression `pattern` matches the response"
    options_model: ClassVar[type[MetricOptions]] = RegexOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        assert isinstance(opts, RegexOptions)
        self._regex = re.compile(opts.pattern, _flags(opts.flags))
        self._full = opts.full_match

    def score_text(self, response: str, reference: str | None) -> Score:
        text = nfc(response)
        match = self._regex.fullmatch(text) if self._full else self._regex.search(text)
        how = "the whole response" if self._full else "the response"
        if match is None:
            return Score(0.0, f"/{self._regex.pattern}/ does not match {how}")
        return Score(1.0, f"/{self._regex.pattern}/ matches {quote(match.group(0), 60)}")


class EqualsOptions(MetricOptions):
    """`value` (default: the reference response) and what to ignore when comparing."""

    value: str | None = None
    case_sensitive: bool = False
    ignore_whitespace: bool = True
    ignore_punctuation: bool = False


def normalise(text: str, opts: EqualsOptions) -> str:
    """`text` as `equals` compares it under `opts`."""
    text = nfc(text)
    if opts.ignore_punctuation:
        # Unicode punctuation (categories P*), not just ASCII: "¿Qué?" equals "Qué".
        text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    if opts.ignore_whitespace:
        text = " ".join(text.split())
    return text if opts.case_sensitive else text.casefold()


class _AgainstReference(_Check):
    """A check against `value` when given, else against the reference response."""

    needs: ClassVar[frozenset[str]] = frozenset({"response", "reference"})

    def uses_reference(self) -> bool:
        return getattr(self.options, "value", None) is None

    def target(self, reference: str | None) -> tuple[str, str]:
        """(the text to compare with, what to call it in explanations)."""
        value: str | None = getattr(self.options, "value", None)
        if value is not None:
            return value, "the value"
        assert reference is not None
        return reference, "the reference"


@register
class Equals(_AgainstReference):
    """1 if the final response equals `value` (or the reference) after normalising."""

    name: ClassVar[str] = "equals"
    description: ClassVar[str] = (
        "1 if the response equals `value` or the reference (case, whitespace normalised)"
    )
    options_model: ClassVar[type[MetricOptions]] = EqualsOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, EqualsOptions)
        target, what = self.target(reference)
        if normalise(response, opts) == normalise(target, opts):
            return Score(1.0, f"the response equals {what}")
        return Score(
            0.0, f"the response {quote(response, 60)} differs from {what} {quote(target, 60)}"
        )


class LevenshteinOptions(MetricOptions):
    value: str | None = None
    case_sensitive: bool = True


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


# Past this many table cells the pure-Python distance would take seconds per pair.
MAX_CELLS = 25_000_000


def trimmed(a: str, b: str) -> tuple[str, str]:
    """`a` and `b` without their common prefix and suffix (the distance is unchanged)."""
    start = 0
    limit = min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        start += 1
    end = 0
    while end < limit - start and a[-1 - end] == b[-1 - end]:
        end += 1
    return a[start : len(a) - end], b[start : len(b) - end]


def levenshtein_similarity(a: str, b: str) -> float:
    """1 − distance ÷ the longer length; two empty texts are identical (1.0)."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - edit_distance(a, b) / longest


@register
class Levenshtein(_AgainstReference):
    """Normalised edit similarity of the final response to `value` or the reference."""

    name: ClassVar[str] = "levenshtein"
    description: ClassVar[str] = (
        "1 − edit distance ÷ longer length, against `value` or the reference"
    )
    options_model: ClassVar[type[MetricOptions]] = LevenshteinOptions
    default_threshold: ClassVar[float | None] = 0.8

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, LevenshteinOptions)
        target, what = self.target(reference)
        a, b = _fold(response, opts.case_sensitive), _fold(target, opts.case_sensitive)
        longest = max(len(a), len(b))
        core_a, core_b = trimmed(a, b)
        if len(core_a) * len(core_b) > MAX_CELLS:
            return Score(
                None,
                f"texts too long for levenshtein ({len(a)} and {len(b)} characters); "
                "use rouge_l or bleu for long texts",
            )
        distance = edit_distance(core_a, core_b)
        similarity = 1.0 if longest == 0 else 1.0 - distance / longest
        return Score(
            similarity,
            f"{distance} edit(s) from {what} ({longest} characters at most)",
            details={"distance": distance},
        )
