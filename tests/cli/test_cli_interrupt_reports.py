"""Ctrl-C never loses a report: SIGINT to a real `assay eval --out results.json`
(`--junit`, `--csv` too) at 0.4, 0.9 and 1.6 s after it starts — while it loads, opens
its run, or runs a slow deterministic agent — leaves an earlier report exactly as it
was, and says what was kept and how to go on. Without an earlier report an interrupted
run's report holds the case runs it finished; the same command then resumes the run
and its complete report replaces that one. The loaded path (a JSON array) and the
streamed one (JSON lines) alike."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from logging_agent import AGENT as LOGGING
from logging_agent import default_sigint, stop_midway

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CASES = 20
AGENT = """
import time

def answer(prompt):
    time.sleep(0.3)
    return prompt.upper()
"""
EARLIER = {"results.json": '{"earlier": "report"}\n', "junit.xml": "<earlier/>\n",
           "rows.csv": "earlier,report\n"}  # fmt: skip


def _command(tmp_path: Path, suffix: str, *extra: str) -> list[str]:
    (tmp_path / "slowbot.py").write_text(AGENT, encoding="utf-8")
    rows = [{"id": f"q{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(CASES)]
    data = tmp_path / f"rows{suffix}"
    if suffix == ".json":
        data.write_text(json.dumps(rows), encoding="utf-8")
    else:
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [
        sys.executable, "-m", "assay", "eval", str(data), "--agent", "slowbot:answer",
        "--metric", "response_match_score", "--concurrency", "1", "--quiet",
        "--out", "results.json", "--junit", "junit.xml", "--csv", "rows.csv", *extra,
    ]  # fmt: skip


def _interrupted_after(command: list[str], cwd: Path, seconds: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *sys.path])}
    proc = subprocess.Popen(command, cwd=cwd, env=env, text=True, preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        time.sleep(seconds)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, " ".join(stderr.split())


@pytest.mark.parametrize("suffix", [".json", ".jsonl"], ids=["loaded", "streamed"])
@pytest.mark.parametrize("seconds", [0.4, 0.9, 1.6])
def test_ctrl_c_keeps_the_earlier_reports(tmp_path: Path, suffix: str, seconds: float) -> None:
    for name, text in EARLIER.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    code, said = _interrupted_after(_command(tmp_path, suffix, "--store", store), tmp_path,
                                    seconds)  # fmt: skip
    assert code == 130, said
    for name, text in EARLIER.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text, name
    assert "Traceback" not in said
    starting = any(
        line in said
        for line in (
            "interrupted while assay was starting: nothing was run or written",
            "interrupted before the evaluation started: nothing was run or written",
        )
    )
    if not starting:
        for name in EARLIER:
            assert f"kept {name} as it was" in said, said
    assert "run the same command again" in said
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"], ids=["loaded", "streamed"])
def test_an_interrupted_report_holds_the_finished_cases_then_the_rerun_completes_it(
    tmp_path: Path, suffix: str
) -> None:
    command = _command(tmp_path, suffix, "--store", f"sqlite:///{tmp_path / 'assay.db'}")
    # the resume tests' agent, whose log says which calls ended
    (tmp_path / "slowbot.py").write_text(LOGGING.replace("{delay}", "0.3"), encoding="utf-8")
    env = {**os.environ, "BOT_LOG": str(tmp_path / "calls.log"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}  # fmt: skip
    code, stderr, _finished = stop_midway(command, env, tmp_path, after_ends=3,
                                          sig=signal.SIGINT)  # fmt: skip
    said = " ".join(stderr.split())
    assert code == 130, said
    assert "case runs completed and stored; run the same command again to resume" in said
    partial = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert 3 <= len(partial["cases"]) < CASES  # what finished, not an empty report
    # the earlier (partial) report now exists: a second interrupt leaves it as it was
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "resuming run" in again.stderr
    done = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert len(done["cases"]) == CASES  # the complete report replaced the partial one


def test_without_a_store_the_interrupt_says_nothing_was_stored(tmp_path: Path) -> None:
    code, said = _interrupted_after(_command(tmp_path, ".json", "--no-store"), tmp_path, 3.0)
    assert code == 130, said
    if "case runs completed" in said:  # interrupted while the agent ran
        assert "nothing was stored (--no-store): run the same command again to start over" in said
    else:  # still loading on a slow machine
        assert "run the same command again" in said
