"""`await assay.aevaluate(rows_path, agent=...)` streams as `assay.evaluate` does: in the
caller's event loop, the same result and stored run as the loaded path, rows held in a
bounded window, a malformed row or a cancelled task leaving a resumable run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
import weakref
from collections import Counter
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
from assay.core.cases import EvalCase
from assay.errors import InputError
from assay.report.json_report import case_to_adk

# The stop-midway helpers the CLI's tests share (tests/cli/logging_agent.py).
_CLI_TESTS = str(Path(__file__).resolve().parent / "cli")
if _CLI_TESTS not in sys.path:
    sys.path.insert(0, _CLI_TESTS)

from logging_agent import call_log, eval_command, stop_midway  # noqa: E402

# -- the same run ----------------------------------------------------------------------


async def test_aevaluate_streams_in_the_callers_loop_as_evaluate_and_the_loaded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 60)
    urls = {name: f"sqlite:///{tmp_path / name}.db" for name in ("awaited", "sync", "loaded")}
    streamed_runs = spy_streamed(monkeypatch)
    agent = UpperAgent()
    awaited = await assay.aevaluate(
        data, metrics=METRICS, agent=agent, store=urls["awaited"], concurrency=4
    )
    assert len(streamed_runs) == 1
    # Awaited in this loop and thread: no loop of its own, no worker thread.
    assert agent.loops == {id(asyncio.get_running_loop())}
    assert agent.threads == {threading.get_ident()}
    # `evaluate` in this same process (from a thread: this one runs a loop) streams the
    # same way; the loaded path is the reference.
    sync = await asyncio.to_thread(
        assay.evaluate, str(data), METRICS, UpperAgent(), store=urls["sync"], concurrency=4
    )
    assert len(streamed_runs) == 2
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        loaded = await assay.aevaluate(
            data, metrics=METRICS, agent=UpperAgent(), store=urls["loaded"], concurrency=4
        )
    assert len(streamed_runs) == 2
    results = (awaited, sync, loaded)
    assert [c.case_id for c in awaited.cases] == [f"row-{i}" for i in range(60)]
    docs = [[untimed(case_to_adk(c)) for c in r.cases] for r in results]
    assert docs[0] == docs[1] == docs[2]
    assert untimed(awaited.summary) == untimed(sync.summary) == untimed(loaded.summary)
    assert awaited.summary["failure/mean"] == 1 / 60 and awaited.summary["passed"] == 59
    assert untimed(awaited.rows) == untimed(sync.rows) == untimed(loaded.rows)
    assert awaited.eval_set_id == sync.eval_set_id == loaded.eval_set_id == "rows"
    stored = [stored_run(urls[name]) for name in ("awaited", "sync", "loaded")]
    assert [info.id for info, _ in stored] == [r.run_id for r in results]
    assert {(info.status, info.case_count, info.passed) for info, _ in stored} == {
        ("COMPLETED", 60, 59)
    }
    assert len({json.dumps(untimed(info.config), sort_keys=True) for info, _ in stored}) == 1
    assert len({info.agent for info, _ in stored}) == 1
    by_case = [sorted(map(untimed, cases), key=lambda d: d["case_id"]) for _, cases in stored]
    assert by_case[0] == by_case[1] == by_case[2]


def test_evaluate_inside_a_running_loop_streams_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook cell: `evaluate` runs the streamed run on a worker thread's loop (it
    used to call `asyncio.run` inside the cell's loop and fail)."""
    data = write_rows(tmp_path / "rows.jsonl", 12)
    streamed_runs = spy_streamed(monkeypatch)

    async def notebook_cell() -> assay.EvalResult:
        return assay.evaluate(data, metrics=METRICS, agent=str.upper)

    result = asyncio.run(notebook_cell())
    assert len(streamed_runs) == 1
    assert len(result.cases) == 12 and result.summary["passed"] == 12


# -- bounded memory ----------------------------------------------------------------------


class _HeldRows:
    """How many rows' cases are alive: each built one counted until it is freed."""

    def __init__(self) -> None:
        self.alive = 0

    def track(self, case: EvalCase) -> None:
        self.alive += 1
        weakref.finalize(case, self._freed)

    def _freed(self) -> None:
        self.alive -= 1


def _held_rows(monkeypatch: pytest.MonkeyPatch) -> _HeldRows:
    """Every row's case built from now on (streamed or loaded), while something holds it."""
    import assay.formats.vertex as vertex

    held = _HeldRows()
    real = vertex._case

    def tracked(*args: Any, **kwargs: Any) -> EvalCase:
        case = real(*args, **kwargs)
        held.track(case)
        return case

    monkeypatch.setattr(vertex, "_case", tracked)
    return held


