"""The Porter stemmer, with the variations of NLTK's default (NLTK_EXTENSIONS) mode.

`response_match_score` must give rouge-score's numbers, and rouge-score stems with
`nltk.stem.porter.PorterStemmer()`; importing nltk costs about a second at start-up, so
assay carries its own stemmer. It implements M.F. Porter, "An algorithm for suffix
stripping", Program 14(3), 1980, with the changes that make up NLTK's default mode:

- a table of irregular forms, looked up first (skies -> sky, dying -> die, ...);
- words of one or two characters are returned unchanged;
- step 1a: a four-letter word ending in -ies loses only the s (ties -> tie);
- step 1b: -ied becomes -ie in a four-letter word and -i otherwise, with no further
  step 1b rule (died -> die, spied -> spi);
- step 1c: y -> i only after a consonant, and not in a two-letter word (happy -> happi,
  cry -> cri; enjoy and by stay);
- step 2: -bli -> -ble (not -abli -> -able); -alli -> -al is tried first and, when it
  applies, step 2 runs again on the result; extra rules -fulli -> -ful and -logi -> -log,
  the l of -logi counting as part of the stem for the measure (geologi -> geolog);
- the *o condition also holds for a two-letter stem vowel + consonant (any consonant).

Input is lowercased first. The stems are NLTK's for words of letters and digits, the
only words ROUGE stems: tests/metrics/test_porter.py compares the two on about 180,000
words (real texts, every word of up to three letters, stems x suffix combinations).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

__all__ = ["CACHE_SIZE", "stem", "stem_uncached"]

CACHE_SIZE: Final = 1 << 16
"""How many distinct words `stem` remembers (least recently used ones are dropped)."""

_IRREGULAR: Final[dict[str, str]] = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}


class _LetterClasses(dict[int, str]):
    """`str.translate` table: a/e/i/o/u -> "v", y -> "y" (decided later), others -> "c"."""

    def __missing__(self, code: int) -> str:
        # Not stored: any code point outside the prefilled ASCII range is a consonant,
        # and storing them would let arbitrary input grow the table.
        return "c"


_CLASSES: Final = _LetterClasses({code: "c" for code in range(128)})
_CLASSES.update({ord(vowel): "v" for vowel in "aeiou"})
_CLASSES[ord("y")] = "y"


def _shape(word: str) -> str:
    """One "c" (consonant) or "v" (vowel) per character of `word`.

    Porter's y is a consonant at the start of a word or after a vowel, and a vowel after
    a consonant. The shape of a prefix is the prefix of the shape, so the shape of the
    whole word answers every question about a stem cut from its front.
    """
    shape = word.translate(_CLASSES)
    if "y" not in shape:
        return shape
    chars: list[str] = []
    previous = "v"  # so that a leading y is a consonant
    for char in shape:
        if char == "y":
            char = "c" if previous == "v" else "v"
        chars.append(char)
        previous = char
    return "".join(chars)


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in [C](VC){m}[V]."""
    return _shape(stem).count("vc")


def _ends_cvc(stem: str, shape: str) -> bool:
    """Porter's *o (consonant-vowel-consonant, last not w/x/y), or NLTK's two-letter vc."""
    if len(stem) >= 3:
        return shape.endswith("cvc") and stem[-1] not in "wxy"
    return shape == "vc"


def _step1a(word: str) -> str:
    """Plurals: -sses -> -ss, -ies -> -i (-ie in a four-letter word), -ss stays, -s goes."""
    if not word.endswith("s"):
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("ss"):
        return word
    return word[:-1]


