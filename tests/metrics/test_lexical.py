"""response_match_score: ROUGE-1 with the Porter stemmer, Unicode-aware tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import load_config
from assay.core.cases import EvalCase, Turn
from assay.core.results import Status
from assay.metrics.lexical import NO_REFERENCE, ResponseMatchScore
from assay.metrics.registry import build_metric
from assay.metrics.tokenize import rouge1, rouge1_fmeasure, tokenize

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"


def test_spec_known_value_is_8_over_11() -> None:
    score = rouge1("This is a test candidate response.", "This is a test reference.")
    assert score.precision == pytest.approx(4 / 6)
    assert score.recall == pytest.approx(4 / 5)
    assert score.fmeasure == pytest.approx(8 / 11, abs=1e-12)


@pytest.mark.parametrize(
    ("candidate", "reference", "expected"),
    [
        ("", "", 0.0),
        ("", "some reference", 0.0),
        ("some response", "", 0.0),
        ("...!?", "--- ;;", 0.0),
        ("   \n\t ", "words here", 0.0),
        ("Call 555-1234 now", "call 555 1234 now", 1.0),
        ("2024 sales: 42 units", "42 units in 2024", 0.75),
        ("The agents were running tests", "the agent was run test", pytest.approx(0.8)),
        ("HELLO World", "hello world", 1.0),
    ],
)
def test_ascii_values(candidate: str, reference: str, expected: float) -> None:
    assert rouge1_fmeasure(candidate, reference) == expected


def test_ascii_tokens_follow_rouge_score() -> None:
    # only words longer than three characters are stemmed; punctuation separates words
    assert tokenize("was uses running, it's") == ["was", "use", "run", "it", "s"]
    assert tokenize("e-mail_address 3.14") == ["e", "mail", "address", "3", "14"]


def test_cjk_is_one_token_per_character() -> None:
    assert tokenize("東京は晴れです。") == ["東", "京", "は", "晴", "れ", "で", "す"]
    assert tokenize("안녕 하세요") == ["안", "녕", "하", "세", "요"]
    # 5 shared characters, 7 vs 6 tokens
    assert rouge1_fmeasure("東京は晴れです", "東京は雨です") == pytest.approx(10 / 13)


def test_thai_is_split_into_clusters_with_their_marks() -> None:
    assert tokenize("สวัสดี") == ["ส", "วั", "ส", "ดี"]
    assert rouge1_fmeasure("สวัสดีครับ", "สวัสดีครับ") == 1.0


def test_other_non_ascii_words_are_kept_whole_and_not_stemmed() -> None:
    assert tokenize("Café runnings naïve") == ["café", "run", "naïve"]
    assert tokenize("Привет, мир") == ["привет", "мир"]
    assert rouge1_fmeasure("café", "cafe") == 0.0


def test_nfkc_folds_width_and_ligatures() -> None:
    assert tokenize("ＡＢＣ ﬁle") == ["abc", "file"]
    assert rouge1_fmeasure("ＨＥＬＬＯ", "hello") == 1.0


def test_emoji_are_dropped() -> None:
    assert tokenize("😀🎉") == []
    assert rouge1_fmeasure("hello 😀", "hello") == 1.0


def _case(*turns: tuple[str | None, str | None], expected_response: str | None = None) -> EvalCase:
    return EvalCase(
        id="c1",
        reference=[Turn(final_response=ref) for _, ref in turns],
        actual=[Turn(final_response=act) for act, _ in turns],
        expected_response=expected_response,
    )


def _score(metric: ResponseMatchScore, case: EvalCase) -> tuple[float | None, Status | None]:
    assert case.actual is not None and case.reference is not None
    result = metric.score_case(case, case.actual, list(case.reference))
    return result.score, result.status


def test_metric_scores_the_mean_over_invocations_with_threshold_08() -> None:
    metric = ResponseMatchScore()
    assert metric.threshold == 0.8
    case = _case(("same words", "same words"), ("different", "nothing alike"))
    assert _score(metric, case) == (0.5, Status.FAILED)


def test_missing_reference_is_no_score_not_zero() -> None:
    metric = ResponseMatchScore()
    result = metric.score_case(_case(("hello", None)), [Turn(final_response="hello")], [None])
    assert result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert result.per_invocation[0].explanation == NO_REFERENCE


def test_single_turn_case_falls_back_to_expected_response() -> None:
    metric = ResponseMatchScore()
    case = EvalCase(id="row", expected_response="paris is the capital")
    result = metric.score_case(case, [Turn(final_response="Paris is the capital")], [None])
    assert result.score == 1.0
    assert result.status is Status.PASSED


def test_multi_turn_case_does_not_use_expected_response_per_turn() -> None:
    metric = ResponseMatchScore()
    case = EvalCase(id="multi", expected_response="yes")
    turns = [Turn(final_response="yes"), Turn(final_response="yes")]
    result = metric.score_case(case, turns, [None, None])
    assert result.score is None
    assert all(s.explanation == NO_REFERENCE for s in result.per_invocation)


def test_missing_response_scores_zero_with_a_reason_and_agent_error_is_no_score() -> None:
    metric = ResponseMatchScore()
    ref = Turn(final_response="expected answer")
    silent = metric.score_invocation(Turn(), ref, EvalCase(id="c"))
    assert silent.value == 0.0
    assert silent.explanation == "the agent gave no final response"
    crashed = metric.score_invocation(Turn(error="boom"), ref, EvalCase(id="c"))
    assert crashed.value is None
    assert crashed.explanation is not None and "boom" in crashed.explanation


def test_threshold_comes_from_a_real_adk_config() -> None:
    config = load_config(REALWORLD / "adk" / "legacy_trip_planner" / "test_config.json")
    metric = build_metric("response_match_score", config.criteria["response_match_score"])
    assert isinstance(metric, ResponseMatchScore)
    assert metric.threshold == 0.5
    case = _case(("This is a test candidate response.", "This is a test reference."))
    assert _score(metric, case)[1] is Status.PASSED


def test_ascii_tokens_equal_rouge_scores_tokenizer_on_any_ascii() -> None:
    # Every ASCII character, control and separator characters included, in random
    # words: the translate-and-split tokenizer gives rouge-score's tokens.
    import random

    from rouge_score.tokenizers import DefaultTokenizer

    rng = random.Random(5)
    theirs = DefaultTokenizer(use_stemmer=True)
    letters = [chr(c) for c in range(128)]
    for _ in range(2000):
        text = "".join(
            rng.choice(letters) if rng.random() < 0.3 else rng.choice("aeiouRSTrunning ")
            for _ in range(rng.randint(0, 40))
        )
        assert tokenize(text) == theirs.tokenize(text), repr(text)
