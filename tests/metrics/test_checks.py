"""Deterministic text checks: contains…, starts_with, regex_match, equals, levenshtein."""

from __future__ import annotations

import random

import pytest

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Status
from assay.errors import ConfigError
from assay.metrics.checks import edit_distance, levenshtein_similarity, trimmed
from assay.metrics.registry import build_metric


def _run(name: str, criterion: object, *responses: str | None, **case: object) -> MetricResult:
    metric = build_metric(name, criterion)  # type: ignore[arg-type]
    turns = [Turn(final_response=r) for r in responses]
    return metric.score_case(EvalCase(id="c", **case), turns, [None] * len(turns))  # type: ignore[arg-type]


def test_contains_is_case_sensitive_by_default_and_explains() -> None:
    hit = _run("contains", {"value": "Paris"}, "The capital is Paris.")
    assert (hit.score, hit.status) == (1.0, Status.PASSED)
    assert hit.per_invocation[0].explanation == "the response contains 'Paris'"
    miss = _run("contains", {"value": "Paris"}, "the capital is paris")
    assert (miss.score, miss.status) == (0.0, Status.FAILED)
    assert miss.per_invocation[0].explanation == "the response does not contain 'Paris'"
    folded = _run("contains", {"value": "Paris", "caseSensitive": False}, "PARIS!")
    assert folded.score == 1.0


def test_contains_compares_unicode_normalised_and_case_folded() -> None:
    decomposed = "Cafe\u0301 ouvert"  # "Café" with a combining accent
    assert _run("contains", {"value": "Café"}, decomposed).score == 1.0
    assert _run("contains", {"value": "straße", "case_sensitive": False}, "STRASSE 5").score == 1.0
    assert _run("contains", {"value": "東京"}, "首都は東京です").score == 1.0


def test_case_score_is_the_mean_over_invocations() -> None:
    result = _run("contains", {"value": "ok"}, "ok", "no", "ok", "fine")
    assert result.score == 0.5
    assert result.status == Status.FAILED  # default threshold 1.0: every turn must pass
    assert _run("contains", {"value": "ok", "threshold": 0.5}, "ok", "no").status == Status.PASSED


def test_contains_all_scores_the_share_found_and_names_the_missing() -> None:
    result = _run("contains_all", {"values": ["x1", "x2", "x3", "x4"]}, "x1 with x3")
    assert result.score == 0.5
    assert result.per_invocation[0].explanation == (
        "the response contains 2 of 4 values; missing: 'x2', 'x4'"
    )
    assert _run("contains_all", {"values": ["x", "y"]}, "x y").score == 1.0


def test_contains_any() -> None:
    result = _run("contains_any", {"values": ["refund", "credit"]}, "We issued a credit.")
    assert result.score == 1.0
    assert result.per_invocation[0].explanation == "the response contains 'credit'"
    none = _run("contains_any", {"values": ["refund", "credit"]}, "Sorry.")
    assert none.score == 0.0
    assert none.per_invocation[0].explanation == "the response contains none of 'refund', 'credit'"


def test_starts_with() -> None:
    assert _run("starts_with", {"value": "Sure"}, "Sure, done.").score == 1.0
    miss = _run("starts_with", {"value": "Sure"}, "No way")
    assert miss.score == 0.0
    assert miss.per_invocation[0].explanation == "the response starts with 'No w', not 'Sure'"
    assert _run("starts_with", {"value": "sure", "case_sensitive": False}, "SURE").score == 1.0


def test_regex_match_searches_or_full_matches_with_named_flags() -> None:
    assert _run("regex_match", {"pattern": r"\border #\d+"}, "Your order #123 ships").score == 1.0
    assert _run("regex_match", {"pattern": r"ORDER", "flags": ["IGNORECASE"]}, "order").score == 1.0
    assert _run("regex_match", {"pattern": r"\d+", "full_match": True}, "12 apples").score == 0.0
    assert _run("regex_match", {"pattern": r"\d+", "fullMatch": True}, "12").score == 1.0
    explained = _run("regex_match", {"pattern": r"\d{3}"}, "call 5551234")
    assert explained.per_invocation[0].explanation == r"/\d{3}/ matches '555'"


def test_equals_normalises_case_and_whitespace_by_default_against_the_reference() -> None:
    result = _run("equals", {}, "  the answer is   42 ", expected_response="The answer is 42")
    assert result.score == 1.0
    assert result.per_invocation[0].explanation == "the response equals the reference"
    strict = {"case_sensitive": True, "ignore_whitespace": False}
    assert _run("equals", strict, "the answer", expected_response="The answer").score == 0.0
    punct = {"ignore_punctuation": True}
    assert _run("equals", punct, "¿Qué pasa?", expected_response="qué pasa").score == 1.0
    assert _run("equals", {"value": "yes"}, "YES").score == 1.0


