"""Vertex computation metrics on text: numbers equal to rouge-score and sacrebleu."""

from __future__ import annotations

import logging
import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from assay.core.cases import EvalCase, Turn
from assay.core.results import Status
from assay.errors import ConfigError
from assay.metrics.bleu import sentence_bleu, tokenize_13a
from assay.metrics.registry import build_metric
from assay.metrics.rouge import rouge

# Words chosen to hit the tokenizers' edge cases: punctuation between digits, dashes,
# HTML entities, apostrophes, case, stemming suffixes, non-ASCII words, newlines.
WORDS = (
    "the cat sat on a mat running runs ran dogs dog generously 3.5 1,000 U.S. e-mail "
    "x-1 2-3 & &amp; &quot; <skipped> <tag> don't it's Hello HELLO naïve 日本 Straße "
    ", . ; : ( ) -- ? !"
)
VOCAB = [*WORDS.split(" "), "\n", "-\n"]


def _corpus(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)

    def text() -> str:
        return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 30)))

    return [(text(), text()) for _ in range(n)]


PAIRS = [*_corpus(7, 400), ("", ""), ("", "a"), ("a", ""), ("The cat.", "The cat.")]


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("use_stemmer", [False, True])
def test_rouge_equals_rouge_score(rouge_type: str, use_stemmer: bool) -> None:
    scorer = rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer)
    for reference, prediction in PAIRS:
        expected = scorer.score(reference, prediction)[rouge_type]
        got = rouge(reference, prediction, rouge_type, use_stemmer=use_stemmer)  # type: ignore[arg-type]
        assert tuple(got) == tuple(expected), (reference, prediction)


@pytest.mark.parametrize("effective_order", [False, True])
def test_bleu_equals_sacrebleu_sentence_bleu_over_100(effective_order: bool) -> None:
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its effective-order advice
    for reference, prediction in PAIRS:
        expected = sacrebleu.sentence_bleu(
            prediction, [reference], use_effective_order=effective_order
        ).score
        got = sentence_bleu(prediction, reference, use_effective_order=effective_order)
        assert got.score == expected / 100, (reference, prediction)


def test_13a_tokenizer_equals_sacrebleu() -> None:
    tokenizer = sacrebleu.BLEU().tokenizer
    for reference, prediction in PAIRS:
        for text in (reference, prediction):
            assert tokenize_13a(text) == tokenizer(text.rstrip()).split()


def _case_score(name: str, criterion: object, response: str | None, reference: str | None):  # type: ignore[no-untyped-def]
    metric = build_metric(name, criterion)  # type: ignore[arg-type]
    case = EvalCase(id="c", expected_response=reference)
    return metric.score_case(case, [Turn(final_response=response)], [None])


def test_metrics_by_their_vertex_names() -> None:
    ref = "The quick brown fox jumps over the lazy dog"
    pred = "The quick brown foxes jumped over a lazy dog"
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
    expected = scorer.score(ref, pred)
    for name, kind in [("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"),
                       ("rouge_l_sum", "rougeLsum")]:  # fmt: skip
        result = _case_score(name, None, pred, ref)
        assert result.score == expected[kind].fmeasure
        assert result.per_invocation[0].details == {
            "precision": expected[kind].precision,
            "recall": expected[kind].recall,
        }
        assert result.status == Status.PASSED  # no threshold of its own, as in Vertex
    stemmed = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(ref, pred)["rouge1"]
    assert _case_score("rouge_1", {"use_stemmer": True}, pred, ref).score == stemmed.fmeasure
    generic = _case_score("rouge", {"rouge_type": "rouge2"}, pred, ref)
    assert generic.score == expected["rouge2"].fmeasure
    assert _case_score("rouge", None, pred, ref).score == expected["rougeL"].fmeasure
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    bleu = _case_score("bleu", {"threshold": 0.3}, pred, ref)
    assert bleu.score == sacrebleu.sentence_bleu(pred, [ref], use_effective_order=False).score / 100
    assert bleu.status == Status.FAILED


def test_exact_match_is_exact() -> None:
    assert _case_score("exact_match", None, "Paris", "Paris").score == 1.0
    assert _case_score("exact_match", None, "Paris ", "Paris").score == 0.0
    assert _case_score("exact_match", None, "paris", "Paris").status == Status.FAILED
    assert _case_score("exact_match", None, "", "").score == 1.0


def test_missing_reference_is_not_evaluated() -> None:
    for name in ("exact_match", "bleu", "rouge_1", "rouge_l_sum"):
        result = _case_score(name, None, "text", None)
        assert result.score is None and result.status == Status.NOT_EVALUATED
        assert result.explanation is not None and "no reference response" in result.explanation


def test_multiline_rouge_l_sum_uses_lines_as_sentences() -> None:
    ref = "The cat sat.\nThe dog ran."
    pred = "The dog ran.\nThe cat sat."
    expected = rouge_scorer.RougeScorer(["rougeLsum"]).score(ref, pred)["rougeLsum"].fmeasure
    assert _case_score("rouge_l_sum", None, pred, ref).score == expected == 1.0
    assert _case_score("rouge_l", None, pred, ref).score == pytest.approx(0.5)


def test_contradicting_rouge_type_and_unusable_split_summaries_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="rouge_type 'rouge2' contradicts the name"):
        build_metric("rouge_1", {"rouge_type": "rouge2"})
    with pytest.raises(ConfigError, match="rouge_type: Input should be"):
        build_metric("rouge", {"rouge_type": "rougeX"})
    try:
        import nltk

        nltk.sent_tokenize("A. B.")
    except LookupError:
        with pytest.raises(ConfigError, match=r"rouge_l_sum.*split_summaries.*punkt_tab"):
            build_metric("rouge_l_sum", {"split_summaries": True})
