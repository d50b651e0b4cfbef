"""`assay eval --judge MODEL --judge-concurrency N --no-cache`.

The judge is the real openai SDK path against the stand-in server on 127.0.0.1: judged
metrics are scored, the summary and the printed line carry the judge counters, and a
second run on the same store makes zero calls (counted by the server).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.metrics.judged.base import NO_JUDGE_MESSAGE
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

runner = CliRunner()

ROWS = [
    {
        "request": "What is the capital of France?",
        "response": "Paris is the capital of France.",
        "expected_response": "Paris",
    },
    {
        "request": "How many legs does a spider have?",
        "response": "Spiders have six legs.",
        "expected_response": "Eight",
    },
]


def _rows(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return path


def _grade(request: StandinRequest) -> StandinReply:
    """A judge that knows spiders have eight legs."""
    ok = "six legs" not in request.user
    verdict = {"rationale": "checked against the expected answer", "rating": "yes" if ok else "no"}
    return StandinReply(json.dumps(verdict), input_tokens=50, output_tokens=10)


def _eval(data: Path, *args: str) -> Any:
    return runner.invoke(app, ["eval", str(data), "--from", "mlflow", "-m", "correctness", *args])


def _status_line(output: str, case_id: str) -> str:
    return next(line for line in output.splitlines() if f" {case_id} " in line)


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The openai SDK's own environment variables, pointed at a fresh stand-in server."""
    with JudgeServer(_grade) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield server


def test_judged_metrics_are_scored_and_the_stats_printed(
    tmp_path: Path, openai_env: JudgeServer
) -> None:
    out = tmp_path / "out.json"
    result = _eval(_rows(tmp_path), "--judge", "openai:judge-1", "--no-store", "--out", str(out))
    assert result.exit_code == 1, result.output  # the spider answer is wrong
    assert "PASSED" in _status_line(result.output, "row-0")
    assert "FAILED" in _status_line(result.output, "row-1")
    assert "judge: 2 calls, 0 cache hits, 0 retries, 0 errors, 100 input + 20 output" in (
        result.output
    )
    summary = json.loads(out.read_text(encoding="utf-8"))["summary"]
    assert summary["judge/calls"] == 2 and summary["judge/input_tokens"] == 100
    assert summary["correctness/mean"] == 0.5
    assert [r.model for r in openai_env.requests] == ["judge-1", "judge-1"]


def test_a_second_run_on_the_same_store_makes_no_call(
    tmp_path: Path, openai_env: JudgeServer
) -> None:
    data = _rows(tmp_path)
    store = ["--store", f"sqlite:///{tmp_path / 'assay.db'}"]
    first = _eval(data, "--judge", "openai:judge-1", *store)
    assert "judge: 2 calls, 0 cache hits" in first.output, first.output
    second = _eval(data, "--judge", "openai:judge-1", *store)
    assert "judge: 0 calls, 2 cache hits" in second.output, second.output
    assert len(openai_env.requests) == 2
    assert "FAILED" in _status_line(second.output, "row-1")  # same verdicts from the cache
    # --no-cache calls the judge again; another judge model is another cache entry.
    bypass = _eval(data, "--judge", "openai:judge-1", "--no-cache", *store)
    assert "judge: 2 calls, 0 cache hits" in bypass.output
    other = _eval(data, "--judge", "openai:judge-2", *store)
    assert "judge: 2 calls, 0 cache hits" in other.output
    assert len(openai_env.requests) == 6


def test_judge_concurrency_bounds_the_calls_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"request": f"q{i}", "response": "six legs" if i % 2 else "ok", "expected_response": "x"}
        for i in range(12)
    ]
    data = tmp_path / "many.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    delay = 0.1
    arrivals: list[float] = []

    def slow(request: StandinRequest) -> StandinReply:
        arrivals.append(time.monotonic())  # scripts run one at a time, on arrival
        return StandinReply(_grade(request).text, delay=delay)

    with JudgeServer(slow) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        result = _eval(data, "--judge", "openai:j", "--judge-concurrency", "3", "--no-store")
    assert "judge: 12 calls" in result.output, result.output
    # A request whose reply was not sent yet when another arrived (arrival + delay after
    # it) was still in flight then: with a limit of 3, at most 2 others can be.
    overlapping = [
        sum(1 for earlier in arrivals[:i] if earlier + delay > at) for i, at in enumerate(arrivals)
    ]
    assert max(overlapping) <= 2
    assert max(overlapping) >= 1  # and the calls did run concurrently


def test_without_a_judge_judged_metrics_say_how_to_configure_one(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = _eval(_rows(tmp_path), "--no-store", "--out", str(out))
    assert result.exit_code == 1
    assert "NOT_EVALUATED" in _status_line(result.output, "row-0")
    assert "judge: 0 calls" in result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    messages = json.dumps(doc["rows"])
    assert NO_JUDGE_MESSAGE in messages
    assert "--judge MODEL" in NO_JUDGE_MESSAGE


def test_a_judge_whose_sdk_is_missing_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if not installed
    result = _eval(_rows(tmp_path), "--judge", "anthropic:claude-x", "--no-store")
    # The judge the user asked for cannot run at all: a usage error before any case runs.
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "judge 'anthropic:claude-x': the anthropic judge backend needs" in flat
    assert "pip install -e '.[anthropic]'" in flat


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge", "gpt-4o"], "unknown judge model 'gpt-4o'; valid forms are"),
        (["--judge", "openai:"], "names no model"),
        (
            ["--judge", "openai:m", "--judge-concurrency", "0"],
            "(--judge-concurrency) must be at least 1",
        ),
    ],
)
def test_bad_judge_flags_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = _eval(_rows(tmp_path), "--no-store", *args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
