"""Judge calls through the OpenAI Batch API (`--judge-batch`, issue #38).

Every scenario drives `assay eval` (in process, or as a real subprocess killed with
SIGKILL) through the real openai SDK against the stand-in's ``/files`` and ``/batches``
on 127.0.0.1, with a store on disk, and checks from the stand-in's own counters how
many batches were submitted and how many live calls were made.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_runs import CorrectnessRuns, failing_once_on, open_batches, scores, statuses, verdict

from assay.testing.judge_server import JudgeServer
from standin_judge import standin_judge, write_rows

ROWS = [
    {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
    {"request": "Legs of a spider?", "response": "Six.", "expected_response": "Eight"},
    {"request": "Boiling point of water?", "response": "100 C.", "expected_response": "100 C"},
]
RUNS = CorrectnessRuns("openai:stand-in", ROWS)


def _open_batches(path: Path, server: JudgeServer) -> dict[str, list[str]]:
    """The batches of the stand-in judge recorded in the store at `path`, not collected."""
    endpoint = server.openai_base_url + "/"
    return open_batches(path, backend="openai", endpoint=endpoint, model="stand-in")


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, verdict) as server:
        yield server


def test_a_batch_run_gives_the_verdicts_of_a_live_run_in_one_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    live = RUNS.eval(tmp_path, "live.db")
    live_calls = len(server.requests)
    assert live_calls == len(ROWS)
    batched = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert server.batch_requests == len(ROWS)
    assert len(server.requests) == live_calls  # no live call in the batch run
    assert scores(batched) == scores(live)
    assert statuses(batched) == ["FAILED", "PASSED", "PASSED"]
    assert batched["summary"]["judge/calls"] == len(ROWS)
    # The batch's replies are in the reply cache under a live call's keys: a rerun,
    # batched or live, calls nothing.
    again = RUNS.eval(tmp_path, "batch.db", "--judge-batch", "--fresh")
    RUNS.eval(tmp_path, "batch.db", "--fresh")
    assert server.batch_submissions == 1
    assert len(server.requests) == live_calls
    assert scores(again) == scores(live)
    assert _open_batches(tmp_path / "batch.db", server) == {}  # collected: never again


def test_items_a_batch_fails_are_made_live(tmp_path: Path, judge_env: JudgeServer) -> None:
    server = judge_env
    # The first answer to the water row fails (in the batch); the live retry works.
    server.set_script(failing_once_on("100 C.", verdict))
    result = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert len(server.requests) == 1  # the failed item, made live
    assert "100 C." in server.requests[0].prompt
    assert statuses(result) == ["FAILED", "PASSED", "PASSED"]


def test_a_run_killed_after_submitting_collects_its_batch_on_resume(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server, store = judge_env, tmp_path / "batch.db"
    RUNS.kill_after_submitting(tmp_path, server, lambda: _open_batches(store, server))
    assert list(_open_batches(store, server).values()) != [[]]
    resumed = RUNS.resume_collecting(tmp_path, server)
    assert len(scores(resumed)) == len(ROWS)
    assert _open_batches(store, server) == {}
    assert statuses(resumed) == ["FAILED", "PASSED", "PASSED"]


def test_an_anthropic_judge_batches_through_message_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic = CorrectnessRuns("anthropic:stand-in", ROWS)
    with standin_judge(monkeypatch, verdict, vendors=("anthropic",)) as server:
        live = anthropic.eval(tmp_path, "live.db")
        assert len(server.requests) == len(ROWS)
        batched = anthropic.eval(tmp_path, "batch.db", "--judge-batch")
        assert server.batch_submissions == 1
        assert server.batch_requests == len(ROWS)
        assert len(server.requests) == len(ROWS)  # no live call in the batch run
    assert scores(batched) == scores(live)
    assert batched["summary"]["judge/calls"] == len(ROWS)


def test_the_cases_of_a_recorded_run_share_one_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    RUNS.hundred_cases_batched(tmp_path)  # all in one batch
    assert judge_env.batch_submissions == 1
    assert judge_env.batch_requests == 100
    assert judge_env.requests == []


def test_evaluate_takes_judge_batch(tmp_path: Path, judge_env: JudgeServer) -> None:
    import assay

    result = assay.evaluate(
        str(write_rows(tmp_path, ROWS)),
        metrics=["correctness"],
        format="mlflow",
        judge=RUNS.judge,
        judge_batch=True,
    )
    assert judge_env.batch_submissions == 1
    assert judge_env.requests == []
    assert result.summary["judge/calls"] == len(ROWS)
