"""assay's Porter stemmer against NLTK's `PorterStemmer()` (default mode), word for word.

rouge-score stems with NLTK's stemmer, so any difference would change ROUGE numbers:
every comparison below allows zero differences. The vocabularies are the project's real
texts, rouge-score's own test data, every word of one to three letters, and words built
from English stems and suffix combinations that reach every rule of every step.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
import rouge_score
from nltk.stem.porter import PorterStemmer

from assay.metrics import porter
from assay.metrics.tokenize import tokenize

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data"
_WORD = re.compile(r"[a-z]+")
_NLTK = PorterStemmer()


def _differences(words: Iterable[str]) -> list[tuple[str, str, str]]:
    """(word, nltk's stem, ours) for every word where the two disagree."""
    return [
        (word, expected, got)
        for word in sorted(set(words))
        if (expected := _NLTK.stem(word)) != (got := porter.stem_uncached(word))
    ]


def _words_of(paths: Iterable[Path]) -> set[str]:
    words: set[str] = set()
    for path in paths:
        words.update(_WORD.findall(path.read_text(encoding="utf-8", errors="replace").lower()))
    return words


# The examples of Porter's paper (rules in order), with NLTK's variations where it has
# them (ties, flies, spied, cry, geology, generalli); checked by hand, not against NLTK.
PAPER_EXAMPLES = {
    "caresses": "caress", "ponies": "poni", "ties": "tie", "caress": "caress",
    "cats": "cat", "feed": "feed", "agreed": "agre", "plastered": "plaster",
    "bled": "bled", "motoring": "motor", "sing": "sing", "conflated": "conflat",
    "troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan",
    "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
    "filing": "file", "happy": "happi", "sky": "sky", "relational": "relat",
    "conditional": "condit", "rational": "ration", "valenci": "valenc",
    "hesitanci": "hesit", "digitizer": "digit", "conformabli": "conform",
    "radicalli": "radic", "differentli": "differ", "vileli": "vile",
    "analogousli": "analog", "vietnamization": "vietnam", "predication": "predic",
    "operator": "oper", "feudalism": "feudal", "decisiveness": "decis",
    "hopefulness": "hope", "callousness": "callous", "formaliti": "formal",
    "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
    "formative": "form", "formalize": "formal", "electriciti": "electr",
    "electrical": "electr", "hopeful": "hope", "goodness": "good", "revival": "reviv",
    "allowance": "allow", "inference": "infer", "airliner": "airlin",
    "gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
    "irritant": "irrit", "replacement": "replac", "adjustment": "adjust",
    "dependent": "depend", "adoption": "adopt", "homologou": "homolog",
    "communism": "commun", "activate": "activ", "angulariti": "angular",
    "homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler",
    "probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control",
    "roll": "roll", "dies": "die", "died": "die", "spied": "spi", "flies": "fli",
    "enjoy": "enjoy", "spy": "spi", "cry": "cri", "by": "by", "geology": "geolog",
    "archaeology": "archaeolog", "generalli": "gener", "rationalli": "ration",
    "dying": "die", "lying": "lie", "skies": "sky", "news": "news", "innings": "inning",
    "proceed": "proceed", "exceed": "exceed", "owe": "owe", "owed": "owe",
    "syzygy": "syzygi", "toy": "toy", "Relational": "relat", "a": "a", "": "",
}  # fmt: skip


@pytest.mark.parametrize(("word", "expected"), sorted(PAPER_EXAMPLES.items()))
def test_paper_examples(word: str, expected: str) -> None:
    assert porter.stem(word) == expected
    assert porter.stem_uncached(word) == expected


# English stems of every shape the conditions look at: measure 0 to 3, ending in a
# vowel, a consonant, y after a vowel or a consonant, a double consonant (l/s/z or not),
# consonant-vowel-consonant with and without w/x/y, s or t (for -ion), at/bl/iz.
STEMS = (
    "relat", "condit", "rat", "valen", "hesit", "digit", "conform", "radic", "differ",
    "vil", "analog", "vietnam", "predic", "oper", "feud", "decis", "hope", "callous",
    "form", "sensit", "sensib", "geo", "theo", "archaeo", "philo", "triplic", "electr",
    "good", "reviv", "allow", "infer", "airlin", "gyroscop", "adjust", "defens", "irrit",
    "replac", "depend", "adopt", "homolog", "commun", "activ", "angular", "effect",
    "bowdler", "prob", "ceas", "control", "caress", "pon", "cat", "agr", "plaster",
    "motor", "conflat", "troubl", "siz", "hopp", "tann", "fall", "hiss", "fizz", "fail",
    "fil", "happ", "enjo", "sp", "tr", "b", "y", "a", "e", "snow", "box", "play", "sew",
    "fix", "toy", "syzyg", "crit", "nat", "educ", "nation", "gener", "stat", "us", "oat",
    "iv", "orrer", "privat", "possess", "admiss", "abl", "at", "bl", "iz", "yy", "sky",
    "dy", "ly", "ti", "de", "fe", "agre", "proc", "exc", "succ", "inn", "out", "cann",
    "manage", "replace", "encourage",
)  # fmt: skip
# Suffixes of steps 2-4 (and forms that reach them once step 1 has run: -ly -> -li,
# -ity -> -iti), then the endings steps 1a-1c and 5 look at.
DERIVATIONAL = (
    "", "ational", "tional", "enci", "ency", "anci", "ancy", "izer", "bli", "bly", "abli",
    "ably", "alli", "ally", "entli", "ently", "eli", "ely", "ousli", "ously", "ization",
    "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "ality", "iviti",
    "ivity", "biliti", "bility", "fulli", "fully", "logi", "logy", "icate", "ative",
    "alize", "iciti", "icity", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic",
    "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism",
    "ate", "iti", "ity", "ous", "ive", "ize", "e", "y", "ll", "at", "bl", "iz", "i",
    "abl", "ibl",
)  # fmt: skip
INFLECTIONAL = (
    "", "s", "es", "ies", "ied", "ed", "eed", "ing", "ly", "y", "e", "sses", "ss",
)  # fmt: skip


def generated_words() -> set[str]:
    return {
        stem + derivational + inflectional
        for stem in STEMS
        for derivational in DERIVATIONAL
        for inflectional in INFLECTIONAL
    }


def test_generated_words_match_nltk() -> None:
    words = generated_words()
    assert len(words) >= 50_000
    assert _differences(words) == []


def test_short_words_match_nltk() -> None:
    # Every word of one to three letters (where the length guard and the irregular
    # table matter), and every four-letter word over letters the -ies/-ied/-eed/-sses
    # rules and the y and double-consonant conditions look at.
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(p) for n in (1, 2, 3) for p in itertools.product(letters, repeat=n)}
    words.update("".join(p) for p in itertools.product("aeiouybdlstz", repeat=4))
    assert len(words) > 38_000
    assert _differences(words) == []


