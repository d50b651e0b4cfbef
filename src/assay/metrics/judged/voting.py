"""Combining judge samples (SPEC §4.4): majority vote, ties to the negative label.

Each sample is one judge call. Samples whose reply could not be parsed are left out of
the vote (they arrive here as None); with no parsed sample there is no verdict. Every
vote reports self-agreement: the share of parsed samples that agree with the outcome.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

L = TypeVar("L", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Vote(Generic[L]):
    """The outcome of a vote over judge samples."""

    label: L | None  # None when no sample could be parsed
    parsed: int  # samples that took part in the vote
    discarded: int  # samples left out because their reply could not be parsed
    agreement: float | None  # share of parsed samples equal to `label`

    @property
    def decided(self) -> bool:
        return self.label is not None


def _vote(samples: Sequence[L | None], winner: L | None) -> Vote[L]:
    parsed = [s for s in samples if s is not None]
    if winner is None or not parsed:
        return Vote(None, 0, len(samples), None)
    agree = sum(1 for s in parsed if s == winner)
    return Vote(winner, len(parsed), len(samples) - len(parsed), agree / len(parsed))


def binary_vote(samples: Sequence[bool | None]) -> Vote[bool]:
    """Majority of yes (True) / no (False) samples; a tie counts as no."""
    parsed = [s for s in samples if s is not None]
    if not parsed:
        return _vote(samples, None)
    yes = sum(parsed)
    return _vote(samples, yes > len(parsed) - yes)


def ordinal_vote(samples: Sequence[int | None]) -> Vote[int]:
    """Most frequent value of an ordinal scale (higher = better); a tie takes the lowest
    tied value, the negative end, as a binary tie takes "no"."""
    parsed = [s for s in samples if s is not None]
    if not parsed:
        return _vote(samples, None)
    counts = Counter(parsed)
    top = max(counts.values())
    return _vote(samples, min(v for v, c in counts.items() if c == top))


def label_vote(samples: Sequence[str | None], order: Sequence[str]) -> Vote[str]:
    """Most frequent label; a tie takes the tied label that comes first in `order`
    (list the labels from most negative to most positive)."""
    parsed = [s for s in samples if s is not None]
    if not parsed:
        return _vote(samples, None)
    counts = Counter(parsed)
    top = max(counts.values())
    rank = {label: i for i, label in enumerate(order)}
    tied = [v for v, c in counts.items() if c == top]
    return _vote(samples, min(tied, key=lambda v: rank.get(v, -1)))
