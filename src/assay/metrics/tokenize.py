"""ROUGE-1 with the Porter stemmer: the tokenizer and the unigram F-measure.

The numbers are those of `rouge_score.rouge_scorer.RougeScorer(["rouge1"],
use_stemmer=True)` on ASCII text and those of google-adk's `RougeEvaluator` (its
Unicode-aware tokenizer) on any text; the two agree on ASCII. The rules, in order:

1. NFKC-normalise, then lowercase (`str.lower`).
2. Per character: a CJK ideograph, kana or Hangul syllable is a token on its own; a
   Thai/Lao/Khmer/Myanmar character starts a new cluster unless it is a combining mark,
   which sticks to the cluster before it; other letters, digits and combining marks
   are word characters; everything else separates words.
3. A word made only of ASCII characters (`[a-z0-9]+` by then) is stemmed with the
   Porter stemmer of NLTK's default mode (the one rouge-score builds; assay's own copy
   in `assay.metrics.porter`) when longer than three characters; other words are kept
   whole and not stemmed.
4. Precision = overlap / max(candidate tokens, 1), recall = overlap / max(reference
   tokens, 1), F = 2PR / (P + R), or 0.0 when P + R is 0 (so two empty texts score 0).

Speed comes from caching, not from a different algorithm: each distinct word is
stemmed once (the stemmer is the slow part of rouge-score) and each distinct
character is classified once (a `str.translate` table filled on demand).
"""

from __future__ import annotations

import unicodedata
from collections import _count_elements  # type: ignore[attr-defined]
from typing import NamedTuple

from assay.metrics.porter import stem_uncached

__all__ = ["Rouge1", "rouge1", "rouge1_fmeasure", "tokenize"]

# ASCII text's words: every byte but [a-z0-9] made a space, then split (both in C; a
# `[a-z0-9]+` regex's findall gives the same words at a multiple of the cost:
# bench/README.md).
_ASCII_WORD_BYTES = bytes(
    c if chr(c).isascii() and (chr(c).islower() or chr(c).isdigit()) else 0x20 for c in range(256)
)
# Caches are bounded so a long-running service fed arbitrary text cannot grow them
# without limit; clearing is cheap and only costs re-stemming.
_MAX_CACHED_WORDS = 1 << 18


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0x3040 <= code <= 0x309F  # Hiragana
        or 0x30A0 <= code <= 0x30FF  # Katakana
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
    )


def _is_non_spaced(code: int) -> bool:
    return (
        0x0E00 <= code <= 0x0E7F  # Thai
        or 0x0E80 <= code <= 0x0EFF  # Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F  # Myanmar
    )


class _CharTable(dict[int, str]):
    """`str.translate` table mapping each code point to what rule 2 makes of it."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        is_mark = unicodedata.category(char).startswith("M")
        if _is_cjk(code):
            out = f" {char} "
        elif _is_non_spaced(code):
            out = char if is_mark else f" {char}"
        elif char.isalnum() or is_mark:
            out = char
        else:
            out = " "
        self[code] = out
        return out


class _StemCache(dict[str, str]):
    """word -> token: the Porter stem for words longer than three characters."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _MAX_CACHED_WORDS:
            self.clear()
        token = stem_uncached(word) if len(word) > 3 else word
        self[word] = token
        return token


_CHARS = _CharTable()
_STEMS = _StemCache()


def _stem_all(words: list[str]) -> list[str]:
    tokens = list(map(_STEMS.__getitem__, words))
    # rouge-score drops tokens that are not [a-z0-9]+ after stemming; a stem is never
    # empty in practice, but the check is what keeps the equivalence exact.
    if "" in tokens:
        tokens = [t for t in tokens if t]
    return tokens


def tokenize(text: str) -> list[str]:
    """The ROUGE tokens of `text` (see the module docstring for the rules)."""
    if text.isascii():
        # NFKC is the identity on ASCII and every ASCII word character is [a-z0-9]
        # after lowercasing, so its runs of [a-z0-9] are exactly the general path's words.
        return _stem_all(text.lower().encode().translate(_ASCII_WORD_BYTES).decode().split())
    spaced = unicodedata.normalize("NFKC", text).lower().translate(_CHARS)
    tokens: list[str] = []
    for word in spaced.split():
        if word.isascii():
            tokens.extend(_stem_all([word]))
        else:
            tokens.append(word)
    return tokens


class Rouge1(NamedTuple):
    precision: float
    recall: float
    fmeasure: float


def _counts(tokens: list[str]) -> dict[str, int]:
    # `Counter(tokens)` without its Python-level `update` dispatch: the C counting loop
    # Counter itself uses, into a plain dict (this runs twice per scored pair).
    counts: dict[str, int] = {}
    _count_elements(counts, tokens)
    return counts


def _overlap(a: dict[str, int], b: dict[str, int]) -> int:
    if len(a) > len(b):
        a, b = b, a
    total = 0
    for token, n in a.items():
        m = b.get(token)
        if m:
            total += n if n < m else m
    return total


def rouge1(candidate: str, reference: str) -> Rouge1:
    """ROUGE-1 precision, recall and F-measure of `candidate` against `reference`."""
    cand = tokenize(candidate)
    ref = tokenize(reference)
    overlap = _overlap(_counts(cand), _counts(ref)) if cand and ref else 0
    precision = overlap / max(len(cand), 1)
    recall = overlap / max(len(ref), 1)
    # Same expression, same evaluation order as rouge-score: identical floats.
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return Rouge1(precision, recall, fmeasure)


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure (the `response_match_score` of one invocation)."""
    return rouge1(candidate, reference).fmeasure