async def _most_rows_held(tmp_path: Path, held: _HeldRows, rows: int) -> int:
    most = 0

    async def answer(prompt: str) -> str:
        nonlocal most
        most = max(most, held.alive)
        await asyncio.sleep(0)
        return prompt.upper()

    data = write_rows(tmp_path / f"rows{rows}.jsonl", rows)
    result = await assay.aevaluate(data, metrics=METRICS, agent=answer, concurrency=4)
    assert len(result.cases) == rows and result.summary["passed"] == rows
    return most


async def test_the_rows_held_do_not_grow_with_the_row_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows' cases alive at any call of the agent: at most the batch being read
    (`BATCH_ROWS`, 100) and the window (4 x concurrency 4), whatever the file's size;
    the result keeps each case's result, not its row."""
    from assay.session.agent_stream import BATCH_ROWS

    held = _held_rows(monkeypatch)
    bound = BATCH_ROWS + 16
    small = await _most_rows_held(tmp_path, held, 300)
    large = await _most_rows_held(tmp_path, held, 3_000)
    assert 0 < small <= bound and 0 < large <= bound, (small, large)
    # The same probe on the loaded path sees every row at once.
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        assert await _most_rows_held(tmp_path, held, 3_000) == 3_000


# -- a malformed row, a cancelled task ---------------------------------------------------


async def test_a_malformed_row_names_its_line_and_field_and_the_rows_before_are_stored(
    tmp_path: Path,
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 60)
    lines = data.read_text().splitlines()
    good = lines[44]
    lines[44] = json.dumps({"prompt": 42})  # line 45
    data.write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    first = UpperAgent()
    with pytest.raises(InputError) as raised:
        await assay.aevaluate(data, metrics=METRICS, agent=first, store=url, concurrency=4)
    message = str(raised.value)
    assert "line 45" in message and "prompt" in message and "rows.jsonl" in message, message
    assert "\n" not in message
    info, cases = stored_run(url)
    assert info.status == "INTERRUPTED"
    assert sorted(c["case_id"] for c in cases) == sorted(f"row-{i}" for i in range(44))
    assert sorted(first.calls) == sorted(f"q{i}" for i in range(44))

    lines[44] = good
    data.write_text("\n".join(lines) + "\n")
    again = UpperAgent()
    result = await assay.aevaluate(data, metrics=METRICS, agent=again, store=url, concurrency=4)
    assert result.run_id == info.id
    assert again.calls == [f"q{i}" for i in range(44, 60)]  # only the rows not run
    assert len(result.cases) == 60 and result.summary["passed"] == 59
    info, cases = stored_run(url)
    assert (info.status, info.case_count) == ("COMPLETED", 60)
    assert Counter(c["case_id"] for c in cases) == Counter(f"row-{i}" for i in range(60))


async def _cancelled_midway(data: Path, url: str, agent: UpperAgent) -> None:
    task = asyncio.create_task(
        assay.aevaluate(data, metrics=METRICS, agent=agent, store=url, concurrency=3)
    )
    await agent.reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_task_leaves_the_run_interrupted_and_aevaluate_resumes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streamed_runs = spy_streamed(monkeypatch)
    data = write_rows(tmp_path / "rows.jsonl", 40)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    first = UpperAgent(stop_at=10)
    await _cancelled_midway(data, url, first)
    info, cases = stored_run(url)
    assert info.status == "INTERRUPTED"
    stored = {c["case_id"] for c in cases}
    # Every case run that finished before the cancel is stored, and only those.
    finished = {f"row-{p[1:]}" for p in first.answered}
    assert stored == finished and 1 <= len(stored) < 10

    again, observer = UpperAgent(), Observer()
    result = await assay.aevaluate(
        data, metrics=METRICS, agent=again, store=url, concurrency=3, observers=[observer]
    )
    assert result.run_id == info.id
    ran_again = {f"row-{p[1:]}" for p in again.calls}
    # The observer hears of the case runs still to do only, as on the loaded path.
    remaining = 40 - len(stored)
    assert observer.events[0] == ("start", remaining) and observer.events[-1] == ("finish", 40)
    assert {case for kind, case in observer.events[1:-1] if kind == "case"} == ran_again
    assert len(observer.events) == remaining + 2
    assert ran_again == {f"row-{i}" for i in range(40)} - stored  # only the un-run rows
    assert len(result.cases) == 40 and result.summary["passed"] == 39
    info, cases = stored_run(url)
    assert (info.status, info.case_count, info.passed) == ("COMPLETED", 40, 39)
    assert Counter(c["case_id"] for c in cases) == Counter(f"row-{i}" for i in range(40))
    assert len(streamed_runs) == 2


