"""What the streamed API returns and tells, streamed or loaded alike: `keep_cases=N`
(at most N case results, the first that did not pass, the whole run's summary, every
result in the store; the results held bounded while the run streams) and the
`observers`."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

import assay
from api_stream_helpers import (
    METRICS,
    Observer,
    UpperAgent,
    spy_streamed,
    stored_run,
    untimed,
    write_rows,
)
from assay.core.results import CaseResult
from assay.errors import ConfigError
from assay.report.json_report import case_to_adk


def _sevens(prompt: str) -> str:
    """Fails every seventh row (a wrong answer), answers the others."""
    return "something else" if int(prompt[1:]) % 7 == 0 else prompt.upper()


async def test_keep_cases_keeps_the_first_that_did_not_pass_streamed_as_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 60)
    streamed_runs = spy_streamed(monkeypatch)
    kwargs: dict[str, Any] = {"metrics": METRICS, "agent": _sevens, "keep_cases": 3}
    told = [Observer(), Observer()]
    streamed = await assay.aevaluate(
        data, store=f"sqlite:///{tmp_path / 'a.db'}", observers=[told[0]], **kwargs
    )
    assert len(streamed_runs) == 1
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        loaded = await assay.aevaluate(data, observers=[told[1]], **kwargs)
        everything = await assay.aevaluate(data, metrics=METRICS, agent=_sevens)
    assert len(streamed_runs) == 1
    # Observers see every case run, and at the end the result returned (on both paths).
    for observer in told:
        assert observer.events[0] == ("start", 60) and len(observer.events) == 62
        assert observer.events[-1] == ("finish", 3)
    assert [c.case_id for c in streamed.cases] == ["row-0", "row-7", "row-14"]
    docs = [[untimed(case_to_adk(c)) for c in r.cases] for r in (streamed, loaded)]
    assert docs[0] == docs[1]
    assert [row["case_id"] for row in streamed.rows] == ["row-0", "row-7", "row-14"]
    assert untimed(streamed.rows) == untimed(loaded.rows)
    # The summary is the whole run's, as if every case had been kept.
    assert untimed(streamed.summary) == untimed(everything.summary)
    assert untimed(loaded.summary) == untimed(everything.summary)
    assert streamed.summary["row_count"] == 60 and streamed.summary["failed"] == 9
    info, cases = stored_run(f"sqlite:///{tmp_path / 'a.db'}")  # the store holds them all
    assert (info.id, info.status, len(cases)) == (streamed.run_id, "COMPLETED", 60)
    # A run with no more case runs than the bound keeps them all.
    small = await assay.aevaluate(write_rows(tmp_path / "few.jsonl", 3), **kwargs)
    assert [c.case_id for c in small.cases] == ["row-0", "row-1", "row-2"]


async def test_with_keep_cases_the_results_held_do_not_grow_with_the_rows(
    tmp_path: Path,
) -> None:
    """Case results alive while the agent runs (counted every 50th call): a few for the
    window with `keep_cases=0`; every one so far when all are kept."""

    async def most_results_held(rows: int, keep_cases: int | None) -> tuple[int, int]:
        most, calls = 0, 0
        gc.collect()  # earlier tests' garbage is not this run's: only what it holds counts
        # Results other tests of this process still hold (caches, fixtures) are not this
        # run's either: counted from what is alive before it starts.
        before = sum(isinstance(o, CaseResult) for o in gc.get_objects())

        async def answer(prompt: str) -> str:
            nonlocal most, calls
            calls += 1
            if calls % 50 == 0:
                held = sum(isinstance(o, CaseResult) for o in gc.get_objects()) - before
                most = max(most, held)
            await asyncio.sleep(0)
            return prompt.upper()

        data = write_rows(tmp_path / f"rows{rows}.jsonl", rows)
        result = await assay.aevaluate(
            data, metrics=METRICS, agent=answer, concurrency=4, keep_cases=keep_cases
        )
        assert result.summary["row_count"] == rows == result.summary["passed"]
        return most, len(result.cases)

    held_all, kept_all = await most_results_held(2_000, None)  # the probe sees them
    assert held_all > 1_900 and kept_all == 2_000
    small, large = await most_results_held(200, 0), await most_results_held(2_000, 0)
    assert small[1] == large[1] == 0
    assert small[0] <= 20 and large[0] <= 20, (small, large)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
async def test_a_bad_keep_cases_is_refused_before_anything_runs(tmp_path: Path, bad: Any) -> None:
    agent = UpperAgent()
    with pytest.raises(ConfigError, match="keep_cases") as raised:
        await assay.aevaluate(write_rows(tmp_path / "r.jsonl", 3), METRICS, agent, keep_cases=bad)
    assert "\n" not in str(raised.value) and agent.calls == []


async def test_observers_are_told_what_the_loaded_run_tells_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 30)
    streamed_runs = spy_streamed(monkeypatch)
    streamed = Observer()
    await assay.aevaluate(data, METRICS, UpperAgent(), concurrency=3, observers=[streamed])
    assert len(streamed_runs) == 1  # observers no longer load the rows
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        loaded = Observer()
        await assay.aevaluate(data, METRICS, UpperAgent(), concurrency=3, observers=[loaded])
    for seen in (streamed.events, loaded.events):
        assert seen[0] == ("start", 30) and seen[-1] == ("finish", 30)
        assert sorted(case for _, case in seen[1:-1]) == sorted(f"row-{i}" for i in range(30))


async def test_an_observer_that_raises_ends_the_run_as_an_error(tmp_path: Path) -> None:
    class Broken(Observer):
        def on_case_done(self, result: Any) -> None:
            super().on_case_done(result)
            if len(self.events) == 6:
                raise RuntimeError("the progress bar broke")

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with pytest.raises(RuntimeError, match="the progress bar broke"):
        await assay.aevaluate(
            write_rows(tmp_path / "rows.jsonl", 30), METRICS, UpperAgent(), store=url,
            observers=[Broken()],
        )  # fmt: skip
    info, _ = stored_run(url)
    assert info.status == "ERROR"
