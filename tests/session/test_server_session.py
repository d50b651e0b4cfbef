"""What a server needs of a session: continue a stored run, store off the loop, and
leave a run another server took over alone."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from assay.agents.callable import CallableAgent
from assay.core import EvalCase, EvalSet
from assay.metrics import build_metric
from assay.session.run_session import RunSession
from assay.store import Store

ROWS = 4


def _evalset() -> EvalSet:
    return EvalSet(id="s", cases=[EvalCase.model_validate(
        {"id": f"c{i}", "scenario": None, "reference": [{"user_input": f"q{i}",
                                                          "final_response": f"Q{i}"}]}
    ) for i in range(ROWS)])  # fmt: skip


def _started(store: Store) -> str:
    return store.start_run(
        eval_set_ids=["s"], metrics=["response_match_score"], config={}, agent="a", runs=1
    )


def test_a_stored_run_is_continued_by_id_and_completed(tmp_path: Path) -> None:
    async def agent(text: str) -> str:
        return text.upper()

    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        run_id = _started(store)
        session = RunSession(
            [_evalset()],
            [build_metric("response_match_score", 0.5)],
            agent=CallableAgent(agent),
            store=store,
            continue_run=run_id,
            offload=True,
        )
        result = asyncio.run(session.arun())
        assert result.run_id == run_id and not session.resumed
        info = store.get_run(run_id)
        assert (info.status, info.case_count, info.passed) == ("COMPLETED", ROWS, ROWS)
        assert len(store.list_runs()) == 1  # no second run was started


def _cancel_midway(store: Store, run_id: str, *, abandon: bool) -> None:
    async def go() -> None:
        started = asyncio.Event()

        async def agent(text: str) -> str:
            started.set()
            await asyncio.sleep(30)  # cancelled here
            return text

        session = RunSession(
            [_evalset()],
            [build_metric("response_match_score", 0.5)],
            agent=CallableAgent(agent),
            store=store,
            continue_run=run_id,
            offload=True,
        )
        task = asyncio.create_task(session.arun())
        await started.wait()
        if abandon:
            session.abandon()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())


def test_an_abandoned_session_leaves_the_stored_run_as_it_is(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        taken = _started(store)
        _cancel_midway(store, taken, abandon=True)
        # Not INTERRUPTED: the run's state belongs to whoever took it over.
        assert store.get_run(taken).status == "RUNNING"
        # Without abandon, a cancelled session hands the run back as INTERRUPTED.
        mine = _started(store)
        _cancel_midway(store, mine, abandon=False)
        assert store.get_run(mine).status == "INTERRUPTED"