def _step1b(word: str) -> str:
    """Past tenses and gerunds: -ied, -eed, -ed, -ing, then the clean-up of the stem."""
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        # A word ending in -eed is decided here, even when m = 0 (feed stays feed).
        stem = word[:-3]
        return stem + "ee" if _measure(stem) > 0 else word
    if word.endswith("ed"):
        stem = word[:-2]
    elif word.endswith("ing"):
        stem = word[:-3]
    else:
        return word
    shape = _shape(stem)
    if "v" not in shape:
        return word
    # The e is put back so that step 4 can recognise -ate, -ble and -ize.
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if len(stem) >= 2 and stem[-1] == stem[-2] and shape[-1] == "c":
        return stem if stem[-1] in "lsz" else stem[:-1]
    if shape.count("vc") == 1 and _ends_cvc(stem, shape):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    """Final y -> i after a consonant, unless only that consonant precedes it."""
    if word.endswith("y") and len(word) > 2 and _shape(word)[-2] == "c":
        return word[:-1] + "i"
    return word


# Each step tries its suffixes in this order and stops at the first one the word ends
# with, whether or not its condition then holds (so -ement with a short stem is not
# retried as -ment or -ent).
_STEP2: Final = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    # -alli -> -al is not here: `_step2` tries it before this table (see there).
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("fulli", "ful"),
    ("logi", "log"),
)
_STEP3: Final = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4: Final = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
    "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip
_STEP2_ENDINGS: Final = tuple(suffix for suffix, _ in _STEP2)
_STEP3_ENDINGS: Final = tuple(suffix for suffix, _ in _STEP3)


def _step2(word: str) -> str:
    """Double suffixes to single ones (-ational -> -ate, ...), when m > 0."""
    # NLTK tries -alli -> -al first and then runs step 2 again on the result
    # (rationalli -> rational -> rational, generalli -> general). When m = 0 the word
    # is left alone, as no other suffix of the table ends a word ending in -alli.
    if word.endswith("alli"):
        return _step2(word[:-4] + "al") if _measure(word[:-4]) > 0 else word
    if not word.endswith(_STEP2_ENDINGS):
        return word
    for suffix, replacement in _STEP2:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            # The l of -logi is measured with the stem, so short stems (geo-, theo-)
            # behave like long ones (archaeo-, philo-).
            measured = stem + "l" if suffix == "logi" else stem
            return stem + replacement if _measure(measured) > 0 else word
    return word


def _step3(word: str) -> str:
    """-icate, -ative, -alize, -iciti, -ical, -ful, -ness, when m > 0."""
    if not word.endswith(_STEP3_ENDINGS):
        return word
    for suffix, replacement in _STEP3:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > 0 else word
    return word


def _step4(word: str) -> str:
    """Removes a final suffix when m > 1 (-ion only after s or t)."""
    if not word.endswith(_STEP4):
        return word
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                return stem
            return word
    return word


def _step5(word: str) -> str:
    """Tidying: a final e goes when m > 1 (or m = 1 and not *o); -ll -> -l when m > 1."""
    if word.endswith("e"):
        stem = word[:-1]
        shape = _shape(stem)
        measure = shape.count("vc")
        if measure > 1 or (measure == 1 and not _ends_cvc(stem, shape)):
            word = stem
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        return word[:-1]
    return word


def stem_uncached(word: str) -> str:
    """The Porter stem of `word` (lowercased), as NLTK's default `PorterStemmer` gives it.

    For callers that keep their own memo; most code wants `stem`.
    """
    lowered = word.lower()
    irregular = _IRREGULAR.get(lowered)
    if irregular is not None:
        return irregular
    if len(word) <= 2:
        return lowered
    return _step5(_step4(_step3(_step2(_step1c(_step1b(_step1a(lowered)))))))


@lru_cache(maxsize=CACHE_SIZE)
def stem(word: str) -> str:
    """The Porter stem of `word` (lowercased), remembered for the last `CACHE_SIZE` words.

    Equal to `nltk.stem.porter.PorterStemmer().stem(word)` in its default mode:
    "relational" -> "relat", "ponies" -> "poni", "dying" -> "die", "sky" -> "sky".
    """
    return stem_uncached(word)
