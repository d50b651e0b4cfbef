"""response_match_score gives rouge-score's numbers on ASCII and ADK's on any text.

Seeded random pairs: >= 1,000 ASCII pairs against `rouge_score.RougeScorer(["rouge1"],
use_stemmer=True)` and >= 1,000 mixed-script pairs against google-adk's
`RougeEvaluator.evaluate_invocations`; every score must agree within 1e-9.
"""

from __future__ import annotations

import random

import pytest

from assay.core.cases import EvalCase, Turn
from assay.metrics.lexical import ResponseMatchScore
from assay.metrics.tokenize import rouge1_fmeasure

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
adk_rouge = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
genai_types = pytest.importorskip("google.genai.types")

PAIRS = 1_200

# fmt: off
# Stems with the suffixes Porter's steps rewrite (step 1a-5b), plus short words that
# must not be stemmed and words the NLTK extensions special-case.
_STEMS = [
    "connect", "relat", "condition", "rational", "valen", "hesit", "digit", "conform",
    "radic", "differ", "vile", "analog", "vietnam", "predic", "hope", "happ", "run", "agre",
    "fil", "siz", "plaster", "bled", "motor", "sing", "cares", "poni", "ti", "caress", "cat",
    "feed", "troubl", "generaliz", "oscill", "electric", "adjust", "depend", "activ",
    "sensibil", "gener", "formal", "roll", "control", "skies", "dying", "lying", "news",
    "howe", "atlas", "cosmos", "bias", "andes",
]
_SUFFIXES = [
    "", "", "s", "es", "ies", "sses", "ed", "ing", "eed", "at", "bl", "iz", "y", "ational",
    "tional", "enci", "anci", "izer", "abli", "alli", "entli", "eli", "ousli", "ization",
    "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti",
    "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er",
    "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate", "iti",
    "ous", "ive", "ize", "e", "l", "ly", "li",
]
_SHORT = ["a", "is", "was", "the", "bus", "has", "its", "ies", "sky", "ran", "ox", "i"]
_PUNCT = [".", ",", "!", "?", ";", ":", "'", '"', "-", "--", "(", ")", "/", "_", "@", "#", "%"]
_SPACE = [" ", " ", " ", "  ", "\t", "\n", " \r\n "]
# fmt: on


def _ascii_word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.1:
        return str(rng.randint(0, 10 ** rng.randint(1, 6)))
    if roll < 0.25:
        word = rng.choice(_SHORT)
    elif roll < 0.3:
        word = "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(1, 9))
        )
    else:
        word = rng.choice(_STEMS) + rng.choice(_SUFFIXES)
    if rng.random() < 0.15:
        word = word.upper() if rng.random() < 0.5 else word.capitalize()
    return word


def _ascii_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return ""
    if roll < 0.08:
        return "".join(rng.choice(_PUNCT + _SPACE) for _ in range(rng.randint(1, 6)))
    parts = []
    for _ in range(rng.randint(1, 30)):
        parts.append(_ascii_word(rng))
        if rng.random() < 0.2:
            parts.append(rng.choice(_PUNCT))
        parts.append(rng.choice(_SPACE) if rng.random() < 0.9 else "")
    return "".join(parts)


def _ascii_pairs() -> list[tuple[str, str]]:
    rng = random.Random(20240611)
    pairs = []
    for _ in range(PAIRS):
        reference = _ascii_text(rng)
        if rng.random() < 0.4 and reference:
            words = reference.split()
            rng.shuffle(words)
            candidate = " ".join([*words[: rng.randint(0, len(words))], _ascii_word(rng)])
        else:
            candidate = _ascii_text(rng)
        pairs.append((candidate, reference))
    return pairs


def test_ascii_pairs_match_rouge_score() -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    pairs = _ascii_pairs()
    assert sum(1 for c, r in pairs if not c or not r) >= 20  # empty texts are covered
    for candidate, reference in pairs:
        expected = scorer.score(reference, candidate)["rouge1"].fmeasure
        assert abs(rouge1_fmeasure(candidate, reference) - expected) <= 1e-9, (
            candidate,
            reference,
        )


