"""Two identical `assay eval` commands at once never share a run: the second starts
its own run (naming the first, still running) instead of resuming it; each ends with
every case stored once. A run whose process was killed is still resumed (see
test_cli_resume.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from logging_agent import default_sigint, eval_command, killed_midway

from assay.store import Store

CASES = 8

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


# Answers q0 and q1 at once, the others once the file `go` exists: both commands are
# still running when the test lets them go on.
GATED = """
import os
import time

def answer(prompt):
    while prompt not in ("q0", "q1") and not os.path.exists("go"):
        time.sleep(0.02)
    return prompt.upper()
"""


def _stored(db: Path) -> list[int]:
    """Case runs stored per run, oldest run first."""
    if not db.exists():
        return []
    with Store.open(f"sqlite:///{db}") as store:
        return [r.case_count for r in reversed(store.list_runs())]


def _wait(db: Path, procs: list[subprocess.Popen[str]], want: list[int]) -> None:
    deadline = time.monotonic() + 120
    while _stored(db) != want:
        assert all(p.poll() is None for p in procs), "a run ended before the test let it go"
        assert time.monotonic() < deadline, f"stored {_stored(db)}, waited for {want}"
        time.sleep(0.05)


@pytest.mark.parametrize("whole_file", [False, True], ids=["streamed", "loaded"])
def test_a_second_identical_eval_never_joins_the_live_one(tmp_path: Path, whole_file: bool) -> None:
    command, env, db = eval_command(
        tmp_path, cases=CASES, concurrency=1, delay=0, whole_file=whole_file
    )
    (tmp_path / "loggingbot.py").write_text(GATED, encoding="utf-8")
    procs: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        procs.append(subprocess.Popen(command, env=env, cwd=tmp_path, text=True,
                                      preexec_fn=default_sigint, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))  # fmt: skip
        return procs[-1]

    try:
        first = start()
        _wait(db, procs, [2])
        second = start()
        _wait(db, procs, [2, 2])  # both runs live, each with its own results
        (tmp_path / "go").touch()
        first_out, first_err = first.communicate(timeout=120)
        second_out, second_err = second.communicate(timeout=120)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert "resuming" not in second_err
    with Store.open(f"sqlite:///{db}") as store:
        older, newer = sorted(store.list_runs(), key=lambda r: r.created_at)
        said = " ".join(second_err.split())
        assert f"run {older.id} of this evaluation is still running in process {first.pid}" in said
        assert f"this is a new run, {newer.id}" in said
        for run in (older, newer):
            assert (run.status, run.case_count, run.passed) == ("COMPLETED", CASES, CASES)
            assert run.lease_until is None  # finished: nobody holds it
            stored = Counter(doc["case_id"] for doc in store.case_results(run.id))
            assert stored == Counter(f"q{i}" for i in range(CASES))
    assert "Result: 8 passed" in first_out and "Result: 8 passed" in second_out


def test_of_three_commands_finding_a_killed_run_exactly_one_resumes_it(tmp_path: Path) -> None:
    command, env, db = eval_command(tmp_path, cases=CASES, concurrency=1, delay=0.1)
    killed_midway(command, env, tmp_path, after_ends=2)
    with Store.open(f"sqlite:///{db}") as store:
        (killed,) = store.list_runs()
        assert killed.status == "RUNNING" and 0 < killed.case_count < CASES
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    procs = [subprocess.Popen(command, env=env, cwd=tmp_path, text=True, **pipes) for _ in range(3)]
    said = []
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        said.append(" ".join(err.split()))
    assert sum(f"resuming run {killed.id}" in s for s in said) == 1, said
    with Store.open(f"sqlite:///{db}") as store:
        runs = store.list_runs()
        assert len(runs) == 3  # the resumed one and two new ones
        for run in runs:
            assert (run.status, run.case_count) == ("COMPLETED", CASES)
            stored = Counter(doc["case_id"] for doc in store.case_results(run.id))
            assert stored == Counter(f"q{i}" for i in range(CASES))
