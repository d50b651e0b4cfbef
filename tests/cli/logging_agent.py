"""A real `assay eval` command over an agent that logs each call, for the tests that
stop a run midway (SIGKILL, SIGTERM, SIGINT) and check what the re-run calls again.

The agent writes "start ID" when called and "end ID" when it answers, so a test can
tell finished calls from calls in flight when the process was stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

AGENT = """
import os
import time

def _log(line):
    with open(os.environ["BOT_LOG"], "a") as log:
        log.write(line + "\\n")

def answer(prompt):
    _log("start " + prompt)
    time.sleep({delay})
    _log("end " + prompt)
    return prompt.upper()
"""


def eval_command(
    tmp_path: Path, *, cases: int, concurrency: int, delay: float, whole_file: bool = False
) -> tuple[list[str], dict[str, str], Path]:
    """The command (run from `tmp_path`), its environment and the store's file.

    The rows are JSON lines, which an agent's run streams; `whole_file` writes them as
    one JSON array instead, which is loaded whole (the engine's loaded path)."""
    agent = textwrap.dedent(AGENT).replace("{delay}", repr(delay))
    (tmp_path / "loggingbot.py").write_text(agent, encoding="utf-8")
    rows = [{"id": f"q{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(cases)]
    if whole_file:
        data = tmp_path / "rows.json"
        data.write_text(json.dumps(rows), encoding="utf-8")
    else:
        data = tmp_path / "rows.jsonl"
        data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    db = tmp_path / "assay.db"
    command = [
        sys.executable, "-m", "assay", "eval", str(data), "--agent", "loggingbot:answer",
        "--metric", "response_match_score", "--store", f"sqlite:///{db}",
        "--concurrency", str(concurrency), "--quiet",
    ]  # fmt: skip
    env = {**os.environ, "BOT_LOG": str(tmp_path / "calls.log"), "PYTHONUNBUFFERED": "1"}
    return command, env, db


def call_log(tmp_path: Path) -> list[tuple[str, str]]:
    """The agent's ("start" | "end", case id) events so far, in order."""
    path = tmp_path / "calls.log"
    if not path.exists():
        return []
    return [
        (event, case) for event, case in (line.split() for line in path.read_text().splitlines())
    ]


def default_sigint() -> None:
    """For a child process that is sent Ctrl-C: SIGINT handled as in a terminal, even
    when these tests run with it ignored (a background job of a shell inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_midway(
    command: list[str],
    env: dict[str, str],
    tmp_path: Path,
    *,
    after_ends: int,
    sig: int,
    settle_s: float = 0.0,
) -> tuple[int, str, set[str]]:
    """Run `command` until the agent has answered `after_ends` calls, wait `settle_s`,
    send `sig`; the exit code, stderr and the cases whose call had ended before `sig`."""
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, text=True, preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while sum(event == "end" for event, _ in call_log(tmp_path)) < after_ends:
            assert proc.poll() is None, "the run ended before it could be stopped"
            assert time.monotonic() < deadline, "the agent was not called in time"
            time.sleep(0.02)
        time.sleep(settle_s)
        finished = {case for event, case in call_log(tmp_path) if event == "end"}
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stderr, finished


def killed_midway(
    command: list[str], env: dict[str, str], tmp_path: Path, *, after_ends: int
) -> set[str]:
    """SIGKILL the run once `after_ends` calls ended (and their results had 0.3 s to be
    stored: it takes milliseconds); the cases whose call had ended by then."""
    _code, _stderr, finished = stop_midway(
        command, env, tmp_path, after_ends=after_ends, sig=signal.SIGKILL, settle_s=0.3
    )
    return finished
