"""ROUGE-N, ROUGE-L and ROUGE-Lsum with the numbers of Google's `rouge-score` package.

The same tokenizer (lowercase, every run of characters outside `[a-z0-9]` separates
tokens, Porter stem of words longer than three characters when `use_stemmer`), the
same n-gram counting, the same LCS and the same summary-level union LCS (with its
tie-breaking and double-count guard), in the same floating-point order: scores are
identical to `rouge_score.rouge_scorer.RougeScorer([type], use_stemmer=...)`.
Unlike rouge-score, no LCS table is filled: the LCS length is computed bit-parallel
(one integer of len(text) bits per table row, memory linear in the shorter text), and
rougeLsum's backtrack re-reads a block of rows at a time (`_lcs_indices`).
Like rouge-score, words without ASCII letters or digits produce no tokens; the
Unicode-aware ROUGE-1 of ADK is `response_match_score`.

`split_summaries` (ROUGE-Lsum only) splits sentences with NLTK's punkt tokenizer, as
rouge-score does; without it sentences are the text's lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple

from assay.errors import ConfigError
from assay.metrics import work
from assay.metrics.porter import stem

RougeType = Literal[
    "rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rouge6", "rouge7", "rouge8", "rouge9",
    "rougeL", "rougeLsum",
]  # fmt: skip

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


class RougeScore(NamedTuple):
    precision: float
    recall: float
    fmeasure: float


_ZERO = RougeScore(0, 0, 0)


def rouge_tokens(text: str, *, use_stemmer: bool) -> list[str]:
    """rouge-score's default tokenizer."""
    words = _NON_ALNUM.sub(" ", text.lower()).split()
    if use_stemmer:
        words = [stem(w) if len(w) > 3 else w for w in words]
    return [w for w in words if w]


def _fmeasure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(target: Sequence[str], prediction: Sequence[str], n: int) -> RougeScore:
    ref, pred = _ngrams(target, n), _ngrams(prediction, n)
    overlap = sum(min(count, pred[gram]) for gram, count in ref.items())
    precision = overlap / max(sum(pred.values()), 1)
    recall = overlap / max(sum(ref.values()), 1)
    return RougeScore(precision, recall, _fmeasure(precision, recall))


# ROUGE-L's LCS, bit-parallel (Allison & Dix 1986, Hyyrö 2004). The candidate's tokens
# are bit positions: after i reference tokens, bit j of the row `v` is 0 exactly where
# the LCS table's row i steps up between columns j and j + 1, so table[i][j] is j minus
# the ones among v's low j bits. One row is one integer of len(candidate) bits.

_MASK_BUDGET_ROWS = 64
"""How many rows' worth of bits the per-token masks may keep: beyond it a token's mask
is built again each time it is needed, so memory stays linear in the candidate."""


class _Masks:
    """For each token, the bit mask of its positions in `can` (built on demand)."""

    def __init__(self, can: Sequence[str]) -> None:
        self.nbytes = (len(can) + 8) // 8
        self.positions: dict[str, list[int]] = {}
        for j, token in enumerate(can):
            self.positions.setdefault(token, []).append(j)
        self.kept: dict[str, int] = {}
        self.budget = _MASK_BUDGET_ROWS * self.nbytes

    def get(self, token: str) -> int:
        mask = self.kept.get(token)
        if mask is not None:
            return mask
        where = self.positions.get(token)
        if where is None:
            return 0
        raw = bytearray(self.nbytes)
        for j in where:
            raw[j >> 3] |= 1 << (j & 7)
        mask = int.from_bytes(raw, "little")
        if self.budget >= self.nbytes:
            self.budget -= self.nbytes
            self.kept[token] = mask
        return mask


def _lcs_step(v: int, mask: int, full: int) -> int:
    u = v & mask
    return ((v + u) | (v - u)) & full


def _lcs_row(ref: Sequence[str], masks: _Masks, v: int, full: int) -> int:
    for token in ref:
        mask = masks.get(token)
        if mask:
            v = _lcs_step(v, mask, full)
    return v


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of a longest common subsequence, in memory linear in the shorter sequence."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    full = (1 << len(b)) - 1
    v = _lcs_row(a, _Masks(b), full, full)
    return len(b) - v.bit_count()


def rouge_l(target: Sequence[str], prediction: Sequence[str]) -> RougeScore:
    if not target or not prediction:
        return _ZERO
    lcs = lcs_length(target, prediction)
    precision = lcs / len(prediction)
    recall = lcs / len(target)
    return RougeScore(precision, recall, _fmeasure(precision, recall))


_TRACE_BLOCK = 64
"""Rows of the LCS table held at once while reading an LCS back."""


def _cell(row: int, j: int) -> int:
    """table[i][j] from row i's bits."""
    return j - (row & ((1 << j) - 1)).bit_count()


