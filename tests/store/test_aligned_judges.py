"""Aligned judges in the store: versions per name, nothing overwritten, survives a
reopen, and a missing name or version is an error naming it (SQLite and PostgreSQL)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from assay.errors import ConfigError
from assay.judges.align import AlignedExample, AlignedJudgeSpec
from assay.store import Store


def _spec(name: str = "frm", guideline: str = "check the facts") -> AlignedJudgeSpec:
    return AlignedJudgeSpec(
        name=name,
        version=0,
        metric="final_response_match_v2",
        judge_model="openai:stand-in",
        guidelines=(guideline, "Compare every key fact — even “quoted” ones."),
        examples=(
            AlignedExample({"prompt": "p", "response": "r"}, "invalid", "wrong date"),
            AlignedExample({"response": "ok"}, "valid"),
        ),
        kappa_before=0.5,
        kappa_after=0.9,
        report={"verdict": "gain", "folds": [{"fold": 1, "kappa_after": 1.0}]},
    )


def test_versions_count_per_name_and_round_trip(store: Store, store_url: str) -> None:
    first = store.aligned_judges.add(_spec())
    second = store.aligned_judges.add(_spec(guideline="another rule"))
    other = store.aligned_judges.add(_spec(name="safety"))
    assert (first.version, second.version, other.version) == (1, 2, 1)
    assert first.created_at is not None

    store.close()
    with Store.open(store_url) as reopened:
        repo = reopened.aligned_judges
        newest = repo.resolve("frm")
        assert newest.version == 2 and newest.guidelines[0] == "another rule"
        old = repo.resolve("frm", 1)
        assert old.guidelines == _spec().guidelines
        assert old.examples == _spec().examples
        assert (old.kappa_before, old.kappa_after) == (0.5, 0.9)
        assert old.report == _spec().report
        assert [(s.name, s.version) for s in repo.list_judges()] == [
            ("frm", 1),
            ("frm", 2),
            ("safety", 1),
        ]
        with pytest.raises(ConfigError, match=r"no aligned judge named 'nope'"):
            repo.resolve("nope")
        with pytest.raises(ConfigError, match=r"'frm' has no version 7 .*versions: 1, 2"):
            repo.resolve("frm", 7)


def test_writers_at_once_each_get_their_own_version(store: Store) -> None:
    with ThreadPoolExecutor(4) as pool:
        stored = list(
            pool.map(lambda i: store.aligned_judges.add(_spec(guideline=str(i))), range(8))
        )
    assert sorted(s.version for s in stored) == list(range(1, 9))
    kept = {s.version: s.guidelines[0] for s in store.aligned_judges.list_judges()}
    assert {s.version: s.guidelines[0] for s in stored} == kept


def test_a_bad_name_is_refused(store: Store) -> None:
    with pytest.raises(ConfigError, match="aligned judge name 'a b'"):
        store.aligned_judges.add(_spec(name="a b"))