def test_missing_reference_is_not_evaluated_with_the_reason_never_zero() -> None:
    for name in ("equals", "levenshtein"):
        result = _run(name, {}, "anything")
        assert result.score is None
        assert result.status == Status.NOT_EVALUATED
        assert result.explanation is not None and "no reference response" in result.explanation
    # A given value needs no reference.
    assert _run("levenshtein", {"value": "anything"}, "anything").score == 1.0


def test_empty_and_missing_responses() -> None:
    empty = _run("contains", {"value": "x"}, "")
    assert empty.score == 0.0
    missing = _run("contains", {"value": "x"}, None)
    assert missing.score == 0.0
    assert missing.per_invocation[0].explanation == (
        "the agent gave no final response; the response does not contain 'x'"
    )
    failed = build_metric("contains", {"value": "x"}).score_case(
        EvalCase(id="c"), [Turn(error="boom")], [None]
    )
    assert failed.score is None and failed.status == Status.NOT_EVALUATED
    assert failed.explanation == "the agent failed before responding: boom"


def test_levenshtein_similarity_and_threshold() -> None:
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3
    assert levenshtein_similarity("", "") == 1.0
    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    result = _run("levenshtein", {}, "kitten", expected_response="sitting")
    assert result.score == pytest.approx(1 - 3 / 7)
    assert result.status == Status.FAILED  # default threshold 0.8
    assert result.per_invocation[0].details == {"distance": 3}
    lenient = _run("levenshtein", {"threshold": 0.5}, "kitten", expected_response="sitting")
    assert lenient.status == Status.PASSED
    # Unicode counts characters, not bytes.
    assert _run("levenshtein", {"value": "naïve"}, "naive").score == pytest.approx(0.8)


def test_multi_turn_reference_comes_from_each_expected_turn() -> None:
    metric = build_metric("equals", {})
    case = EvalCase(id="c", reference=[Turn(final_response="a"), Turn(final_response="b")])
    result = metric.score_case(
        case,
        [Turn(final_response="A"), Turn(final_response="c")],
        [Turn(final_response="a"), Turn(final_response="b")],
    )
    assert [s.value for s in result.per_invocation] == [1.0, 0.0]
    assert result.score == 0.5


@pytest.mark.parametrize(
    ("name", "criterion", "fragment"),
    [
        ("contains", {}, "value: Field required"),
        ("contains", {"value": ""}, "value: String should have at least 1 character"),
        ("contains_all", {"values": []}, "values: List should have at least 1 item"),
        ("regex_match", {"pattern": "(("}, "pattern: Value error, invalid regular expression"),
        ("regex_match", {"pattern": "a", "flags": ["NOPE"]}, "flags.0: Input should be"),
        # a misspelt option is refused (keys nothing like an option are ignored, as ADK
        # does: see test_registry.test_foreign_criterion_key_is_ignored_with_one_warning)
        ("equals", {"ignore_punctuatoin": True}, "ignore_punctuatoin: Extra inputs"),
    ],
)
def test_bad_options_are_config_errors_naming_the_metric(
    name: str, criterion: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ConfigError) as err:
        build_metric(name, criterion)
    assert f"bad options for metric {name!r}" in str(err.value)
    assert fragment in str(err.value)


def test_levenshtein_trims_common_ends_and_refuses_huge_texts() -> None:
    long = "x" * 20_000
    # Only the middle differs: fast, and the same distance as the full table.
    result = _run("levenshtein", {"value": long + "ab" + long}, long + "b" + long)
    assert result.per_invocation[0].details == {"distance": 1}
    huge = _run("levenshtein", {"value": "a" * 6000}, "b" * 6000)
    assert huge.score is None and huge.status == Status.NOT_EVALUATED
    assert huge.explanation == (
        "texts too long for levenshtein (6000 and 6000 characters); "
        "use rouge_l or bleu for long texts"
    )


def test_trimming_never_changes_the_distance() -> None:
    rng = random.Random(3)
    for _ in range(500):
        a = "".join(rng.choice("abc") for _ in range(rng.randint(0, 9)))
        b = "".join(rng.choice("abc") for _ in range(rng.randint(0, 9)))
        assert edit_distance(*trimmed(a, b)) == edit_distance(a, b), (a, b)
