"""document_recall / document_precision: distinct doc_uris, Databricks output names."""

from __future__ import annotations

import pytest

from assay.core.cases import Chunk, EvalCase, Retrieval, Step, Turn
from assay.metrics.registry import build_metric
from assay.metrics.retrieval import (
    NO_EXPECTED,
    NO_RETRIEVAL,
    NO_RETRIEVED_URI,
    DocumentPrecision,
    DocumentRecall,
)


def _turn(*uris: str | None, steps: int = 1) -> Turn:
    chunks = [Chunk(doc_uri=u, content=f"text of {u}") for u in uris]
    return Turn(steps=[Step(retrieval=Retrieval(chunks=chunks)) for _ in range(steps)])


def _case(*uris: str | None) -> EvalCase:
    return EvalCase(id="q1", expected_retrieved_context=[Chunk(doc_uri=u) for u in uris])


def test_recall_counts_distinct_expected_documents_found() -> None:
    score = DocumentRecall().score_invocation(_turn("a", "c", "a", "d"), None, _case("a", "b", "a"))
    assert score.value == 0.5
    assert score.details == {"found": ["a"], "missing": ["b"]}


def test_recall_is_not_affected_by_how_many_documents_were_retrieved() -> None:
    case = _case("a", "b")
    few = DocumentRecall().score_invocation(_turn("a", "b"), None, case)
    many = DocumentRecall().score_invocation(_turn("a", "b", *"cdefgh"), None, case)
    assert few.value == many.value == 1.0


def test_precision_counts_distinct_retrieved_documents_that_are_expected() -> None:
    score = DocumentPrecision().score_invocation(_turn("a", "a", "c", "d"), None, _case("a", "b"))
    assert score.value == pytest.approx(1 / 3)
    assert score.details == {"relevant": ["a"], "irrelevant": ["c", "d"]}


def test_retrieval_across_several_steps_of_a_turn_is_pooled() -> None:
    turn = Turn(
        steps=[
            Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="a")])),
            Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="b")])),
        ]
    )
    assert DocumentRecall().score_invocation(turn, None, _case("a", "b")).value == 1.0


@pytest.mark.parametrize("metric", [DocumentRecall(), DocumentPrecision()])
def test_missing_inputs_give_no_score_never_zero(metric: DocumentRecall) -> None:
    no_expected = metric.score_invocation(_turn("a"), None, EvalCase(id="q"))
    assert (no_expected.value, no_expected.explanation) == (None, NO_EXPECTED)
    uri_less_expected = metric.score_invocation(_turn("a"), None, _case(None))
    assert uri_less_expected.value is None
    no_step = metric.score_invocation(Turn(final_response="hi"), None, _case("a"))
    assert (no_step.value, no_step.explanation) == (None, NO_RETRIEVAL)
    uri_less = metric.score_invocation(_turn(None, None), None, _case("a"))
    assert (uri_less.value, uri_less.explanation) == (None, NO_RETRIEVED_URI)


def test_empty_retrieval_is_zero_recall_and_undefined_precision() -> None:
    empty = _turn()
    assert DocumentRecall().score_invocation(empty, None, _case("a")).value == 0.0
    precision = DocumentPrecision().score_invocation(empty, None, _case("a"))
    assert precision.value is None
    assert precision.explanation is not None and "undefined" in precision.explanation


def test_expected_documents_fall_back_to_the_reference_turn() -> None:
    reference = _turn("a", "b")
    score = DocumentRecall().score_invocation(_turn("b"), reference, EvalCase(id="g"))
    assert score.value == 0.5


def test_case_score_is_the_mean_over_invocations() -> None:
    metric = build_metric("document_recall")
    case = _case("a", "b")
    result = metric.score_case(case, [_turn("a", "b"), _turn("x")], [None, None])
    assert result.score == 0.5
    assert [s.value for s in result.per_invocation] == [1.0, 0.0]


def test_document_recall_emits_databricks_and_vertex_names() -> None:
    metric = DocumentRecall()
    row = metric.row_columns(metric.score_invocation(_turn("a"), None, _case("a", "b")))
    assert row["retrieval/ground_truth/document_recall"] == 0.5
    assert row["document_recall/score"] == 0.5
    summary = metric.summary_columns([0.5, 1.0])
    assert summary["retrieval/ground_truth/document_recall/average"] == 0.75
    assert summary["document_recall/mean"] == 0.75
    assert summary["document_recall/std"] == pytest.approx(0.3535533905932738)
    unscored = metric.row_columns(metric.score_invocation(_turn("a"), None, EvalCase(id="q")))
    assert unscored["retrieval/ground_truth/document_recall"] is None
