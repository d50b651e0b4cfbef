"""One run lifecycle: `assay.evaluate` resumes an interrupted run as `assay eval` does."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

import assay
from assay.core import EvalCase, EvalSet, Turn
from assay.engine import RunOptions
from assay.metrics import build_metric
from assay.session.run_session import RunSession
from assay.store import Store

CASES = 8
ROWS = [{"id": f"q{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(CASES)]


class _Agent:
    """Answers in upper case; says when its `stop_at`-th call has started."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.stop_at = stop_at
        self.reached = asyncio.Event()

    async def __call__(self, prompt: str) -> str:
        self.calls.append(prompt)
        if len(self.calls) == self.stop_at:
            self.reached.set()
            await asyncio.sleep(30)  # cancelled here: this case never completes
        await asyncio.sleep(0)
        return prompt.upper()


def _interrupt(url: str, agent: _Agent) -> None:
    """An `aevaluate` stopped midway, as a notebook's interrupt or a cancelled task does."""

    async def go() -> None:
        task = asyncio.create_task(
            assay.aevaluate(
                ROWS, metrics=["response_match_score"], agent=agent, store=url, concurrency=1
            )
        )
        await agent.reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())


def test_evaluate_resumes_an_interrupted_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    first = _Agent(stop_at=4)
    _interrupt(url, first)
    with Store.open(url) as store:
        (run,) = store.list_runs()
        assert run.status == "INTERRUPTED"
        done_before = {case for _, case, _ in store.completed_case_keys(run.id)}
    assert done_before == {"q0", "q1", "q2"}  # the three completed before the interrupt

    again = _Agent()
    result = assay.evaluate(
        ROWS, metrics=["response_match_score"], agent=again, store=url, concurrency=1
    )
    assert result.run_id == run.id  # the same run, continued
    assert sorted(again.calls) == [f"q{i}" for i in range(3, CASES)]  # only what was left
    assert len(result.cases) == CASES and result.summary["row_count"] == CASES
    with Store.open(url) as store:
        info = store.get_run(run.id)
        assert (info.status, info.case_count, info.passed) == ("COMPLETED", CASES, CASES)
        stored = Counter(doc["case_id"] for doc in store.case_results(run.id))
    assert stored == Counter(f"q{i}" for i in range(CASES))  # each case stored once


def test_fresh_starts_a_new_run_and_other_options_are_another_evaluation(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    _interrupt(url, _Agent(stop_at=2))
    kw = {"metrics": ["response_match_score"], "store": url}
    other = assay.evaluate(ROWS, agent=_Agent(), run_method="naive", **kw)  # type: ignore[arg-type]
    fresh = assay.evaluate(ROWS, agent=_Agent(), fresh=True, **kw)  # type: ignore[arg-type]
    with Store.open(url) as store:
        runs = {r.id: r.status for r in store.list_runs()}
    assert len({other.run_id, fresh.run_id, *runs}) == 3
    assert sorted(runs.values()) == ["COMPLETED", "COMPLETED", "INTERRUPTED"]


def test_a_session_without_a_store_runs_and_records_nothing() -> None:
    cases = [
        EvalCase(id=f"c{i}", actual=[Turn(user_input="q", final_response="a")]) for i in range(3)
    ]
    session = RunSession(
        [EvalSet(id="s", cases=cases)],
        [build_metric("response_match_score", 0.5)],
        options=RunOptions(runs=2),
    )
    assert session.total == 6
    result = session.run()
    assert session.run_id is None and result.run_id is None
    assert len(result.cases) == 6
    assert len(session.partial_result().cases) == 6


class _YesJudge:
    """An in-process judge backend rating every answer `yes`, counting its calls."""

    backend = "scripted"
    calls = 0

    def __init__(self, model: str) -> None:
        self.model = model

    async def complete(self, messages: object, settings: object) -> object:
        from assay.judges.types import BackendReply

        _YesJudge.calls += 1
        return BackendReply('{"rationale": "fine", "rating": "yes"}')

    async def aclose(self) -> None:
        return None


async def test_a_session_with_a_store_runs_with_the_callers_judge_pool(tmp_path: Path) -> None:
    """A `JudgePool` the caller owns (as calibration passes one) judges the session's
    run as given, also with a store (the store is not forced on it as its cache), and
    stays open for the caller's next run."""
    from assay.formats import format_module
    from assay.judges.client import JudgePool

    rows = [
        {
            "request_id": f"r{i}",
            "request": f"q{i}?",
            "response": f"a{i}",
            "expected_response": f"a{i}",
        }
        for i in range(3)
    ]
    evalset = format_module("mlflow").load_data(rows, file=None, mapping=None)
    evalset.id = "judged"
    metric = build_metric("correctness", {"judge_model_options": {"judge_model": "openai:s"}})
    _YesJudge.calls = 0
    pool = JudgePool(
        default_model="openai:s",
        backend_factory=lambda model, options=None, *, timeout_s: _YesJudge(model),
    )
    url = f"sqlite:///{tmp_path / 'j.db'}"
    try:
        with Store.open(url) as store:
            first = await RunSession([evalset], [metric], judges=pool, store=store).arun()
            again = await RunSession(
                [evalset], [metric], judges=pool, store=store, fresh=True
            ).arun()
            runs = {run.id: run.status for run in store.list_runs()}
    finally:
        await pool.aclose()
    assert runs == {first.run_id: "COMPLETED", again.run_id: "COMPLETED"}
    assert first.summary["judge/calls"] == 3 and _YesJudge.calls == 3
    # The second run was judged from the pool's own cache: the same pool, still open.
    assert again.summary["judge/calls"] == 0 and again.summary["judge/cache_hits"] == 3
    assert {c.metrics["correctness"].score for c in again.cases} == {1.0}
