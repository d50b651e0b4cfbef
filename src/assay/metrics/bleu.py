"""Sentence BLEU as Vertex AI computes it: sacrebleu's sentence BLEU, on a 0..1 scale.

Vertex's `BleuSpec` has one option, `use_effective_order` (sacrebleu's name), and
returns "a score between 0 and 1"; this is sacrebleu's `sentence_bleu(prediction,
[reference], use_effective_order=...)` (tokenizer `13a`, exponential smoothing, case
kept, n-grams up to 4) divided by 100. The arithmetic follows sacrebleu's steps in the
same order, so the numbers are the same floats; the conformance tests compare with the
`sacrebleu` package itself.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import NamedTuple

MAX_ORDER = 4

# mteval-v13a's tokenizer (sacrebleu's `13a`): symbols split off, then periods and
# commas unless between digits, then a dash after a digit.
_TOKEN_RULES = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)


def tokenize_13a(line: str) -> list[str]:
    """sacrebleu's `13a` tokenization of one segment."""
    line = line.rstrip()
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (
            line.replace("&quot;", '"')
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
        )
    line = f" {line} "
    for pattern, replacement in _TOKEN_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _ngrams(tokens: list[str]) -> Counter[tuple[str, ...]]:
    return Counter(
        tuple(tokens[i : i + n])
        for n in range(1, MAX_ORDER + 1)
        for i in range(len(tokens) - n + 1)
    )


class BleuScore(NamedTuple):
    score: float  # 0..1
    precisions: tuple[float, ...]  # per n-gram order, 0..100 as sacrebleu reports them
    brevity_penalty: float


def _log(value: float) -> float:
    # sacrebleu floors log(0) to a huge negative number rather than raising.
    return -9999999999 if value == 0.0 else math.log(value)


def sentence_bleu(prediction: str, reference: str, *, use_effective_order: bool) -> BleuScore:
    """BLEU of `prediction` against one `reference`, 0..1."""
    hyp = tokenize_13a(prediction)
    ref = tokenize_13a(reference)
    hyp_ngrams, ref_ngrams = _ngrams(hyp), _ngrams(ref)
    correct = [0] * MAX_ORDER
    total = [0] * MAX_ORDER
    for gram, count in hyp_ngrams.items():
        total[len(gram) - 1] += count
        if gram in ref_ngrams:
            correct[len(gram) - 1] += min(count, ref_ngrams[gram])
    sys_len, ref_len = len(hyp), len(ref)
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * MAX_ORDER
    if not any(correct):
        return BleuScore(0.0, tuple(precisions), bp)
    smooth = 1.0
    order = MAX_ORDER
    for n in range(1, MAX_ORDER + 1):
        if total[n - 1] == 0:
            break
        if use_effective_order:
            order = n
        if correct[n - 1] == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    score = bp * math.exp(sum(_log(p) for p in precisions[:order]) / order)
    return BleuScore(score / 100, tuple(precisions), bp)
