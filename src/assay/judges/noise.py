"""The statistics of judge noise: self-consistency across repeats, intervals.

- `fleiss_kappa(counts)`: Fleiss' κ of items rated by the same number of raters (here:
  the repeats of one judge), from each item's count per category (Fleiss 1971).
- `flip_rate(counts)`: for one item, the chance that two of its repeats, drawn without
  replacement, disagree (1 - the item's pairwise agreement, Fleiss' P_i): 0 when every
  repeat gave the same verdict, 0.5 for two repeats that split.
- `wilson_interval(k, n)`: a 95 % interval for a proportion k/n.

(The interval of a mean is `assay.engine.stats.bootstrap_ci`, one group per item:
`assay.session.judge_noise.mean_interval`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: the z of a two-sided 95 % interval
Z95 = 1.959963984540054


def flip_rate(counts: Sequence[int]) -> float | None:
    """The chance two repeats of one item disagree; None with fewer than two repeats."""
    n = sum(counts)
    if n < 2:
        return None
    agree = (sum(c * c for c in counts) - n) / (n * (n - 1))
    return 1.0 - agree


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ of `table` (one row per item, one column per category, each row the
    number of raters who chose each category; every row sums to the same count).

    None when it is undefined: no item, fewer than two raters, or every rating in one
    category (chance agreement is then 1). Raises ValueError for rows of unequal sums.
    """
    rows = [list(r) for r in table if sum(r) > 0]
    if not rows:
        return None
    raters = sum(rows[0])
    if any(sum(r) != raters for r in rows):
        raise ValueError("Fleiss' kappa needs the same number of ratings for every item")
    if raters < 2:
        return None
    items = len(rows)
    agreement = sum(1.0 - (flip_rate(r) or 0.0) for r in rows) / items
    categories = len(rows[0])
    shares = [sum(r[j] for r in rows) / (items * raters) for j in range(categories)]
    chance = sum(p * p for p in shares)
    if math.isclose(chance, 1.0):
        return None
    return (agreement - chance) / (1.0 - chance)


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson's score interval for the proportion k/n (None when n is 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