def test_random_words_match_nltk() -> None:
    # Letters weighted towards those in suffixes, plus digits (ROUGE stems [a-z0-9]+).
    rng = random.Random(1980)
    alphabet = "aeiouyybcdglnnrsssttzwx0" + "aeilnost" * 2
    words = {
        "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 16))) for _ in range(30_000)
    }
    assert _differences(words) == []


def test_irregular_forms_and_case_match_nltk() -> None:
    irregular = ["sky", "skies", "dying", "lying", "tying", "news", "inning", "innings"]
    irregular += ["outing", "outings", "canning", "cannings", "howe", "proceed", "exceed"]
    irregular += ["succeed"]
    words = irregular + [w.upper() for w in irregular] + ["Ponies", "HOPEFULNESS", "Y", "Ab"]
    assert _differences(words) == []


def test_project_texts_match_nltk() -> None:
    # The project's own prose (README, docs) and the real-world fixtures it carries.
    repo = SHARED.parents[1]
    prose = [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
    realworld = sorted(p for p in (SHARED / "realworld").rglob("*") if p.is_file())
    assert realworld
    words = _words_of([*prose, *realworld])
    assert len(words) > 1_000
    assert _differences(words) == []


def test_rouge_score_test_data_matches_nltk() -> None:
    package = Path(rouge_score.__file__).parent
    sources = sorted(package.glob("*_test.py")) + sorted(package.glob("testdata/**/*.txt"))
    words = _words_of(sources)
    assert len(words) > 100
    assert _differences(words) == []


def test_stem_is_memoised_in_a_bounded_cache() -> None:
    porter.stem.cache_clear()
    assert porter.stem("generalizations") == "gener"
    assert porter.stem("generalizations") == "gener"
    info = porter.stem.cache_info()
    assert (info.hits, info.misses, info.maxsize) == (1, 1, porter.CACHE_SIZE)


def test_tokenize_stems_with_assays_stemmer() -> None:
    assert tokenize("The relational Databases, ponies and skies") == [
        "the", "relat", "databas", "poni", "and", "sky",
    ]  # fmt: skip


def test_lexical_metric_does_not_import_nltk() -> None:
    code = "import sys, assay.metrics.lexical; print(sorted({'nltk'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
