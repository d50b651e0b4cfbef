"""Benchmark: assay's ROUGE-1 (`response_match_score`) against rouge-score and ADK.

    python bench/rouge.py [--pairs 20000] [--seed 7]

Scores 20,000 seeded text pairs with rouge-score's `RougeScorer(["rouge1"],
use_stemmer=True)` and with `assay.metrics.tokenize.rouge1`, asserts the F-measures are
identical (|diff| <= 1e-9), and prints both times and the speed ratio. A second,
smaller run does the same for mixed-script (Unicode) text against google-adk's
`RougeEvaluator` tokenizer. assay's caches are cleared first: the timing includes
cold stemming. Not a test: nothing here is asserted about time.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence

from assay.metrics import tokenize as assay_rouge

# fmt: off
_STEMS = [
    "agent", "book", "flight", "hotel", "weather", "city", "price", "order", "account",
    "refund", "ticket", "schedule", "search", "result", "answer", "question", "user", "tool",
    "call", "response", "invoice", "payment", "deliver", "connect", "generate", "evaluate",
    "relate", "nation", "condition", "operate", "compute", "organize", "happy", "hope",
    "run", "swim", "argue", "cry", "fly", "study", "analyze", "summar", "categor",
]
_SUFFIXES = (
    "", "", "", "s", "es", "ed", "ing", "ly", "er", "ers", "ation", "ational", "ization",
    "ness", "fulness", "ive", "ies", "ment", "able", "ity",
)
_FILLER = [
    "the", "a", "an", "of", "to", "in", "on", "for", "is", "are", "was", "be", "it", "this",
    "that", "with", "as", "at", "by", "from", "and", "or",
]
# fmt: on


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words = list(_FILLER)
    while len(words) < size:
        stem = rng.choice(_STEMS)
        if rng.random() < 0.5:
            stem += rng.choice("abcdefghijklmnopqrstuvwxyz") * rng.randint(0, 1)
        words.append(stem + rng.choice(_SUFFIXES))
    return words


def _sentence(rng: random.Random, vocab: Sequence[str], weights: Sequence[float]) -> str:
    n = rng.randint(3, 60)
    words = rng.choices(vocab, weights=weights, k=n)
    out = []
    for w in words:
        r = rng.random()
        if r < 0.05:
            w = w.capitalize()
        elif r < 0.08:
            w = str(rng.randint(0, 5000))
        out.append(w + (rng.choice([",", ".", "!", "?", ";", ":"]) if rng.random() < 0.1 else ""))
    return " ".join(out)


def ascii_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Agent-response-like English pairs: Zipf-distributed words, suffixes, punctuation."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 4000)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    pairs = []
    for _ in range(n):
        ref = _sentence(rng, vocab, weights)
        cand = _sentence(rng, vocab, weights) if rng.random() < 0.5 else _perturb(rng, ref, vocab)
        pairs.append((cand, ref))
    return pairs


def _perturb(rng: random.Random, text: str, vocab: Sequence[str]) -> str:
    words = text.split()
    for _ in range(rng.randint(0, max(1, len(words) // 3))):
        words[rng.randrange(len(words))] = rng.choice(vocab)
    return " ".join(words)


def unicode_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    # fmt: off
    pieces = [
        "東京", "天気", "です", "ありがとう", "カタカナ", "안녕하세요", "สวัสดีครับ", "ภาษาไทย",
        "ສະບາຍດີ",
        "សួស្តី", "မင်္ဂလာပါ", "café", "naïve", "Straße", "привет", "γειά", "नमस्ते",
        "مرحبا", "😀", "ﬁle", "Ｆｕｌｌ", "running", "tested", "42", "。", "、", "!", "the",
        "agents",
    ]
    # fmt: on

    def text() -> str:
        return " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))

    return [(text(), text()) for _ in range(n)]


def _time(
    fn: Callable[[str, str], float], pairs: Sequence[tuple[str, str]]
) -> tuple[float, list[float]]:
    start = time.perf_counter()
    scores = [fn(c, r) for c, r in pairs]
    return time.perf_counter() - start, scores


def _compare(
    label: str,
    theirs_name: str,
    theirs: Callable[[str, str], float],
    pairs: Sequence[tuple[str, str]],
) -> float:
    assay_rouge._STEMS.clear()
    assay_rouge._CHARS.clear()
    t_ref, ref_scores = _time(theirs, pairs)
    t_ours, our_scores = _time(assay_rouge.rouge1_fmeasure, pairs)
    worst = max(abs(a - b) for a, b in zip(ref_scores, our_scores, strict=True))
    assert worst <= 1e-9, f"{label}: scores differ by up to {worst}"
    ratio = t_ref / t_ours
    print(f"{label}: {len(pairs)} pairs, identical scores (max |diff| {worst:.1e})")
    print(f"  {theirs_name:<28} {t_ref:8.3f} s")
    print(f"  {'assay':<28} {t_ours:8.3f} s")
    print(f"  speed-up                     {ratio:8.1f}x")
    return ratio


def _compare_evaluate(
    theirs: Callable[[str, str], float], pairs: Sequence[tuple[str, str]]
) -> float:
    """`assay.evaluate(rows, metrics=["response_match_score"])` on the pairs as Vertex
    rows — loading, the engine, the result and its summary included — against
    rouge-score on the same pairs, in this process. One tiny evaluate first imports
    what a first call imports (rouge-score's import is outside its timing too)."""
    from assay import evaluate

    rows = [{"response": c, "reference": r} for c, r in pairs]
    evaluate(rows[:2], metrics=["response_match_score"])
    ref_cpu0 = time.process_time()
    t_ref, ref_scores = _time(theirs, pairs)
    ref_cpu = time.process_time() - ref_cpu0
    assay_rouge._STEMS.clear()
    assay_rouge._CHARS.clear()
    cpu0, start = time.process_time(), time.perf_counter()
    result = evaluate(rows, metrics=["response_match_score"])
    t_ours, cpu = time.perf_counter() - start, time.process_time() - cpu0
    by_id = {c.case_id: c.metrics["response_match_score"].score for c in result.cases}
    ours = [by_id[f"row-{i}"] for i in range(len(pairs))]
    worst = max(abs(a - float(b or 0.0)) for a, b in zip(ref_scores, ours, strict=True))
    assert None not in ours and worst <= 1e-9, f"evaluate: scores differ by up to {worst}"
    ratio = t_ref / t_ours
    print(f"assay.evaluate vs rouge-score: {len(pairs)} pairs, identical scores")
    n = len(pairs)
    print(f"  {'rouge-score 0.1.2':<28} {t_ref:8.3f} s  ({ref_cpu / n * 1e6:.0f} us CPU/row)")
    print(f"  {'assay.evaluate':<28} {t_ours:8.3f} s  ({cpu / n * 1e6:.0f} us CPU/row)")
    print(f"  speed-up                     {ratio:8.1f}x  (CPU: {ref_cpu / cpu:.1f}x)")
    return ratio


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--unicode-pairs", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    pairs = ascii_pairs(args.pairs, args.seed)
    _compare(
        "ASCII vs rouge-score",
        "rouge-score 0.1.2",
        lambda c, r: scorer.score(r, c)["rouge1"].fmeasure,
        pairs,
    )
    _compare_evaluate(lambda c, r: scorer.score(r, c)["rouge1"].fmeasure, pairs)

    try:
        from google.adk.evaluation.final_response_match_v1 import _calculate_rouge_1_scores
    except ImportError:
        print("google-adk not installed: Unicode comparison skipped")
        return 0
    _compare(
        "Unicode vs ADK",
        "google-adk RougeEvaluator",
        lambda c, r: _calculate_rouge_1_scores(c, r).fmeasure,
        unicode_pairs(args.unicode_pairs, args.seed),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
