"""Resume: a real `assay eval` process killed (SIGKILL) or interrupted (SIGINT) midway,
then the same command again, which continues the stored run instead of starting over."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from logging_agent import call_log, default_sigint, eval_command

from assay.store import Store

CASES = 10

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _setup(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    return eval_command(tmp_path, cases=CASES, concurrency=1, delay=0.15)


def _stored_keys(db: Path) -> set[tuple[str, str, int]]:
    if not db.exists():
        return set()
    with Store.open(f"sqlite:///{db}") as store:
        runs = store.list_runs()
        return store.completed_case_keys(runs[-1].id) if runs else set()


def _first_run_id(db: Path) -> str:
    with Store.open(f"sqlite:///{db}") as store:
        return store.list_runs()[-1].id


@contextmanager
def _started(command: list[str], env: dict[str, str], cwd: Path) -> Iterator[subprocess.Popen[str]]:
    """`command` running in the background; killed at the end if still running."""
    proc = subprocess.Popen(command, env=env, cwd=cwd, text=True, preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _wait_for_stored(db: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while len(_stored_keys(db)) < count:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "no case results stored in time"
        time.sleep(0.05)


def _calls(tmp_path: Path) -> list[str]:
    return [case for event, case in call_log(tmp_path) if event == "start"]


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def _resume_and_check(
    tmp_path: Path, command: list[str], env: dict[str, str], db: Path, done_before: set[str]
) -> None:
    run_id = _first_run_id(db)
    calls_before = len(_calls(tmp_path))
    again = _run(command, env, tmp_path)
    with Store.open(f"sqlite:///{db}") as store:
        run = store.get_run(run_id)
        assert f"resuming run {run.id}: {len(done_before)} of {CASES} case runs already done" in (
            again.stderr.replace("\n", " ")
        )
        assert (run.status, run.case_count, run.passed, run.total) == (
            "COMPLETED", CASES, CASES, CASES,
        )  # fmt: skip
        assert run.summary["case_count"] == CASES  # the summary covers the earlier cases too
        stored = Counter(doc["case_id"] for doc in store.case_results(run.id))
    assert stored == Counter(f"q{i}" for i in range(CASES))  # each case stored exactly once
    resumed_calls = _calls(tmp_path)[calls_before:]
    assert not done_before & set(resumed_calls)  # nothing already stored was run again
    assert sorted(resumed_calls) == sorted(
        f"q{i}" for i in range(CASES) if f"q{i}" not in done_before
    )
    assert "Result: 10 passed" in again.stdout


def test_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    command, env, db = _setup(tmp_path)
    with _started(command, env, tmp_path) as proc:
        _wait_for_stored(db, 3, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    done_before = {case for _, case, _ in _stored_keys(db)}
    assert 3 <= len(done_before) < CASES
    with Store.open(f"sqlite:///{db}") as store:
        assert store.list_runs()[0].status == "RUNNING"  # killed: nobody marked it
    # different run options are a different evaluation: a new run, not a resumption
    other = _run([*command, "--run-method", "naive"], env, tmp_path)
    assert "resuming" not in other.stderr
    _resume_and_check(tmp_path, command, env, db, done_before)


def test_ctrl_c_marks_the_run_interrupted_and_the_rerun_completes_it(tmp_path: Path) -> None:
    command, env, db = _setup(tmp_path)
    with _started(command, env, tmp_path) as proc:
        _wait_for_stored(db, 2, proc)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "run the same command again to resume" in stderr.replace("\n", " ")
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        assert run.status == "INTERRUPTED"
    done_before = {case for _, case, _ in _stored_keys(db)}
    assert 2 <= len(done_before) < CASES
    fresh = _run([*command, "--fresh"], env, tmp_path)  # a new run, the old one stays
    assert "resuming" not in fresh.stderr
    with Store.open(f"sqlite:///{db}") as store:
        assert store.get_run(run.id).status == "INTERRUPTED"
    _resume_and_check(tmp_path, command, env, db, done_before)
