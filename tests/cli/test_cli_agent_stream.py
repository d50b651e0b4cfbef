"""`assay eval rows.jsonl --agent ...` streamed: the same run as the loaded path (case
ids, scores, stored documents, reports, summary, exit code), resumable after a kill,
interrupted cleanly, and in memory that does not grow with the rows."""

from __future__ import annotations

import csv
import io
import json
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from logging_agent import call_log, eval_command, killed_midway, stop_midway
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

runner = CliRunner()

# Finishes out of file order (each call sleeps a little, varying by row), fails one row
# outright, and answers a third of the rows wrongly.
AGENT = """
import asyncio

async def answer(prompt):
    n = int(prompt[1:])
    await asyncio.sleep((n * 7 % 5) * 0.002)
    if n == 7:
        raise RuntimeError("the agent broke on q7")
    return prompt.upper() if n % 3 else "something else"
"""
_TIMING = {"duration", "latency_s", "latency_in_seconds"}


def _agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return f"{name}:answer"


def _rows(path: Path, n: int) -> Path:
    rows = [{"prompt": f"q{i}", "reference": f"Q{i}"} for i in range(n)]
    for i in range(0, n, 5):  # the others get the loader's default id, row-{index}
        rows[i]["id"] = f"case-{i}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _untimed(value: Any) -> Any:
    """`value` without what the wall clock decides (latencies, durations, run ids)."""
    if isinstance(value, dict):
        return {
            k: _untimed(v)
            for k, v in value.items()
            if k not in _TIMING
            and not k.startswith("latency_in_seconds")
            and k not in ("run_id", "session_id")
        }
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _csv_untimed(path: Path) -> list[dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    return [{k: v for k, v in r.items() if k != "latency_in_seconds"} for r in rows]


def _eval(tmp_path: Path, data: Path, agent: str, tag: str, extra: list[str], *,
          loaded: bool) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    out = tmp_path / f"{tag}.json"
    args = ["eval", str(data), "--agent", agent, "--metric", "response_match_score",
            "--out", str(out), "--csv", str(tmp_path / f"{tag}.csv"),
            "--junit", str(tmp_path / f"{tag}.xml"),
            "--store", f"sqlite:///{tmp_path / 'db.sqlite'}", "--fresh", *extra]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        if loaded:
            patch.setattr("assay.cli.eval._streamable", lambda *_: None)
        result = runner.invoke(app, args)
    doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return result, doc


def _stored(tmp_path: Path, run_id: str) -> tuple[Any, list[dict[str, Any]]]:
    with Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}") as db:
        return db.get_run(run_id), db.case_results(run_id)


@pytest.mark.parametrize(
    ("rows", "extra"),
    [
        (120, ["--concurrency", "4", "--quiet"]),
        (120, ["--concurrency", "1", "--runs", "1", "--quiet"]),
        (30, ["--concurrency", "4"]),  # small: the case table, as a loaded run prints it
    ],
)
def test_streamed_agent_run_equals_the_loaded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int, extra: list[str]
) -> None:
    agent = _agent(tmp_path, monkeypatch, f"streambot_{rows}_{len(extra)}")
    data = _rows(tmp_path / "rows.jsonl", rows)
    streamed_runs: list[Any] = []
    from assay.session.agent_stream import AgentStreamingRun

    real_run = AgentStreamingRun.run
    monkeypatch.setattr(AgentStreamingRun, "run",
                        lambda self: streamed_runs.append(self) or real_run(self))  # fmt: skip
    loaded, loaded_doc = _eval(tmp_path, data, agent, "loaded", extra, loaded=True)
    assert not streamed_runs
    streamed, doc = _eval(tmp_path, data, agent, "streamed", extra, loaded=False)
    assert len(streamed_runs) == 1  # this one was streamed
    assert streamed.exit_code == loaded.exit_code == 1, streamed.output
    assert _untimed(doc) == _untimed(loaded_doc)
    assert [c["eval_id"] for c in doc["cases"]][:6] == [
        "case-0", "row-1", "row-2", "row-3", "row-4", "case-5",
    ]  # fmt: skip
    broken = next(c for c in doc["cases"] if c["eval_id"] == "row-7")
    assert broken["failure"] and "the agent broke on q7" in broken["error"]
    summary = doc["summary"]
    assert summary["case_count"] == rows and summary["failure/mean"] == 1 / rows
    assert summary["latency_in_seconds/mean"] > 0
    assert _csv_untimed(tmp_path / "streamed.csv") == _csv_untimed(tmp_path / "loaded.csv")
    untimed_xml = [
        re.sub(rb' time="[^"]*"', b"", (tmp_path / f"{tag}.xml").read_bytes())
        for tag in ("streamed", "loaded")
    ]
    assert untimed_xml[0] == untimed_xml[1]
    assert b'errors="1"' in untimed_xml[0]
    info, stored = _stored(tmp_path, doc["run_id"])
    loaded_info, reference = _stored(tmp_path, loaded_doc["run_id"])
    assert len(stored) == rows
    # Stored as they finish (the agent's order, in either path): compared by case.
    by_case = sorted(_untimed(stored), key=lambda d: d["case_id"])
    assert by_case == sorted(_untimed(reference), key=lambda d: d["case_id"])
    assert info.status == loaded_info.status == "COMPLETED"
    assert info.summary == doc["summary"]
    assert info.agent == loaded_info.agent and info.config == loaded_info.config
    # The console: the summary line (--quiet) or the case table, as the loaded run's.
    strip = re.compile(r"\d+\.\d+s|\d+ms")
    assert strip.sub("", streamed.stdout) == strip.sub("", loaded.stdout)


