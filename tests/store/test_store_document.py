"""The stored case result document (format 2): compact on disk, `to_dict()` on read."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from sqlalchemy import insert, select
from store_samples import error_result, every_step_result, row_result, weather_result

from assay.core import Turn, UserInput
from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status
from assay.errors import StoreError
from assay.store import Store
from assay.store._document import FORMAT, compact_document, encode_document, expand_document
from assay.store._json import loads
from assay.store.schema import case_results
from assay.store.types import utcnow


def _every_field_set() -> CaseResult:
    """A result where no field of any result class is at its default."""
    turn = Turn(id="t", user_input=UserInput(text="hi"), final_response="hello")
    score = Score(0.5, "half right", {"votes": [1, 0]})
    return CaseResult(
        case_id="full",
        status=Status.FAILED,
        metrics={
            "judge": MetricResult(
                "judge_v2",
                0.5,
                0.8,
                Status.FAILED,
                "1 of 2 agree",
                [score],
                {"n": 2},
                ErrorType.METRIC_CALCULATION_FAILURE,
            )
        },
        invocations=[InvocationResult(3, "inv-3", turn, turn, {"judge": Score(1.0)})],
        run_index=2,
        latency_s=1.5,
        failure=True,
        error="boom",
        error_type=ErrorType.RUNTIME_FAILURE,
        eval_set_id="set",
        traceback='Traceback (most recent call last):\n  File "agent.py", line 2, in run\n'
        "RuntimeError: boom\n",
    )


SAMPLES = [
    weather_result(),
    row_result(3),
    error_result(),
    every_step_result(),
    _every_field_set(),
    CaseResult("bare", Status.NOT_EVALUATED),
]
IDS = ["tool_turns", "dataset_row", "error", "every_step_kind", "every_field_set", "bare"]


def _round_trip(result: CaseResult) -> dict[str, object]:
    return expand_document(loads(encode_document(result)))  # type: ignore[no-any-return]


@pytest.mark.parametrize("result", SAMPLES, ids=IDS)
def test_document_reads_back_as_to_dict(result: CaseResult) -> None:
    expected = result.to_dict()
    assert _round_trip(result) == expected
    # Key order too, down to the metrics and scores.
    assert json.dumps(_round_trip(result)) == json.dumps(expected)


def test_every_field_of_the_result_classes_survives() -> None:
    # A field added to a result class fails here until `_document` stores it.
    doc = _round_trip(_every_field_set())
    assert list(doc) == [f.name for f in fields(CaseResult)]
    assert list(doc["metrics"]["judge"]) == [f.name for f in fields(MetricResult)]  # type: ignore[index]
    assert list(doc["invocations"][0]) == [f.name for f in fields(InvocationResult)]  # type: ignore[index]
    assert doc == _every_field_set().to_dict()


def test_engine_results_store_each_score_once() -> None:
    result = row_result(3)
    stored = loads(encode_document(result))
    assert stored["format"] == FORMAT
    # Metrics as [name, score, threshold, status, per_invocation]; defaults left out.
    assert stored["metrics"] == [
        ["trajectory_exact_match", 1.0, 1.0, "PASSED", [1.0]],
        ["rouge_l_sum", 0.5, None, None, [0.5]],
    ]
    # The invocation's scores are the metrics' per_invocation: not stored again.
    assert set(stored["invocations"][0]) == {"actual", "expected"}
    assert "run_index" not in stored and "error" not in stored
    assert len(encode_document(result)) < 0.6 * len(json.dumps(result.to_dict()))


def test_invocation_scores_that_differ_are_stored() -> None:
    # weather_result's judged metric has an explanation per invocation that the
    # metric's per_invocation list does not: the invocation keeps its own scores.
    stored = loads(encode_document(weather_result()))
    scores = stored["invocations"][0]["scores"]
    assert scores["final_response_match_v2"] == {
        "value": 1.0,
        "explanation": "The answers agree.",
        "details": {"votes": [1, 1, 0]},
    }
    assert scores["response_match_score"] == 0.42


def test_rebuilt_scores_do_not_share_containers() -> None:
    score = Score(0.5, "why", {"votes": [1, 0]})
    result = CaseResult(
        "c",
        Status.PASSED,
        metrics={"m": MetricResult("m", 0.5, None, None, per_invocation=[score])},
        invocations=[InvocationResult(0, None, None, None, {"m": score})],
    )
    doc = _round_trip(result)
    assert doc == result.to_dict()
    doc["invocations"][0]["scores"]["m"]["details"]["votes"].append(9)  # type: ignore[index]
    assert doc["metrics"]["m"]["per_invocation"][0]["details"] == {"votes": [1, 0]}  # type: ignore[index]


def test_odd_values_keep_their_meaning() -> None:
    # A dict-valued score (outside the declared type) must not read as the object form,
    # and a metric filed under another key keeps both.
    result = CaseResult(
        "c",
        Status.PASSED,
        metrics={
            "alias": MetricResult(
                "real_name",
                1.0,
                None,
                None,
                per_invocation=[Score({"x": 1})],  # type: ignore[arg-type]
            )
        },
        invocations=[InvocationResult(0, None, None, None, {})],
    )
    assert _round_trip(result) == result.to_dict()


def test_documents_without_a_format_are_returned_as_they_are() -> None:
    legacy = weather_result().to_dict()
    assert expand_document(legacy) is legacy


def test_a_newer_format_is_refused() -> None:
    with pytest.raises(StoreError, match=r"format 3 is not readable .* upgrade assay"):
        expand_document({"format": 3, "case_id": "c"})


def test_compact_document_is_what_gets_encoded() -> None:
    result = weather_result()
    assert loads(encode_document(result)) == json.loads(
        json.dumps(compact_document(result), default=lambda m: m.model_dump(exclude_none=True))
    )


def test_an_unserialisable_result_names_its_case() -> None:
    result = row_result(1)
    result.metrics["trajectory_exact_match"].details["obj"] = object()
    with pytest.raises(StoreError, match="result of case 'row-1': cannot store value as JSON"):
        encode_document(result)


# -- through the store, on SQLite and PostgreSQL ---------------------------------------


def _start(store: Store) -> str:
    return store.start_run(eval_set_ids=["rows"], metrics=["m"], config={}, agent=None, runs=1)


def test_store_round_trip_of_every_sample(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, SAMPLES)
    assert store.case_results(run_id) == [r.to_dict() for r in SAMPLES]


def test_rows_keep_their_order_and_null_columns_across_statements(store: Store) -> None:
    # Rows go in runs of one NULL pattern (latency and error type set or not), and
    # those in multi-row statements of 64: 150 rows in varied patterns, one batch.
    results = []
    for i in range(150):
        result = row_result(i)
        if i % 7 == 0:
            result.latency_s = float(i)
        if i % 11 == 0:
            result.error_type = ErrorType.METRIC_CALCULATION_FAILURE
        results.append(result)
    run_id = _start(store)
    store.add_case_results(run_id, results)
    assert store.case_results(run_id) == [r.to_dict() for r in results]
    c = case_results.c
    query = select(c.case_id, c.latency_s, c.error_type).where(c.run_id == run_id).order_by(c.id)
    with store.engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(query)]
    assert rows == [(r.case_id, r.latency_s, r.error_type) for r in results]


def test_a_failed_unserialisable_batch_stores_nothing(store: Store) -> None:
    bad = row_result(2)
    bad.metrics["trajectory_exact_match"].details["obj"] = object()
    run_id = _start(store)
    with pytest.raises(StoreError, match="result of case 'row-2'"):
        store.add_case_results(run_id, [row_result(1), bad])
    assert store.case_results(run_id) == []
    assert store.get_run(run_id).case_count == 0


def test_documents_written_before_format_2_still_read(store: Store) -> None:
    # Stores written by an earlier assay hold the full to_dict() document.
    run_id = _start(store)
    legacy = weather_result("old")
    row = {
        "run_id": run_id,
        "eval_set_id": "weather",
        "case_id": "old",
        "run_index": 0,
        "status": "FAILED",
        "execution_state": "COMPLETED",
        "created_at": utcnow(),
        "document": legacy.to_dict(),
    }
    with store.engine.begin() as conn:
        conn.execute(insert(case_results), row)
    store.add_case_results(run_id, [weather_result("new")])
    assert store.case_results(run_id) == [legacy.to_dict(), weather_result("new").to_dict()]
