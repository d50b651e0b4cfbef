"""ROUGE-N, ROUGE-L and ROUGE-Lsum with the numbers of Google's `rouge-score` package.

The same tokenizer (lowercase, every run of characters outside `[a-z0-9]` separates
tokens, Porter stem of words longer than three characters when `use_stemmer`), the
same n-gram counting, the same LCS table and the same summary-level union LCS (with
its tie-breaking and double-count guard), in the same floating-point order: scores
are identical to `rouge_score.rouge_scorer.RougeScorer([type], use_stemmer=...)`.
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


def _lcs_table(ref: Sequence[str], can: Sequence[str]) -> list[list[int]]:
    table = [[0] * (len(can) + 1) for _ in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        row, above, r = table[i], table[i - 1], ref[i - 1]
        for j in range(1, len(can) + 1):
            row[j] = above[j - 1] + 1 if r == can[j - 1] else max(above[j], row[j - 1])
    return table


def rouge_l(target: Sequence[str], prediction: Sequence[str]) -> RougeScore:
    if not target or not prediction:
        return _ZERO
    lcs = _lcs_table(target, prediction)[-1][-1]
    precision = lcs / len(prediction)
    recall = lcs / len(target)
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def _lcs_indices(ref: Sequence[str], can: Sequence[str]) -> list[int]:
    """Indices into `ref` of one LCS, read back as rouge-score does (ties go up)."""
    table = _lcs_table(ref, can)
    i, j = len(ref), len(can)
    out: list[int] = []
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            out.append(i - 1)
            i -= 1
            j -= 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    out.reverse()
    return out


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
