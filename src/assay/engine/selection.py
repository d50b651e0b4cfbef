"""Case selection before a run: `--case ID` (globs), `--tag`, `--limit N`, `--sample N`.

Filters apply in that order: ids and tags narrow the eval sets, then `sample` draws N
cases at random (seeded, so a CI job evaluates the same sample every time) and `limit`
keeps the first N. Eval sets left without a case are dropped; selecting nothing at all
is an error that says which filters matched nothing.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Sequence
from dataclasses import dataclass

from assay.core.cases import EvalCase, EvalSet
from assay.errors import ConfigError


@dataclass(frozen=True, slots=True)
class CaseSelection:
    """Which cases of the loaded eval sets to run; the default selects every case."""

    ids: tuple[str, ...] = ()  # case ids or shell-style globs (`energy_*`), or SET/ID
    tags: tuple[str, ...] = ()  # a case with any of these tags
    limit: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("limit", "sample"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name} must be a positive number of cases, got {value}")

    @property
    def active(self) -> bool:
        return bool(self.ids or self.tags or self.limit or self.sample)

    def describe(self) -> dict[str, object]:
        """The selection as a document (stored with the run; resume matches on it)."""
        return {
            "ids": list(self.ids),
            "tags": list(self.tags),
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed if self.sample else None,
        }


def _id_matches(patterns: Sequence[str], evalset: EvalSet, case: EvalCase) -> bool:
    qualified = f"{evalset.id}/{case.id}"
    return any(fnmatch.fnmatchcase(case.id, p) or fnmatch.fnmatchcase(qualified, p)
               for p in patterns)  # fmt: skip


def select_cases(evalsets: Sequence[EvalSet], selection: CaseSelection) -> list[EvalSet]:
    """The eval sets with only the selected cases (the inputs are not changed)."""
    if not selection.active:
        return list(evalsets)
    picked: list[tuple[int, EvalCase]] = []
    for index, evalset in enumerate(evalsets):
        for case in evalset.cases:
            if selection.ids and not _id_matches(selection.ids, evalset, case):
                continue
            if selection.tags and not set(selection.tags) & set(case.tags):
                continue
            picked.append((index, case))
    if not picked:
        wanted = [f"--case {i}" for i in selection.ids] + [f"--tag {t}" for t in selection.tags]
        known = sorted({c.id for e in evalsets for c in e.cases})
        shown = ", ".join(known[:10]) + (" …" if len(known) > 10 else "")
        raise ConfigError(
            f"{' '.join(wanted)} matched no case; the eval sets have: {shown or 'no cases'}"
        )
    if selection.sample is not None and selection.sample < len(picked):
        chosen = set(random.Random(selection.seed).sample(range(len(picked)), selection.sample))
        picked = [p for i, p in enumerate(picked) if i in chosen]
    if selection.limit is not None:
        picked = picked[: selection.limit]
    kept: dict[int, list[EvalCase]] = {}
    for index, case in picked:
        kept.setdefault(index, []).append(case)
    return [evalsets[i].model_copy(update={"cases": cases}) for i, cases in sorted(kept.items())]
