"""The judge cache never answers for a judge that did not run (issue #10).

Each scenario drives `assay eval` through the real openai SDK against the stand-in
judge on 127.0.0.1 with a store on disk, then changes what identifies the judge (the
endpoint) or fixes a broken judge, and checks from the server's own request log that
the judge was called rather than answered from the cache.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from standin_judge import eval_report, runner, standin_judge, write_rows

ROWS = [
    {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
    {"request": "Legs of a spider?", "response": "Eight.", "expected_response": "Eight"},
]


def _yes(request: StandinRequest) -> StandinReply:
    return StandinReply(json.dumps({"rationale": "matches", "rating": "yes"}))


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    """The stand-in judge (answering yes) that `assay eval` reaches through the environment."""
    with standin_judge(monkeypatch, _yes) as server:
        yield server


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _eval(tmp_path: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    """The CLI's result and the run's summary ({} when it wrote no result document)."""
    rows = write_rows(tmp_path, ROWS)
    result, document = eval_report(tmp_path, rows, "openai:stand-in", ["correctness"], *args)
    return result, document.get("summary", {})


def test_another_endpoint_is_called_not_answered_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: JudgeServer
) -> None:
    first, summary = _eval(tmp_path)
    assert first.exit_code == 0, first.output
    assert len(judge.requests) == 2
    again, summary = _eval(tmp_path)  # same endpoint: every reply from the cache
    assert again.exit_code == 0, again.output
    assert len(judge.requests) == 2
    assert summary["judge/cache_hits"] == 2
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_dead_port()}/v1")
    dead, summary = _eval(tmp_path, "--judge-concurrency", "1")
    # The judge at the dead endpoint was asked (and failed): no verdict, no PASS.
    assert summary["judge/cache_hits"] == 0, dead.output
    assert summary["judge/calls"] >= 2
    assert summary["judge/errors"] == 2
    assert dead.exit_code == 1
    assert "PASSED" not in dead.output


def test_an_unparseable_reply_is_not_cached(tmp_path: Path, judge: JudgeServer) -> None:
    broken = StandinReply(json.dumps({"is_valid": True}))  # a key correctness never reads
    judge.set_script(broken)
    first, _ = _eval(tmp_path)
    assert first.exit_code == 1
    assert "could be parsed" in json.dumps(json.loads((tmp_path / "out.json").read_text()))
    assert len(judge.requests) == 2
    judge.set_script(_yes)  # the judge is fixed
    fixed, summary = _eval(tmp_path)
    assert len(judge.requests) == 4, "the broken replies were answered from the cache"
    assert summary["judge/cache_hits"] == 0
    assert fixed.exit_code == 0, fixed.output
    again, summary = _eval(tmp_path)  # the good replies are cached
    assert len(judge.requests) == 4
    assert summary["judge/cache_hits"] == 2
    assert again.exit_code == 0


def test_cache_stats_and_clear(tmp_path: Path, judge: JudgeServer) -> None:
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    missing = runner.invoke(app, ["cache", "stats", "--store", store])
    assert missing.exit_code == 2 and "does not exist" in missing.output  # not created
    assert not (tmp_path / "assay.db").exists()
    first, _ = _eval(tmp_path)
    assert first.exit_code == 0, first.output
    stats = runner.invoke(app, ["cache", "stats", "--store", store])
    assert stats.exit_code == 0, stats.output
    row = next(line for line in stats.output.splitlines() if "stand-in" in line)
    assert "openai" in row and " 2 " in row
    assert "total: 2 cached replies" in stats.output
    other = runner.invoke(app, ["cache", "clear", "--store", store, "--model", "other"])
    assert "removed 0 cached judge replies of other" in other.output
    _, summary = _eval(tmp_path)  # still cached
    assert summary["judge/cache_hits"] == 2 and len(judge.requests) == 2
    cleared = runner.invoke(app, ["cache", "clear", "--store", store])
    assert cleared.exit_code == 0 and "removed 2 cached judge replies" in cleared.output
    after = runner.invoke(app, ["cache", "stats", "--store", store])
    assert "the judge cache is empty" in after.output
    # With the cache cleared the same judge is asked again.
    _, summary = _eval(tmp_path)
    assert summary["judge/calls"] == 2 and len(judge.requests) == 4


def test_progress_lines_count_the_judge_calls(tmp_path: Path, judge: JudgeServer) -> None:
    result, _summary = _eval(tmp_path)  # no terminal: plain progress lines
    assert result.exit_code == 0, result.output
    again, _summary = _eval(tmp_path)
    # The last progress line of each run says how the judge was used.
    assert "judge: 2 calls, 0 cached" in result.output.replace("\n", " ")
    assert "judge: 0 calls, 2 cached" in again.output.replace("\n", " ")
