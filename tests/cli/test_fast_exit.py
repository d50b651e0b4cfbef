"""The `assay` program (`assay.cli.program`) leaves without tearing its modules down
(`cli.common.run_program`), but only after what Python's own exit does first: threads
that are not daemons are waited for, `atexit` functions run, stdout and stderr are
flushed, and the command's exit code is the process's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import atexit, sys, threading, time
    from pathlib import Path

    marks = Path(sys.argv[1])

    def late_thread() -> None:
        time.sleep(2)  # still running when the command is done
        (marks / "thread").write_text("done")

    def at_exit() -> None:
        (marks / "atexit").write_text("ran")
        print("printed at exit", end="")  # left in stdout's buffer: flushed by the exit

    threading.Thread(target=late_thread).start()  # not a daemon: waited for
    atexit.register(at_exit)
    sys.argv = ["assay", *sys.argv[2:]]
    from assay.cli import program
    program()
    """
)


def _assay(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # stdout block-buffered, as a user's pipe is (not PYTHONUNBUFFERED)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path), *args],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip


def test_output_threads_and_atexit_survive_the_fast_exit(tmp_path: Path) -> None:
    done = _assay(tmp_path, "metrics")
    assert done.returncode == 0, done.stderr
    # The whole of a long table on stdout (a pipe: block-buffered), flushed to its end.
    assert len(done.stdout) > 5_000
    assert "trajectory_exact_match" in done.stdout
    assert done.stdout.endswith("shows one in full\nprinted at exit")
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_the_commands_exit_codes_are_the_programs(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"id": "a", "response": "yes", "reference": "yes"})
        + "\n"
        + json.dumps({"id": "b", "response": "no", "reference": "yes"})
        + "\n"
    )
    failed = _assay(tmp_path, "eval", str(rows), "--metric", "exact_match", "--no-store")
    assert failed.returncode == 1, failed.stderr
    assert "1 passed, 1 failed" in failed.stdout
    unknown = _assay(tmp_path, "eval", str(rows), "--metric", "no_such_metric", "--no-store")
    assert unknown.returncode == 2
    assert "no_such_metric" in unknown.stderr + unknown.stdout
    passed = _assay(tmp_path, "eval", str(tmp_path / "missing.jsonl"), "--no-store")
    assert passed.returncode == 2
    assert (tmp_path / "atexit").read_text() == "ran"
