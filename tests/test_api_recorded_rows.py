"""`assay.evaluate(rows, metrics=..., keep_cases=N)` of recorded rows (no agent) streams
as `assay eval` does: the loaded run's cases, rows and summary, every result stored, and
a malformed row named with the rows before it kept and the run resumable."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import assay
from api_stream_helpers import untimed
from assay.errors import InputError
from assay.report.json_report import case_to_adk
from assay.session.streaming import StreamingRun
from assay.store import Store

METRICS = ["trajectory_exact_match", "trajectory_recall", "response_match_score"]


def _rows(n: int) -> list[dict[str, Any]]:
    rng = random.Random(11)
    rows = []
    for i in range(n):
        ref = [{"tool_name": rng.choice("abc"), "tool_input": {"n": rng.randint(1, 3)}}
               for _ in range(rng.randint(1, 3))]  # fmt: skip
        pred = ref[::-1] if rng.random() < 0.3 else list(ref)
        answer = f"answer {i % 13}"
        rows.append({
            "id": f"case-{i}", "prompt": f"q{i}", "reference": answer,
            "response": answer if rng.random() < 0.7 else "something else",
            "predicted_trajectory": pred, "reference_trajectory": ref,
        })  # fmt: skip
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[StreamingRun]:
    runs: list[StreamingRun] = []
    real = StreamingRun.run

    def spied(self: StreamingRun) -> Any:
        runs.append(self)
        return real(self)

    monkeypatch.setattr(StreamingRun, "run", spied)
    return runs


def test_recorded_rows_with_keep_cases_stream_as_the_loaded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _write(tmp_path / "rows.jsonl", _rows(2_500))
    runs = _spy(monkeypatch)
    db = f"sqlite:///{tmp_path / 's.db'}"
    streamed = assay.evaluate(data, metrics=METRICS, keep_cases=4, store=db)
    assert len(runs) == 1
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        loaded = assay.evaluate(data, metrics=METRICS, keep_cases=4)
    assert len(runs) == 1  # the loaded run did not stream
    assert [c.case_id for c in streamed.cases] == [c.case_id for c in loaded.cases]
    assert len(streamed.cases) == 4
    docs = [[untimed(case_to_adk(c)) for c in r.cases] for r in (streamed, loaded)]
    assert docs[0] == docs[1]
    assert untimed(streamed.rows) == untimed(loaded.rows)
    assert streamed.summary == loaded.summary  # the whole run's
    assert streamed.summary["case_count"] == 2_500
    with Store.open(db) as store:
        (info,) = store.list_runs()
        assert info.status == "COMPLETED" and info.id == streamed.run_id
        assert len(store.case_results(info.id)) == 2_500


def test_without_keep_cases_recorded_rows_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A result holding every case holds the rows' worth of objects anyway.
    data = _write(tmp_path / "rows.jsonl", _rows(30))
    runs = _spy(monkeypatch)
    result = assay.evaluate(data, metrics=METRICS)
    assert not runs and len(result.cases) == 30


def test_a_malformed_row_is_named_and_the_same_call_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(2_400)
    good = rows[2_100]
    rows[2_100] = {**good, "reference_trajectory": {"tool_name": 5}}  # line 2,101
    data = _write(tmp_path / "rows.jsonl", rows)
    db = f"sqlite:///{tmp_path / 's.db'}"
    with pytest.raises(InputError) as failed:
        assay.evaluate(data, metrics=METRICS, keep_cases=0, store=db)
    assert "line 2101" in str(failed.value) and "reference_trajectory" in str(failed.value)
    with Store.open(db) as store:
        (info,) = store.list_runs()
        assert info.status == "INTERRUPTED"
        assert len(store.case_results(info.id)) == 2_100  # every row before it
    rows[2_100] = good
    _write(data, rows)
    runs = _spy(monkeypatch)
    again = assay.evaluate(data, metrics=METRICS, keep_cases=0, store=db)
    assert len(runs) == 1 and again.cases == [] and again.run_id == info.id
    assert again.summary["case_count"] == 2_400
    with Store.open(db) as store:
        (info,) = store.list_runs()
        assert info.status == "COMPLETED"
        assert len(store.case_results(info.id)) == 2_400
