"""A real `assay eval` command over an agent that logs each call, for the tests that
stop a run midway (SIGKILL, SIGTERM, SIGINT) and check what the re-run calls again.

The agent writes "start ID" when called and "end ID" when it answers, so a test can
tell finished calls from calls in flight when the process was stopped.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
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
    tmp_path: Path, *, cases: int, concurrency: int, delay: float
) -> tuple[list[str], dict[str, str], Path]:
    """The command (run from `tmp_path`), its environment and the store's file."""
    agent = textwrap.dedent(AGENT).replace("{delay}", repr(delay))
    (tmp_path / "loggingbot.py").write_text(agent, encoding="utf-8")
    rows = [{"id": f"q{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(cases)]
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
