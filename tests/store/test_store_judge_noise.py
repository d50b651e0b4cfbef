"""The judge-noise fields of a judged item (its sample split, the unstable flag and the
summary's `judge/unstable` counts) survive the store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.metrics.sample_split import is_unstable, split_of
from assay.report.compare import Change, compare_results
from assay.store import Store
from assay.store.reading import load_result
from assay.testing import JudgeServer
from assay.testing.standin_judges import seeded_coin

runner = CliRunner()


def test_unstable_flags_round_trip_through_the_store(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    data = tmp_path / "items.jsonl"
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"question {i}",
            "response": f"answer {i}",
            "reference": f"ref {i}",
        }
        for i in range(8)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outs = []
    with JudgeServer(seeded_coin(5)) as server:
        for n in range(2):
            out = tmp_path / f"run{n}.json"
            result = runner.invoke(
                app,
                [
                    "eval",
                    str(data),
                    "-m",
                    "final_response_match_v2",
                    "--judge",
                    "openai:standin",
                    "--judge-samples",
                    "4",
                    "--store",
                    store_url,
                    "--out",
                    str(out),
                    "--no-cache",
                ],
                env={"OPENAI_BASE_URL": server.openai_base_url},
            )
            assert result.exit_code in (0, 1), result.output
            outs.append(json.loads(out.read_text()))
    db = Store.open(store_url)
    try:
        stored = [load_result(db, db.get_run(doc["run_id"])) for doc in outs]
    finally:
        db.close()
    for doc, result in zip(outs, stored, strict=True):
        flagged = {
            c.case_id
            for c in result.cases
            if is_unstable(c.metrics["final_response_match_v2"].details)
        }
        written = {
            c["eval_id"]
            for c in doc["cases"]
            if "judge_samples" in c and c["judge_samples"]["final_response_match_v2"]["unstable"]
        }
        assert flagged == written and flagged
        assert result.summary["judge/unstable"] == len(flagged)
        for case in result.cases:
            metric = case.metrics["final_response_match_v2"]
            assert sum(split_of(metric.details) or (0, 0)) == 4
            assert len(metric.per_invocation[0].details["sample_scores"]) == 4
    # Compare reads the flags back from the store: flips of unstable items are apart.
    comparison = compare_results(stored[0], stored[1])
    for delta in comparison.cases:
        if delta.change is Change.UNSTABLE:
            assert "final_response_match_v2" in {*delta.base.unstable, *delta.other.unstable}
    assert not any(
        d.change is Change.REGRESSED
        and "final_response_match_v2" in {*d.base.unstable, *d.other.unstable}
        for d in comparison.cases
    )
