"""A streamed run of recorded rows starts without loading what it does not use: the
judged metrics, the whole-run pipeline (runner, agents) and Alembic (a new SQLite store
is created at the head). A second of start-up is a sixth of a 100,000-row run, spent
while the other cores wait (bench/README.md, round 7)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

EVAL = textwrap.dedent(
    """
    import json, sys
    from assay.cli import main
    sys.argv = ["assay", *sys.argv[1:]]
    try:
        main()
    except SystemExit as stop:
        loaded = sorted(m for m in sys.modules if m in (
            "alembic", "assay.metrics.judged", "assay.engine.runner", "assay.agents.loader",
            "assay.engine.judging"))
        print(json.dumps({"code": stop.code, "loaded": loaded}), file=sys.stderr)
    """
)


def test_a_streamed_run_of_deterministic_metrics_loads_no_judge_runner_or_alembic(
    tmp_path: Path,
) -> None:
    rows = tmp_path / "rows.jsonl"
    calls = [{"tool_name": "search", "tool_input": {"q": "x"}}]
    rows.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "prompt": "p", "response": "yes", "reference": "yes",
                        "predicted_trajectory": calls, "reference_trajectory": calls}) + "\n"
            for i in range(60)
        )
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", EVAL, "eval", str(rows), "--metric", "trajectory_exact_match",
         "--metric", "response_match_score", "--store", f"sqlite:///{tmp_path / 'new.db'}",
         "--out", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    assert report["loaded"] == []
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["case_count"] == 60
