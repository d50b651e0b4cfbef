"""A session hands each finished case run to every output (`CaseOutputs`: the store
first, then the observers) and its finished run to its sinks: in order, reports before
other tools, partial results only to the sinks that take them."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assay.core import EvalCase, EvalSet, Turn
from assay.core.results import CaseResult, EvalResult
from assay.engine.aggregate import build_result
from assay.engine.runner import score_recorded
from assay.metrics import build_metric
from assay.session.run_session import RunSession
from assay.session.sinks import CaseOutputs, FinishedRun, ReportFiles
from assay.store import Store, StoreRecorder


@dataclass
class _Seen:
    """A sink that remembers what it was handed."""

    label: str
    partial: bool
    log: list[tuple[str, int, bool, list[str]]] = field(default_factory=list)

    def deliver(self, run: FinishedRun) -> list[str]:
        names = [p.name for p in run.artifacts]
        self.log.append((self.label, len(run.result.cases), run.interrupted, names))
        return [f"{self.label} got {len(run.result.cases)}"]


def _evalset(n: int) -> EvalSet:
    cases = [
        EvalCase(
            id=f"c{i}",
            actual=[Turn(user_input="q", final_response="a")],
            reference=[Turn(user_input="q", final_response="a")],
        )
        for i in range(n)
    ]
    return EvalSet(id="s", cases=cases)


def test_sinks_get_the_completed_run_in_order_with_the_files_written_before(
    tmp_path: Path,
) -> None:
    log: list[tuple[str, int, bool, list[str]]] = []
    said: list[str] = []
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        session = RunSession(
            [_evalset(3)],
            [build_metric("response_match_score", 0.5)],
            store=store,
            sinks=[
                ReportFiles(out=tmp_path / "r.json", csv_path=tmp_path / "r.csv"),
                _Seen("other", partial=False, log=log),
            ],
            say=said.append,
        )
        result = session.run()
        # The store marked the run COMPLETED before any sink saw it.
        assert store.get_run(session.run_id or "").status == "COMPLETED"
    assert log == [("other", 3, False, ["r.json", "r.csv"])]
    assert said == [f"wrote {tmp_path / 'r.json'}", f"wrote {tmp_path / 'r.csv'}", "other got 3"]
    report = json.loads((tmp_path / "r.json").read_text())
    # The files hold the stored run: its id and its three cases.
    assert report["run_id"] == result.run_id is not None
    assert len(report["cases"]) == 3


class _Stopper:
    """An observer that interrupts the run once `after` cases completed."""

    def __init__(self, after: int) -> None:
        self.after, self.count = after, 0

    def on_start(self, total: int) -> None:
        return None

    def on_case_done(self, result: object) -> None:
        self.count += 1
        if self.count == self.after:
            raise KeyboardInterrupt

    def on_finish(self, result: object) -> None:
        return None


def test_an_interrupted_run_goes_only_to_the_sinks_taking_partial_results(
    tmp_path: Path,
) -> None:
    log: list[tuple[str, int, bool, list[str]]] = []
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        session = RunSession(
            [_evalset(5)],
            [build_metric("response_match_score", 0.5)],
            store=store,
            observers=[_Stopper(after=2)],
            sinks=[
                _Seen("partial", partial=True, log=log),
                _Seen("complete-only", partial=False, log=log),
            ],
        )
        with pytest.raises(KeyboardInterrupt):
            session.run()
        assert log == []  # nothing delivered until the caller finishes the interruption
        result = session.finish_interrupted()
        assert store.get_run(session.run_id or "").status == "INTERRUPTED"
    assert len(result.cases) == 2
    assert log == [("partial", 2, True, [])]


def test_arun_delivers_too() -> None:
    log: list[tuple[str, int, bool, list[str]]] = []
    session = RunSession(
        [_evalset(2)],
        [build_metric("response_match_score", 0.5)],
        sinks=[_Seen("s", partial=False, log=log)],
    )
    asyncio.run(session.arun())
    assert log == [("s", 2, False, [])]


class _StoredFirst:
    """An observer that checks each result is in the store when it hears of it."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.events: list[str] = []

    def on_start(self, total: int) -> None:
        self.events.append(f"start {total}")

    def on_case_done(self, result: CaseResult) -> None:
        stored = {key[1] for key in self.store.completed_case_keys(self.run_id)}
        assert result.case_id in stored, "shown before it was stored"
        self.events.append(f"done {result.case_id}")

    def on_finish(self, result: EvalResult) -> None:
        status = self.store.get_run(self.run_id).status
        self.events.append(f"finish {status}")


def test_case_outputs_store_each_result_before_the_observers_hear_of_it(tmp_path: Path) -> None:
    metrics = [build_metric("response_match_score", 0.5)]
    cases = [score_recorded(c, metrics, eval_set_id="s") for c in _evalset(3).cases]
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        run_id = store.start_run(
            eval_set_ids=["s"], metrics=["response_match_score"], config={}, agent=None, runs=1
        )
        # Every result durable on return (as an agent's are), so the order is visible.
        recorder = StoreRecorder(store, run_id, durable_after_s=0)
        observer = _StoredFirst(store, run_id)
        collected: list[CaseResult] = []
        outputs = CaseOutputs(recorder, [observer], collected=collected)
        outputs.on_start(3)
        for case in cases:
            outputs.on_case_done(case)
        outputs.on_finish(build_result(cases, metrics, agent_run=False))
        assert store.get_run(run_id).status == "COMPLETED"
    assert observer.events == ["start 3", "done c0", "done c1", "done c2", "finish COMPLETED"]
    assert collected == cases
    # Without a collector (a streamed run) nothing is kept; in_order counts what it wrote.
    bare = CaseOutputs()
    for case in cases:
        bare.on_case_done(case)
        bare.in_order(case)
    assert bare.collected is None and bare.written == 3


class _Shown:
    """An observer noting, for each result it is told of, whether the store has it."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.stored_when_shown: list[bool] = []

    def on_start(self, total: int) -> None:
        return None

    def on_case_done(self, result: CaseResult) -> None:
        stored = {d["case_id"] for d in self.store.case_results(self.run_id)}
        self.stored_when_shown.append(result.case_id in stored)

    def on_finish(self, result: EvalResult) -> None:
        return None


async def test_a_result_stored_from_the_writer_thread_is_shown_once_durable(
    tmp_path: Path,
) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        run_id = store.start_run(eval_set_ids=["s"], metrics=["m"], config={}, agent=None, runs=1)
        recorder = StoreRecorder(store, run_id, durable_after_s=0)
        shown = _Shown(store, run_id)
        outputs = CaseOutputs(recorder, [shown])
        outputs.on_start(2)
        metrics = [build_metric("response_match_score", 0.5)]
        cases = [score_recorded(c, metrics, eval_set_id="s") for c in _evalset(2).cases]
        for case in cases:
            pending = outputs.on_case_done(case)
            assert pending is not None  # stored by the writer thread, awaited by the slot
            assert shown.stored_when_shown == [True] * (len(shown.stored_when_shown))
            await pending
        recorder.on_finish(EvalResult(summary={}, rows=[], cases=cases))
    assert shown.stored_when_shown == [True, True]