def _lcs_indices(ref: Sequence[str], can: Sequence[str]) -> list[int]:
    """Indices into `ref` of one LCS, read back as rouge-score does (ties go up).

    rouge-score fills the whole table and walks it back from the bottom right corner.
    The same walk here holds one block of rows at a time: each block is computed again
    from a row kept at its top (halving the rows until a block is small), so memory is
    O(len(can) * log(len(ref))) bits and the indices are the same.
    """
    if not ref or not can:
        return []
    full = (1 << len(can)) - 1
    walk = _Walk(ref, can, full)
    walk.trace(full, 0, len(ref))
    walk.out.reverse()
    return walk.out


class _Walk:
    """rouge-score's backtrack through the LCS table, a block of rows at a time."""

    def __init__(self, ref: Sequence[str], can: Sequence[str], full: int) -> None:
        self.ref = ref
        self.can = can
        self.full = full
        self.masks = _Masks(can)
        self.i = len(ref)
        self.j = len(can)
        self.out: list[int] = []

    def row_after(self, v: int, start: int, stop: int) -> int:
        masks, full, ref = self.masks, self.full, self.ref
        for i in range(start, stop):
            mask = masks.get(ref[i])
            if mask:
                v = _lcs_step(v, mask, full)
        return v

    def trace(self, v_lo: int, i_lo: int, i_hi: int) -> None:
        """Walk from row `i_hi` up to row `i_lo`, whose bits are `v_lo`."""
        while i_hi - i_lo > _TRACE_BLOCK:
            if self.j == 0:
                return
            mid = (i_lo + i_hi) // 2
            self.trace(self.row_after(v_lo, i_lo, mid), mid, i_hi)
            i_hi = mid
        if self.j == 0:
            return
        rows = [v_lo]
        for i in range(i_lo, i_hi):
            rows.append(self.row_after(rows[-1], i, i + 1))
        ref, can, out = self.ref, self.can, self.out
        i, j = self.i, self.j
        while i > i_lo and j > 0:
            if ref[i - 1] == can[j - 1]:
                out.append(i - 1)
                i -= 1
                j -= 1
            elif (rows[i - i_lo] >> (j - 1)) & 1 and _cell(rows[i - i_lo - 1], j) < _cell(
                rows[i - i_lo], j
            ):
                # table[i][j - 1] == table[i][j] > table[i - 1][j]: rouge-score goes left
                j -= 1
            else:
                i -= 1
        self.i, self.j = i, j


def rouge_lsum(target: Sequence[Sequence[str]], prediction: Sequence[Sequence[str]]) -> RougeScore:
    """Summary-level LCS over sentences (ROUGE paper §3.2, as rouge-score computes it)."""
    if not target or not prediction:
        return _ZERO
    m = sum(map(len, target))
    n = sum(map(len, prediction))
    if not n or not m:
        return _ZERO
    ref_counts: Counter[str] = Counter(t for s in target for t in s)
    can_counts: Counter[str] = Counter(t for s in prediction for t in s)
    hits = 0
    for sentence in target:
        work.check()  # sentence pairs grow as the product of the sentence counts
        union = sorted(set().union(*(_lcs_indices(sentence, c) for c in prediction)))
        for token in (sentence[i] for i in union):
            # The guard keeps a token from counting more often than it occurs.
            if can_counts[token] > 0 and ref_counts[token] > 0:
                hits += 1
                can_counts[token] -= 1
                ref_counts[token] -= 1
    recall = hits / m
    precision = hits / n
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def punkt_sentences(text: str) -> list[str]:
    """NLTK's punkt sentence split (what rouge-score's `split_summaries` uses)."""
    try:
        import nltk
    except ImportError:
        raise ConfigError(
            "split_summaries needs NLTK's sentence tokenizer: pip install nltk, then "
            "python -m nltk.downloader punkt_tab"
        ) from None
    try:
        sentences: list[str] = nltk.sent_tokenize(text)
    except LookupError:
        raise ConfigError(
            "split_summaries needs NLTK's punkt data: python -m nltk.downloader punkt_tab"
        ) from None
    return sentences


def check_split_summaries() -> None:
    """Raise ConfigError now, not mid-run, when `split_summaries` cannot work here."""
    punkt_sentences("A sentence.")


def rouge(
    target: str,
    prediction: str,
    rouge_type: RougeType,
    *,
    use_stemmer: bool = False,
    split_summaries: bool = False,
) -> RougeScore:
    """ROUGE of `prediction` against `target` (argument order as rouge-score's `score`)."""
    if rouge_type == "rougeLsum":

        def sentences(text: str) -> list[list[str]]:
            parts = punkt_sentences(text) if split_summaries else text.split("\n")
            return [rouge_tokens(p, use_stemmer=use_stemmer) for p in parts if p]

        return rouge_lsum(sentences(target), sentences(prediction))
    ref = rouge_tokens(target, use_stemmer=use_stemmer)
    pred = rouge_tokens(prediction, use_stemmer=use_stemmer)
    if rouge_type == "rougeL":
        return rouge_l(ref, pred)
    return rouge_n(ref, pred, int(rouge_type[5:]))
