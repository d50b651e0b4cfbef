"""`AgentStreamingRun`: the agent's slots stay full over a bounded read-ahead window,
results are written in file order, and memory does not grow with the rows."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.agents.callable import CallableAgent
from assay.core.results import CaseResult, EvalResult
from assay.engine import RunOptions, build_metrics
from assay.formats.stream import RowFile
from assay.session.agent_stream import AgentStreamingRun
from assay.store import Store

IDENTITY = {"eval_set_ids": ["rows"], "metrics": ["response_match_score"], "config": {},
            "agent": "answer"}  # fmt: skip


def _rows(path: Path, n: int) -> Path:
    rows = (json.dumps({"prompt": f"q{i}", "reference": f"Q{i}"}) for i in range(n))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_slow_first_row_does_not_idle_the_other_slots_beyond_the_window(
    tmp_path: Path,
) -> None:
    """Row 0 answers only once the other slot has run every row the window admits: the
    slots are not held at a batch barrier, and reading stops at the window's bound."""
    data = _rows(tmp_path / "rows.jsonl", 40)
    started: list[str] = []
    seen_when_row0_answered: list[int] = []

    async def answer(prompt: str) -> str:
        started.append(prompt)
        if prompt == "q0":
            while len(started) < 8:  # the window: 8 rows read ahead
                await asyncio.sleep(0.001)
            for _ in range(50):  # room for any further read to happen
                await asyncio.sleep(0)
            seen_when_row0_answered.append(len(started))
        return prompt.upper()

    out = tmp_path / "r.json"
    run = AgentStreamingRun(
        [RowFile(data, "jsonl")],
        build_metrics(None, {"response_match_score": 0.8}),
        CallableAgent(answer),
        IDENTITY,
        options=RunOptions(concurrency=2),
        read_ahead=8,
        out=out,
    )
    outcome = run.run()
    assert seen_when_row0_answered == [8]  # q1..q7 ran meanwhile; q8 waited for q0
    assert outcome.tally.cases == 40 and outcome.summary["passed"] == 40
    doc = json.loads(out.read_text())
    assert [c["eval_id"] for c in doc["cases"]] == [f"row-{i}" for i in range(40)]


def test_the_window_defaults_to_a_few_times_the_concurrency(tmp_path: Path) -> None:
    run = AgentStreamingRun(
        [], [], CallableAgent(lambda prompt: prompt), IDENTITY, options=RunOptions(concurrency=6)
    )
    assert run.window == 24


