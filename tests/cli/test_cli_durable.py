"""Runs that lose nothing: a real `assay eval` process with an agent at --concurrency 2,
killed with SIGKILL (finished case runs are already stored, the re-run calls the agent
only for the rest) or stopped with SIGTERM (the run is marked INTERRUPTED).

The rows are one JSON array, so the run takes the loaded path; the streamed agent
run over JSON lines is stopped the same ways in `test_cli_agent_stream.py`."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from logging_agent import call_log, eval_command, killed_midway, stop_midway

from assay.store import Store

CASES = 40  # 4 s of agent calls at --concurrency 2: time to stop the run midway

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _setup(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    return eval_command(tmp_path, cases=CASES, concurrency=2, delay=0.2, whole_file=True)


def _log(tmp_path: Path) -> list[tuple[str, str]]:
    return call_log(tmp_path)


def test_sigkill_reruns_only_the_case_runs_in_flight(tmp_path: Path) -> None:
    command, env, db = _setup(tmp_path)
    # Scoring and storing a finished case takes milliseconds; the results used to wait
    # up to a second for the next batch write.
    finished = killed_midway(command, env, tmp_path, after_ends=4)
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        stored = {doc["case_id"] for doc in store.case_results(run.id)}
    assert finished <= stored  # every finished case run was durable before the kill
    calls_before = len(_log(tmp_path))
    again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "resuming run" in again.stderr
    rerun = {case for event, case in _log(tmp_path)[calls_before:] if event == "start"}
    assert not rerun & finished  # no finished case run was paid for twice
    assert rerun == {f"q{i}" for i in range(CASES)} - stored
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        assert run.status == "COMPLETED"
        counts = Counter(doc["case_id"] for doc in store.case_results(run.id))
    assert counts == Counter(f"q{i}" for i in range(CASES))


def test_sigterm_stops_cleanly_with_the_run_interrupted(tmp_path: Path) -> None:
    command, env, db = _setup(tmp_path)
    code, stderr, _ = stop_midway(command, env, tmp_path, after_ends=2, sig=signal.SIGTERM)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert "run the same command again to resume" in stderr.replace("\n", " ")
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        assert run.status == "INTERRUPTED"
        assert 1 <= len(store.case_results(run.id)) < CASES
