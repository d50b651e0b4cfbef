"""`assay eval --judge-batch` runs against the stand-in judge, shared by the batch tests of
each vendor (test_batch.py, test_batch_gemini.py, test_batch_caps.py).

Imported by name: pytest puts this folder on sys.path for its test modules.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.cli import app
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from standin_judge import eval_args, runner, write_rows

SRC = Path(__file__).resolve().parents[2] / "src"


def verdict(request: StandinRequest) -> StandinReply:
    """ "no" for the spider row (its answer is wrong), "yes" for the others."""
    rating = "no" if "Six." in request.prompt else "yes"
    return StandinReply(json.dumps({"rationale": f"rated {rating}", "rating": rating}))


def failing_once_on(
    marker: str, otherwise: Callable[[StandinRequest], StandinReply]
) -> Callable[[StandinRequest], StandinReply]:
    """A script whose first answer to the prompt holding `marker` fails (in the batch: its
    live retry works); every other answer is `otherwise`'s."""
    failed: list[str] = []

    def script(request: StandinRequest) -> StandinReply:
        if marker in request.prompt and not failed:
            failed.append(marker)
            return StandinReply.server_error(message="batch worker lost")
        return otherwise(request)

    return script


@dataclass(frozen=True)
class CorrectnessRuns:
    """`assay eval` of `rows` judged for correctness by `judge`, with SQLite stores in a
    test's tmp_path."""

    judge: str
    rows: list[dict[str, Any]]

    def args(self, tmp_path: Path, store: str, out: Path, *extra: str) -> list[str]:
        rows = write_rows(tmp_path, self.rows)
        return eval_args(rows, self.judge, tmp_path / store, out, ["correctness"], *extra)

    def eval(self, tmp_path: Path, store: str, *extra: str) -> dict[str, Any]:
        """The result document of a run in which one case fails its verdict."""
        out = tmp_path / f"{store}.json"
        result = runner.invoke(app, self.args(tmp_path, store, out, *extra))
        assert result.exit_code == 1, result.output  # one case fails its verdict
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return data

    def kill_after_submitting(
        self, tmp_path: Path, server: JudgeServer, open_batches: Callable[[], dict[str, list[str]]]
    ) -> None:
        """Holds `server`'s batches and kills (SIGKILL) a batched run into the store
        batch.db once `open_batches()` shows its batch: it submitted one batch and wrote
        no result."""
        server.hold_batches()
        out = tmp_path / "killed.json"
        kill_once(self.args(tmp_path, "batch.db", out, "--judge-batch"), tmp_path,
                  lambda: bool(open_batches()))  # fmt: skip
        assert server.batch_submissions == 1
        assert not out.exists()

    def resume_collecting(self, tmp_path: Path, server: JudgeServer) -> dict[str, Any]:
        """Releases `server`'s batches and resumes the killed run of `kill_after_submitting`:
        its result document, once it is checked that the run collected the batch (every
        row answered in it) and submitted none again, and made no live call."""
        server.release_batches()
        resumed = self.eval(tmp_path, "batch.db", "--judge-batch")
        assert server.batch_submissions == 1  # collected, not submitted again
        assert server.batch_requests == len(self.rows)
        assert server.requests == []  # and no live call
        return resumed

    def hundred_cases_batched(self, tmp_path: Path) -> dict[str, Any]:
        """The result document of a batched run of 100 cases, more than the judge
        concurrency keeps going live (2 x 8), each judged right."""
        many = [
            {"request": f"{i} plus one?", "response": f"{i + 1}.", "expected_response": f"{i + 1}"}
            for i in range(100)
        ]
        out = tmp_path / "many.json"
        args = self.args(tmp_path, "batch.db", out, "--judge-batch")
        args[1] = str(write_rows(tmp_path, many, "many.jsonl"))
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return data


def scores(result: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """case id -> (correctness score, status) of a result document."""
    found: dict[str, tuple[Any, Any]] = {}
    for case in result["cases"]:
        for score in case["overall_eval_metric_results"]:
            if score["metric_name"] == "correctness":
                found[case["eval_id"]] = (score["score"], case["status"])
    return found


def statuses(result: dict[str, Any]) -> list[str]:
    return sorted(status for _, status in scores(result).values())


def open_batches(path: Path, *, backend: str, endpoint: str, model: str) -> dict[str, list[str]]:
    """The judge's batches recorded in the SQLite store at `path`, not collected."""
    if not path.exists():
        return {}
    with Store.open(f"sqlite:///{path}") as store:
        return store.judge_batches.open_batches(backend=backend, endpoint=endpoint, model=model)


def kill_once(args: list[str], cwd: Path, recorded: Callable[[], bool]) -> None:
    """Runs `assay *args` in a subprocess and kills it (SIGKILL) once `recorded()` holds,
    which it must within two minutes; the process must be alive until then."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "ASSAY_QUIET_STALE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not recorded():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the batch was never recorded"
            time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
