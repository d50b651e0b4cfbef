"""Case selection: ids and globs, tags, limit, seeded sample."""

from __future__ import annotations

import pytest

from assay.core.cases import EvalCase, EvalSet
from assay.engine.selection import CaseSelection, select_cases
from assay.errors import ConfigError


def _sets() -> list[EvalSet]:
    first = EvalSet(
        id="home",
        cases=[
            EvalCase(id="energy_today", tags=["energy"]),
            EvalCase(id="energy_week", tags=["energy", "slow"]),
            EvalCase(id="lights_off"),
        ],
    )
    second = EvalSet(id="garden", cases=[EvalCase(id=f"water_{i}") for i in range(10)])
    return [first, second]


def _ids(sets: list[EvalSet]) -> list[str]:
    return [f"{s.id}/{c.id}" for s in sets for c in s.cases]


def test_no_selection_keeps_everything() -> None:
    sets = _sets()
    assert select_cases(sets, CaseSelection()) == sets


def test_ids_globs_and_qualified_ids() -> None:
    picked = select_cases(_sets(), CaseSelection(ids=("energy_*", "garden/water_1")))
    assert _ids(picked) == ["home/energy_today", "home/energy_week", "garden/water_1"]
    assert len(_sets()[0].cases) == 3  # the loaded sets are not changed


def test_tags_and_limit() -> None:
    assert _ids(select_cases(_sets(), CaseSelection(tags=("slow",)))) == ["home/energy_week"]
    assert _ids(select_cases(_sets(), CaseSelection(limit=4))) == [
        "home/energy_today", "home/energy_week", "home/lights_off", "garden/water_0",
    ]  # fmt: skip


def test_sample_is_seeded() -> None:
    first = _ids(select_cases(_sets(), CaseSelection(sample=5, seed=3)))
    again = _ids(select_cases(_sets(), CaseSelection(sample=5, seed=3)))
    other = _ids(select_cases(_sets(), CaseSelection(sample=5, seed=4)))
    assert first == again and len(first) == 5 and len(set(first)) == 5
    assert first != other
    assert len(_ids(select_cases(_sets(), CaseSelection(sample=50)))) == 13


def test_selecting_nothing_and_bad_numbers_are_errors() -> None:
    with pytest.raises(ConfigError, match="--case nope matched no case"):
        select_cases(_sets(), CaseSelection(ids=("nope",)))
    with pytest.raises(ConfigError, match="--limit must be a positive"):
        CaseSelection(limit=0)
