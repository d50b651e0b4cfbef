"""Judge calls through the OpenAI Batch API (`--judge-batch`, issue #38).

Every scenario drives `assay eval` (in process, or as a real subprocess killed with
SIGKILL) through the real openai SDK against the stand-in's ``/files`` and ``/batches``
on 127.0.0.1, with a store on disk, and checks from the stand-in's own counters how
many batches were submitted and how many live calls were made.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src"

ROWS = [
    {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
    {"request": "Legs of a spider?", "response": "Six.", "expected_response": "Eight"},
    {"request": "Boiling point of water?", "response": "100 C.", "expected_response": "100 C"},
]


def _rows(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return path


def _verdict(request: StandinRequest) -> StandinReply:
    """ "no" for the spider row (its answer is wrong), "yes" for the others."""
    rating = "no" if "Six." in request.prompt else "yes"
    return StandinReply(json.dumps({"rationale": f"rated {rating}", "rating": rating}))


def _args(tmp_path: Path, store: str, out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        str(_rows(tmp_path)),
        "--from",
        "mlflow",
        "-m",
        "correctness",
        "--judge",
        "openai:stand-in",
        "--store",
        f"sqlite:///{tmp_path / store}",
        "--out",
        str(out),
        *extra,
    ]


def _eval(tmp_path: Path, store: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / f"{store}.json"
    result = runner.invoke(app, _args(tmp_path, store, out, *extra))
    assert result.exit_code == 1, result.output  # one case fails its verdict
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def _scores(result: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """case id -> (correctness score, status) of a result document."""
    found: dict[str, tuple[Any, Any]] = {}
    for case in result["cases"]:
        for score in case["overall_eval_metric_results"]:
            if score["metric_name"] == "correctness":
                found[case["eval_id"]] = (score["score"], case["status"])
    return found


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with JudgeServer(_verdict) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def test_a_batch_run_gives_the_verdicts_of_a_live_run_in_one_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    live = _eval(tmp_path, "live.db")
    live_calls = len(server.requests)
    assert live_calls == len(ROWS)
    batched = _eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert server.batch_requests == len(ROWS)
    assert len(server.requests) == live_calls  # no live call in the batch run
    assert _scores(batched) == _scores(live)
    assert sorted(status for _, status in _scores(batched).values()) == [
        "FAILED",
        "PASSED",
        "PASSED",
    ]
    assert batched["summary"]["judge/calls"] == len(ROWS)
    # The batch's replies are in the reply cache under a live call's keys: a rerun,
    # batched or live, calls nothing.
    again = _eval(tmp_path, "batch.db", "--judge-batch", "--fresh")
    _eval(tmp_path, "batch.db", "--fresh")
    assert server.batch_submissions == 1
    assert len(server.requests) == live_calls
    assert _scores(again) == _scores(live)
    assert _open_batches(tmp_path / "batch.db", server) == {}  # collected: never again


def test_items_a_batch_fails_are_made_live(tmp_path: Path, judge_env: JudgeServer) -> None:
    server = judge_env
    answered: list[str] = []

    def flaky(request: StandinRequest) -> StandinReply:
        # The first answer to the water row fails (in the batch); the live retry works.
        if "100 C." in request.prompt and "water" not in answered:
            answered.append("water")
            return StandinReply.server_error(message="batch worker lost")
        return _verdict(request)

    server.set_script(flaky)
    result = _eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert len(server.requests) == 1  # the failed item, made live
    assert "100 C." in server.requests[0].prompt
    assert sorted(status for _, status in _scores(result).values()) == [
        "FAILED",
        "PASSED",
        "PASSED",
    ]


def _open_batches(path: Path, server: JudgeServer) -> dict[str, list[str]]:
    """The batches of the stand-in judge recorded in the store at `path`, not collected."""
    if not path.exists():
        return {}
    with Store.open(f"sqlite:///{path}") as store:
        return store.judge_batches.open_batches(
            backend="openai", endpoint=server.openai_base_url + "/", model="stand-in"
        )


def test_a_run_killed_after_submitting_collects_its_batch_on_resume(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    server.hold_batches()
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "ASSAY_QUIET_STALE": "1",
    }
    first_out = tmp_path / "killed.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", *_args(tmp_path, "batch.db", first_out, "--judge-batch")],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not _open_batches(tmp_path / "batch.db", server):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the batch was never recorded"
            time.sleep(0.2)
        assert server.batch_submissions == 1
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    assert not first_out.exists()
    assert list(_open_batches(tmp_path / "batch.db", server).values()) != [[]]
    server.release_batches()
    resumed = _eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1  # collected, not submitted again
    assert server.batch_requests == len(ROWS)
    assert server.requests == []  # and no live call
    assert len(_scores(resumed)) == len(ROWS)
    assert _open_batches(tmp_path / "batch.db", server) == {}
    assert sorted(status for _, status in _scores(resumed).values()) == [
        "FAILED",
        "PASSED",
        "PASSED",
    ]


def test_an_anthropic_judge_batches_through_message_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    with JudgeServer(_verdict) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        live = _eval(tmp_path, "live.db", "--judge", "anthropic:stand-in")
        assert len(server.requests) == len(ROWS)
        batched = _eval(tmp_path, "batch.db", "--judge", "anthropic:stand-in", "--judge-batch")
        assert server.batch_submissions == 1
        assert server.batch_requests == len(ROWS)
        assert len(server.requests) == len(ROWS)  # no live call in the batch run
    assert _scores(batched) == _scores(live)
    assert batched["summary"]["judge/calls"] == len(ROWS)


def test_the_cases_of_a_recorded_run_share_one_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    # More cases than the judge concurrency keeps going live (2 x 8): all in one batch.
    rows = tmp_path / "many.jsonl"
    many = [
        {"request": f"{i} plus one?", "response": f"{i + 1}.", "expected_response": f"{i + 1}"}
        for i in range(100)
    ]
    rows.write_text("\n".join(json.dumps(r) for r in many) + "\n", encoding="utf-8")
    out = tmp_path / "many.json"
    args = _args(tmp_path, "batch.db", out, "--judge-batch")
    args[1] = str(rows)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert judge_env.batch_submissions == 1
    assert judge_env.batch_requests == 100
    assert judge_env.requests == []


def test_evaluate_takes_judge_batch(tmp_path: Path, judge_env: JudgeServer) -> None:
    import assay

    result = assay.evaluate(
        str(_rows(tmp_path)),
        metrics=["correctness"],
        format="mlflow",
        judge="openai:stand-in",
        judge_batch=True,
    )
    assert judge_env.batch_submissions == 1
    assert judge_env.requests == []
    assert result.summary["judge/calls"] == len(ROWS)