PEAK = """
import resource, sys
from assay.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_rss_kib(tmp_path: Path, rows: int) -> int:
    """Peak RSS of `assay eval` streaming `rows` rows through a trivial agent to the
    store, `--out` and `--csv`, in a fresh process."""
    (tmp_path / "trivial.py").write_text("def answer(prompt):\n    return prompt.upper()\n")
    data = _rows(tmp_path / f"rows{rows}.jsonl", rows)
    store = f"sqlite:///{tmp_path / f'db{rows}.sqlite'}"
    command = [sys.executable, "-c", textwrap.dedent(PEAK), "eval", str(data),
               "--agent", "trivial:answer", "--metric", "response_match_score", "--quiet",
               "--out", str(tmp_path / f"r{rows}.json"), "--csv", str(tmp_path / f"r{rows}.csv"),
               "--store", store, "--concurrency", "4"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB (Linux)")
def test_peak_memory_does_not_grow_with_the_rows(tmp_path: Path) -> None:
    small = _peak_rss_kib(tmp_path, 5_000)
    large = _peak_rss_kib(tmp_path, 20_000)
    # Loaded, the 15,000 more rows cost ~70 MB (each case and result kept to the end);
    # streamed, what grows is numbers (the summary's scores, the case ids checked for
    # duplicates): a few MB.
    assert large - small < 30 * 1024, (small, large)
    report = json.loads((tmp_path / "r20000.json").read_text())
    assert report["summary"]["case_count"] == 20_000 == len(report["cases"])


class _Heard:
    """An observer: the case ids it was told of, in the order it was told."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.ids: list[str] = []

    def on_start(self, total: int) -> None:
        self.total = total

    def on_case_done(self, result: CaseResult) -> None:
        self.ids.append(result.case_id)

    def on_finish(self, result: EvalResult) -> None:
        return None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    yields=st.lists(st.integers(0, 20), min_size=1, max_size=30),
    concurrency=st.integers(1, 5),
    read_ahead=st.integers(5, 12),
)
def test_rows_finishing_in_any_order_reach_every_output_once_and_the_reports_in_order(
    tmp_path_factory: pytest.TempPathFactory, yields: list[int], concurrency: int, read_ahead: int
) -> None:
    """Each row's answer yields to the loop `yields[i]` times, so case runs finish out
    of order: the store and the observers get each once as it finishes, the JSON and
    CSV reports in file order."""
    tmp = tmp_path_factory.mktemp("order")
    data = _rows(tmp / "rows.jsonl", len(yields))

    async def answer(prompt: str) -> str:
        for _ in range(yields[int(prompt[1:])]):
            await asyncio.sleep(0)
        return prompt.upper()

    heard = _Heard()
    with Store.open(f"sqlite:///{tmp / 'runs.sqlite'}") as store:
        run = AgentStreamingRun(
            [RowFile(data, "jsonl")],
            build_metrics(None, {"response_match_score": 0.8}),
            CallableAgent(answer),
            IDENTITY,
            options=RunOptions(concurrency=concurrency),
            read_ahead=read_ahead,
            observers=[heard],
            store=store,
            out=tmp / "r.json",
            csv_path=tmp / "r.csv",
        )
        outcome = run.run()
        assert outcome.run_id is not None and not outcome.interrupted
        stored = store.completed_case_keys(outcome.run_id)
        assert store.get_run(outcome.run_id).status == "COMPLETED"
    ids = [f"row-{i}" for i in range(len(yields))]
    assert {key[1] for key in stored} == set(ids) and len(stored) == len(ids)
    assert heard.total == len(ids) and sorted(heard.ids) == sorted(ids)
    assert [c["eval_id"] for c in json.loads((tmp / "r.json").read_text())["cases"]] == ids
    with (tmp / "r.csv").open(encoding="utf-8") as handle:
        assert [row["case_id"] for row in csv.DictReader(handle)] == ids


def test_a_cancelled_run_stores_and_reports_what_finished_behind_a_stuck_row(
    tmp_path: Path,
) -> None:
    """Row 2 never answers; the rows behind it finish and wait in the window. The run is
    cancelled: every finished case run is stored and in the partial report (none lost
    with the window), the stuck one is in neither, and the run is INTERRUPTED."""
    data = _rows(tmp_path / "rows.jsonl", 30)
    answered: list[str] = []

    async def answer(prompt: str) -> str:
        if prompt == "q2":
            await asyncio.Event().wait()  # never set
        answered.append(prompt)
        return prompt.upper()

    async def main(run: AgentStreamingRun) -> None:
        task = asyncio.create_task(run.arun())
        # Rows 0 and 1 are written; the window of 8 then holds row 2 and 3..9 behind it.
        while len(answered) < 9:
            await asyncio.sleep(0.001)
        for _ in range(50):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with Store.open(f"sqlite:///{tmp_path / 'runs.sqlite'}") as store:
        run = AgentStreamingRun(
            [RowFile(data, "jsonl")],
            build_metrics(None, {"response_match_score": 0.8}),
            CallableAgent(answer),
            IDENTITY,
            options=RunOptions(concurrency=2),
            read_ahead=8,
            store=store,
            out=tmp_path / "r.json",
        )
        asyncio.run(main(run))
        assert run.outcome is not None and run.outcome.interrupted
        run_id = run.outcome.run_id or ""
        assert store.get_run(run_id).status == "INTERRUPTED"
        stored = {key[1] for key in store.completed_case_keys(run_id)}
    assert len(answered) == 9  # the full window stopped the reading
    finished = [f"row-{i}" for i in (0, 1, 3, 4, 5, 6, 7, 8, 9)]
    assert stored == set(finished)
    reported = [c["eval_id"] for c in json.loads((tmp_path / "r.json").read_text())["cases"]]
    assert reported == finished  # file order, the stuck row left out