# Pieces from many scripts and the corner cases of ADK's tokenizer: CJK ranges and the
# characters just outside them, Thai/Lao/Khmer/Myanmar with combining marks (also at the
# start of a text), decomposed accents, NFKC-folded forms, case mappings that change
# length, emoji and joiners, and ASCII words that get stemmed.
# fmt: off
_UNICODE_PIECES = [
    "東京", "天気", "晴れ", "です", "ありがとう", "カタカナ", "ー", "ｶﾀｶﾅ", "㐀㐁", "豈",
    "안녕하세요", "가", "สวัสดีครับ", "ภาษาไทย", "น้ำ", "ำ", "ั", "฿", "๑๒", "ฯ",
    "ສະບາຍດີ", "សួស្តី", "មិត្ត", "မင်္ဂလာပါ", "၁၂", "café", "cafe\u0301", "naïve",
    "Straße", "İstanbul", "ǅ", "Ω", "K", "привет", "МИР", "γειά", "ΣΟΦΊΑ", "नमस्ते",
    "हिन्दी", "مرحبا", "שלום", "😀", "👩\u200d💻", "\u200b", "ﬁle", "Ｆｕｌｌ", "①", "²", "Ⅻ",
    "½", "™", "。", "、", "！", "résumé", "résumés", "cafés", "running", "tested",
    "generalizations", "a", "the", "agents", "42", "3.14", "-", "...", "\u0301", "x\u0308",
    "\u00a0", "\u3000",
]
# fmt: on


def _unicode_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.1:
        # random code points from the interesting blocks, no surrogates
        blocks = [
            (0x0E00, 0x0E7F),
            (0x0E80, 0x0EFF),
            (0x1000, 0x109F),
            (0x1780, 0x17FF),
            (0x3040, 0x30FF),
            (0x4E00, 0x4E40),
            (0xAC00, 0xAC40),
            (0x0300, 0x036F),
            (0x00A0, 0x024F),
            (0x2000, 0x206F),
            (0xFF00, 0xFFEF),
        ]
        out = []
        for _ in range(rng.randint(1, 20)):
            lo, hi = rng.choice(blocks)
            out.append(chr(rng.randint(lo, hi)))
        return "".join(out)
    sep = ["", " ", " ", "\n", "、"]
    return "".join(rng.choice(_UNICODE_PIECES) + rng.choice(sep) for _ in range(rng.randint(1, 20)))


def _unicode_pairs() -> list[tuple[str, str]]:
    rng = random.Random(7)
    return [(_unicode_text(rng), _unicode_text(rng)) for _ in range(PAIRS)]


def _invocation(text: str) -> object:
    content = genai_types.Content(role="model", parts=[genai_types.Part(text=text)])
    user = genai_types.Content(role="user", parts=[genai_types.Part(text="q")])
    return adk_case.Invocation(user_content=user, final_response=content)


def test_unicode_pairs_match_adk_rouge_evaluator() -> None:
    pairs = _unicode_pairs()
    evaluator = adk_rouge.RougeEvaluator(
        adk_metrics.EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    result = evaluator.evaluate_invocations(
        [_invocation(c) for c, _ in pairs], [_invocation(r) for _, r in pairs]
    )
    assert len(result.per_invocation_results) == PAIRS
    assert sum(1 for p in result.per_invocation_results if 0 < p.score < 1) > PAIRS // 4
    for (candidate, reference), adk in zip(pairs, result.per_invocation_results, strict=True):
        assert abs(rouge1_fmeasure(candidate, reference) - adk.score) <= 1e-9, (
            candidate,
            reference,
        )


def test_metric_case_score_matches_adk_overall_score() -> None:
    pairs = _unicode_pairs()[:25] + _ascii_pairs()[:25]
    evaluator = adk_rouge.RougeEvaluator(
        adk_metrics.EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    adk = evaluator.evaluate_invocations(
        [_invocation(c) for c, _ in pairs], [_invocation(r) for _, r in pairs]
    )
    case = EvalCase(id="conformance", reference=[Turn(final_response=r) for _, r in pairs])
    actual = [Turn(final_response=c) for c, _ in pairs]
    ours = ResponseMatchScore().score_case(case, actual, list(case.reference or []))
    assert ours.score is not None
    assert abs(ours.score - adk.overall_score) <= 1e-9
