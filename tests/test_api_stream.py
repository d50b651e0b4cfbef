"""`assay.evaluate(rows_path, agent=...)` streamed: the same result and stored run as the
loaded path, and each loaded/streamed run resumes the other's."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import assay
from api_stream_helpers import spy_streamed, untimed, write_rows
from assay.report.json_report import case_to_adk
from assay.store import Store


def answer(prompt: str) -> str:
    n = int(prompt[1:])
    if n == 4:
        raise RuntimeError("the agent broke on q4")
    return prompt.upper() if n % 3 else "something else"


def test_evaluate_streams_an_agent_over_a_row_file_as_the_loaded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 60)
    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    streamed_runs = spy_streamed(monkeypatch)
    kwargs: dict[str, Any] = {"metrics": ["response_match_score"], "agent": answer,
                              "store": store, "concurrency": 4, "fresh": True}  # fmt: skip
    streamed = assay.evaluate(str(data), **kwargs)
    assert len(streamed_runs) == 1
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)  # the loaded path
        loaded = assay.evaluate(data, **kwargs)
    assert len(streamed_runs) == 1
    assert [c.case_id for c in streamed.cases] == [f"row-{i}" for i in range(60)]
    as_docs = [[untimed(case_to_adk(c)) for c in r.cases] for r in (streamed, loaded)]
    assert as_docs[0] == as_docs[1]
    assert untimed(streamed.summary) == untimed(loaded.summary)
    assert streamed.summary["failure/mean"] == 1 / 60
    assert untimed(streamed.rows) == untimed(loaded.rows)
    assert streamed.eval_set_id == loaded.eval_set_id == "rows"
    assert streamed.run_id and streamed.run_id != loaded.run_id
    assert type(streamed) is type(loaded)  # Vertex's names, the notebook table
    with Store.open(store) as db:
        first, second = db.get_run(streamed.run_id), db.get_run(loaded.run_id)
        assert first.status == second.status == "COMPLETED"
        assert (first.config, first.agent) == (second.config, second.agent)
        assert len(db.case_results(streamed.run_id)) == 60


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_loaded_interrupted_run_is_resumed_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same identity: `evaluate` streamed picks up what a loaded run left INTERRUPTED."""
    data = write_rows(tmp_path / "rows.jsonl", 30)
    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    calls: list[str] = []
    stop = [True]

    def counted(prompt: str) -> str:
        calls.append(prompt)
        if prompt == "q20" and stop[0]:  # Ctrl-C while the agent answers row 20
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the run is cancelled meanwhile
        return prompt.upper()

    kwargs: dict[str, Any] = {"metrics": ["response_match_score"], "agent": counted,
                              "store": store, "concurrency": 1}  # fmt: skip
    with monkeypatch.context() as patch:
        patch.setattr("assay.api_stream.row_files", lambda *_: None)
        with pytest.raises(KeyboardInterrupt):
            assay.evaluate(data, **kwargs)
    done_before = set(calls) - {"q20"}
    assert len(done_before) == 20
    streamed_runs = spy_streamed(monkeypatch)
    calls.clear()
    stop[0] = False
    result = assay.evaluate(data, **kwargs)
    assert len(streamed_runs) == 1
    assert set(calls) == {f"q{i}" for i in range(20, 30)}  # only what was not finished
    assert len(result.cases) == 30 and result.summary["passed"] == 30
    with Store.open(store) as db:
        (info,) = db.list_runs()
        assert info.status == "COMPLETED" and info.id == result.run_id


def test_options_that_need_the_loaded_eval_sets_keep_the_loaded_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", 5)
    streamed_runs = spy_streamed(monkeypatch)
    assay.evaluate(data, metrics=["response_match_score"], agent=answer, runs=2)
    assay.evaluate(data, agent=answer)  # default criteria depend on the data
    assay.evaluate(data, metrics=["response_match_score"])  # no agent: recorded rows
    assert streamed_runs == []