def test_judged_metrics_and_adk_history_say_why_the_rows_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch, "streambot_notes")
    data = _rows(tmp_path / "rows.jsonl", 12)
    base = ["eval", str(data), "--agent", agent, "--no-store"]
    for extra, reason in [
        (["--metric", "response_match_score", "--runs", "2"], "--runs above 1"),
        (["--metric", "response_match_score", "--limit", "3"], "case selection"),
        (["--metric", "correctness"], "correctness is judged"),  # no judge: not evaluated
    ]:
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 1, result.output
        notes = [line for line in result.stderr.splitlines() if "not streamed" in line]
        assert len(notes) == 1 and reason in notes[0], result.stderr


def test_a_malformed_row_stops_after_the_case_runs_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch, "streambot_malformed")
    data = _rows(tmp_path / "rows.jsonl", 60)
    lines = data.read_text().splitlines()
    good = lines[44]
    lines[44] = json.dumps({"prompt": 42})  # line 45
    data.write_text("\n".join(lines) + "\n")
    db = tmp_path / "db.sqlite"
    args = ["eval", str(data), "--agent", agent, "--metric", "response_match_score",
            "--store", f"sqlite:///{db}", "--concurrency", "4", "--quiet"]  # fmt: skip
    failed = runner.invoke(app, [*args, "--out", str(tmp_path / "partial.json")])
    assert failed.exit_code == 2, failed.output
    assert "line 45" in failed.stderr and "prompt" in failed.stderr, failed.stderr
    assert "Traceback" not in failed.output
    partial = json.loads((tmp_path / "partial.json").read_text())
    partial_ids = [c["eval_id"] for c in partial["cases"]]
    assert len(partial_ids) == 44 and partial_ids[-1] == "row-43"
    with Store.open(f"sqlite:///{db}") as store:
        (info,) = store.list_runs()
        assert info.status == "INTERRUPTED"
        assert len(store.case_results(info.id)) == 44
    lines[44] = good
    data.write_text("\n".join(lines) + "\n")
    fixed = runner.invoke(app, [*args, "--out", str(tmp_path / "r.json")])
    assert fixed.exit_code == 1, fixed.output
    assert "resuming run" in fixed.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["case_count"] == 60 == len(doc["cases"])
    ids = [c["eval_id"] for c in doc["cases"]]
    # The stored case runs first (as a resumed loaded run writes them), then the rest
    # in file order.
    assert set(ids[:44]) == set(partial_ids) and ids[44:47] == ["row-44", "case-45", "row-46"]


# -- a real process, stopped midway --------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_midway_reruns_only_the_case_runs_in_flight(tmp_path: Path) -> None:
    command, env, db = eval_command(tmp_path, cases=48, concurrency=4, delay=0.2)
    command += ["--out", str(tmp_path / "r.json")]
    finished = killed_midway(command, env, tmp_path, after_ends=8)
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        stored = {doc["case_id"] for doc in store.case_results(run.id)}
    assert finished <= stored
    calls_before = len(call_log(tmp_path))
    again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "resuming run" in again.stderr
    rerun = {case for event, case in call_log(tmp_path)[calls_before:] if event == "start"}
    assert not rerun & finished
    assert rerun == {f"q{i}" for i in range(48)} - stored
    doc = json.loads((tmp_path / "r.json").read_text())
    # The resumed run's report holds every case once: the stored ones first, as a loaded
    # resumed run writes them, then the rest in file order.
    assert sorted(c["eval_id"] for c in doc["cases"]) == sorted(f"q{i}" for i in range(48))
    assert doc["summary"]["passed"] == 48


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_leaves_the_run_interrupted(tmp_path: Path, sig: int) -> None:
    command, env, db = eval_command(tmp_path, cases=40, concurrency=4, delay=0.2)
    command += ["--out", str(tmp_path / "r.json")]
    # A moment after the fourth answer, so that on a loaded machine its result is stored
    # (the test is about what an interrupt keeps, not about the race before the write).
    code, stderr, _ = stop_midway(command, env, tmp_path, after_ends=4, sig=sig, settle_s=0.3)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert "run the same command again to resume" in stderr.replace("\n", " ")
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        assert run.status == "INTERRUPTED"
        stored = {doc["case_id"] for doc in store.case_results(run.id)}
    assert 1 <= len(stored) < 40
    # The partial report holds what was stored, in file order.
    doc = json.loads((tmp_path / "r.json").read_text())
    ids = [c["eval_id"] for c in doc["cases"]]
    assert set(ids) == stored
    assert ids == sorted(ids, key=lambda case: int(case[1:]))
