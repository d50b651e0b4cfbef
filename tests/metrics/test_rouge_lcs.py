"""ROUGE-L and ROUGE-Lsum in memory linear in the text: rouge-score's numbers, small tables.

`assay.metrics.rouge` computes the LCS bit-parallel (one integer per table row) and
reads rouge-score's backtrack a block of rows at a time; these tests hold it to
rouge-score's own table, backtrack and scores on generated texts (a small vocabulary,
so that long texts share many words and the LCS walks long), and bound the memory of
the 12,000-token pair that took 1.3 GiB with the full table.
"""

from __future__ import annotations

import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from assay.metrics.rouge import _lcs_indices, lcs_length, rouge

_WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "runs", "x1"]
_tokens = st.lists(st.sampled_from(_WORDS[:4]) | st.sampled_from(_WORDS), max_size=220)


@settings(max_examples=300, deadline=None)
@given(_tokens, _tokens)
def test_lcs_length_and_indices_are_rouge_scores(ref: list[str], can: list[str]) -> None:
    table = rouge_scorer._lcs_table(ref, can)
    assert lcs_length(ref, can) == table[-1][-1] == lcs_length(can, ref)
    assert _lcs_indices(ref, can) == rouge_scorer._backtrack_norec(table, ref, can)


_text = st.lists(
    st.sampled_from([*_WORDS, *_WORDS[:3], "\n", ".", "Runs", "running"]), max_size=400
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(_text, _text, st.booleans())
def test_rouge_l_and_lsum_equal_rouge_score(target: str, prediction: str, stem: bool) -> None:
    for kind in ("rougeL", "rougeLsum"):
        expected = rouge_scorer.RougeScorer([kind], use_stemmer=stem).score(target, prediction)
        got = rouge(target, prediction, kind, use_stemmer=stem)  # type: ignore[arg-type]
        assert tuple(got) == tuple(expected[kind]), kind


def _long_text(rng: random.Random, words: int) -> str:
    vocabulary = [f"w{i}" for i in range(2_000)]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _peak_bytes(target: str, prediction: str, kind: str) -> int:
    tracemalloc.start()
    try:
        rouge(target, prediction, kind)  # type: ignore[arg-type]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_12000_token_texts_score_in_a_few_megabytes() -> None:
    """The full table of two 12,000-token texts is 144 million cells (over 1 GiB)."""
    rng = random.Random(31)
    target, prediction = _long_text(rng, 12_000), _long_text(rng, 12_000)
    tokens_bytes = _peak_bytes(target, prediction, "rouge1")  # the tokens alone
    for kind in ("rougeL", "rougeLsum"):  # one line: rougeLsum's one sentence pair
        assert _peak_bytes(target, prediction, kind) < tokens_bytes + 8_000_000, kind


def test_long_texts_equal_rouge_score() -> None:
    rng = random.Random(7)
    target, prediction = _long_text(rng, 3_000), _long_text(rng, 2_000)
    target = target.replace(" w1 ", "\n", 40)
    for kind in ("rougeL", "rougeLsum"):
        expected = rouge_scorer.RougeScorer([kind]).score(target, prediction)[kind]
        assert tuple(rouge(target, prediction, kind)) == tuple(expected)  # type: ignore[arg-type]