async def test_a_deadline_ends_the_run_as_a_timeout_not_a_swallowed_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`asyncio.timeout` turns its cancellation into TimeoutError only when it comes
    back out of the awaited call: aevaluate passes it on after marking the run."""
    data = write_rows(tmp_path / "rows.jsonl", 30)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    agent = UpperAgent(stop_at=6)
    streamed_runs = spy_streamed(monkeypatch)
    loop = asyncio.get_running_loop()

    async def expire(deadline: asyncio.Timeout) -> None:
        await agent.reached.wait()
        deadline.reschedule(loop.time())

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as deadline:
            watcher = asyncio.create_task(expire(deadline))
            await assay.aevaluate(data, metrics=METRICS, agent=agent, store=url, concurrency=2)
    await watcher
    info, _ = stored_run(url)
    assert info.status == "INTERRUPTED"
    assert len(streamed_runs) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_under_evaluate_still_raises_keyboard_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in a script: `evaluate`'s loop cancels the streamed run, which is left
    INTERRUPTED, and `evaluate` raises KeyboardInterrupt as the loaded path does."""
    data = write_rows(tmp_path / "rows.jsonl", 30)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    calls: list[str] = []

    def answer(prompt: str) -> str:
        calls.append(prompt)
        if prompt == "q12":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the run is cancelled meanwhile
        return prompt.upper()

    streamed_runs = spy_streamed(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        assay.evaluate(data, metrics=METRICS, agent=answer, store=url, concurrency=1)
    assert len(streamed_runs) == 1
    info, cases = stored_run(url)
    assert info.status == "INTERRUPTED"
    assert {c["case_id"] for c in cases} == {f"row-{i}" for i in range(12)}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_still_ends_a_script_calling_evaluate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API takes over no signal (only `assay eval` makes SIGTERM an interrupt): a
    script is ended by SIGTERM as before, its finished rows stored, and the next call
    resumes the run as after a crash."""
    _, env, db = eval_command(tmp_path, cases=40, concurrency=4, delay=0.2)
    url = f"sqlite:///{db}"
    script = (
        "import assay, loggingbot; assay.evaluate('rows.jsonl', metrics=['response_match_score'],"
        f" agent=loggingbot.answer, store={url!r}, concurrency=4)"
    )
    code, stderr, finished = stop_midway(
        [sys.executable, "-c", script], env, tmp_path, after_ends=4, sig=signal.SIGTERM,
        settle_s=0.3,
    )  # fmt: skip
    assert code == -signal.SIGTERM, stderr
    info, cases = stored_run(url)
    assert info.status == "RUNNING"  # ended, not marked: resumed as a crashed run is
    stored = {c["case_id"] for c in cases}
    assert finished <= stored and len(stored) < 40
    calls_before = len(call_log(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BOT_LOG", env["BOT_LOG"])
    from loggingbot import answer  # type: ignore[import-not-found]

    result = assay.evaluate(
        tmp_path / "rows.jsonl", metrics=METRICS, agent=answer, store=url, concurrency=4
    )
    assert result.run_id == info.id and result.summary["passed"] == 40
    rerun = {case for event, case in call_log(tmp_path)[calls_before:] if event == "start"}
    assert rerun == {f"q{i}" for i in range(40)} - stored


async def test_a_duplicate_case_id_names_it_and_ids_may_repeat_across_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"id": f"c{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(40)]
    rows[30]["id"] = "c5"
    dup = tmp_path / "dup.jsonl"
    dup.write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with pytest.raises(InputError, match="duplicate case id") as raised:
        await assay.aevaluate(dup, metrics=METRICS, agent=UpperAgent(), store=url)
    assert "c5" in str(raised.value) and "dup.jsonl" in str(raised.value)
    info, cases = stored_run(url)
    assert info.status == "INTERRUPTED" and len(cases) == 30
    # Each file is its own eval set: the same id in two files is two cases.
    streamed_runs = spy_streamed(monkeypatch)
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    both = await assay.aevaluate(
        [tmp_path / "a.jsonl", tmp_path / "b.jsonl"], metrics=METRICS, agent=UpperAgent()
    )
    assert len(streamed_runs) == 1
    assert [(c.eval_set_id, c.case_id) for c in both.cases] == [
        (s, f"c{i}") for s in ("a", "b") for i in range(3)
    ]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
async def test_csv_and_parquet_rows_stream_as_they_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    rows = [{"prompt": f"q{i}", "reference": f"Q{i}"} for i in range(25)]
    path = tmp_path / f"rows.{kind}"
    if kind == "csv":
        path.write_text("prompt,reference\n" + "".join(f"q{i},Q{i}\n" for i in range(25)))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    streamed_runs = spy_streamed(monkeypatch)
    streamed = await assay.aevaluate(path, METRICS, UpperAgent(), concurrency=3)
    assert len(streamed_runs) == 1
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        loaded = await assay.aevaluate(path, METRICS, UpperAgent(), concurrency=3)
    docs = [[untimed(case_to_adk(c)) for c in r.cases] for r in (streamed, loaded)]
    assert docs[0] == docs[1] and len(docs[0]) == 25
    assert untimed(streamed.summary) == untimed(loaded.summary)
    assert streamed.summary["failed"] == 1  # row 4: the agent raised
