"""precision_at_k / recall_at_k / ndcg_at_k: MLflow's retriever metrics, checked side by
side with `mlflow.metrics` on the same rows (edge cases and generated lists), and an
MLflow retriever CSV scored by `assay eval` and by `mlflow.evaluate` with the same
numbers."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay import formats
from assay.cli import app
from assay.core.cases import Chunk, EvalCase, Retrieval, Step, Turn
from assay.errors import ConfigError
from assay.metrics.registry import build_metric
from assay.metrics.retrieval_at_k import NO_GROUND_TRUTH, NO_RETRIEVAL

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"
TUTORIAL = DATA / "mlflow_retriever_tutorial.csv"
METRICS = ("precision_at_k", "recall_at_k", "ndcg_at_k")


def _mlflow_scores(name: str, k: int, retrieved: list[list[str]], truth: list[list[str]]) -> Any:
    import mlflow.metrics
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated since MLflow 3.4, still its numbers
        metric = getattr(mlflow.metrics, name)(k)
        value = metric.eval_fn(pd.Series(retrieved), pd.Series(truth))
    return value.scores


def _assay_score(name: str, k: int, retrieved: list[str] | None, truth: list[str] | None) -> Any:
    metric = build_metric(name, {"k": k})
    steps = [] if retrieved is None else [Step(retrieval=Retrieval(chunks=[]))]
    if retrieved:
        steps = [Step(retrieval=Retrieval(chunks=[Chunk(doc_uri=d) for d in retrieved]))]
    expected = None if truth is None else [Chunk(doc_uri=d) for d in truth]
    case = EvalCase(id="q", expected_retrieved_context=expected)
    return metric.score_invocation(Turn(steps=steps), None, case)


EDGES = [
    (["a", "b", "c"], ["a"]),  # one relevant at the top
    (["x", "a"], ["a", "b"]),  # relevant second
    (["a", "a", "a", "b"], ["a", "b"]),  # duplicates of a relevant doc
    (["x", "x", "y"], ["a"]),  # duplicates, none relevant
    (["a"], ["a", "b", "c", "d"]),  # k larger than the list
    ([], ["a"]),  # nothing retrieved
    (["a", "b"], []),  # no ground truth
    ([], []),  # neither
    (["b", "a", "c", "d", "e", "f"], ["f", "a"]),  # a relevant doc past k
]


@pytest.mark.parametrize("k", [1, 2, 3, 10])
@pytest.mark.parametrize("name", METRICS)
def test_edge_cases_score_as_mlflow(name: str, k: int) -> None:
    retrieved = [r for r, _ in EDGES]
    truth = [t for _, t in EDGES]
    want = _mlflow_scores(name, k, retrieved, truth)
    got = [_assay_score(name, k, r, t).value for r, t in EDGES]
    assert got == pytest.approx(want, abs=1e-9)


_IDS = st.sampled_from(list("abcdefg"))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(_IDS, max_size=8), st.lists(_IDS, max_size=5)), min_size=1, max_size=6
    ),
    k=st.integers(1, 9),
)
def test_generated_lists_score_as_mlflow(rows: list[tuple[list[str], list[str]]], k: int) -> None:
    for name in METRICS:
        want = _mlflow_scores(name, k, [r for r, _ in rows], [t for _, t in rows])
        got = [_assay_score(name, k, r, t).value for r, t in rows]
        assert got == pytest.approx(want, abs=1e-9), name


def test_missing_inputs_give_no_score_and_say_why() -> None:
    assert _assay_score("precision_at_k", 3, ["a"], None).explanation == NO_GROUND_TRUTH
    assert _assay_score("recall_at_k", 3, None, ["a"]).explanation == NO_RETRIEVAL
    case = EvalCase(id="q", expected_retrieved_context=[Chunk(doc_uri="a")])
    turn = Turn(steps=[Step(retrieval=Retrieval(chunks=[Chunk(content="no id")]))])
    score = build_metric("ndcg_at_k").score_invocation(turn, None, case)
    assert score.value is None and "retrieved chunk 0 has no doc_uri" in (score.explanation or "")


@pytest.mark.parametrize("k", [0, -1, "x", 1.5, True, "3"])
def test_k_must_be_a_positive_integer(k: Any) -> None:
    with pytest.raises(ConfigError, match="k"):
        build_metric("precision_at_k", {"k": k})


def test_the_tutorial_csv_is_recognised_by_its_columns() -> None:
    evalset = formats.load(TUTORIAL)
    first = evalset.cases[0]
    assert [c.doc_uri for c in first.expected_retrieved_context or []] == [
        "https://mlflow.org/docs/latest/tracking.html"
    ]
    assert first.actual is not None
    assert len(first.actual[0].retrieved_chunks()) == 3
    assert evalset.cases[4].expected_retrieved_context == []
    nothing = evalset.cases[3].actual
    assert nothing is not None and nothing[0].retrieved_chunks() == []
    # --from mlflow reads it the same way, and --map still names the columns.
    assert formats.load(TUTORIAL, "mlflow").cases == evalset.cases
    mapped = formats.load(
        TUTORIAL,
        "mlflow",
        {
            "question": "request",
            "source": "expected_retrieved_context",
            "retrieved_doc_ids": "retrieved_context",
        },
    )
    assert [c.expected_retrieved_context for c in mapped.cases] == [
        c.expected_retrieved_context for c in evalset.cases
    ]


def test_two_columns_for_one_field_are_ambiguous(tmp_path: Path) -> None:
    from assay.errors import InputError

    path = tmp_path / "amb.csv"
    path.write_text("question,predictions,retrieved_doc_ids\nq,\"['a']\",\"['b']\"\n")
    with pytest.raises(InputError, match="ambiguous header") as info:
        formats.load(path)
    assert "--map predictions=retrieved_context" in str(info.value)
    assert "--map retrieved_doc_ids=retrieved_context" in str(info.value)


def test_a_hostile_literal_cell_is_refused_not_run(tmp_path: Path) -> None:
    path = tmp_path / "evil.csv"
    path.write_text("question,source,retrieved_doc_ids\nq,\"[__import__('os')]\",\"['a']\"\n")
    result = CliRunner().invoke(app, ["eval", str(path), "--metric", "recall_at_k", "--no-store"])
    assert result.exit_code == 2, result.output
    assert "$[0].source" in result.output and "Traceback" not in result.output
    maps = ["question=request", "source=expected_retrieved_context"]
    maps.append("retrieved_doc_ids=retrieved_context")
    args = ["eval", str(path), "--metric", "recall_at_k", "--no-store", "--from", "mlflow"]
    mapped = CliRunner().invoke(app, [*args, *(f"--map={m}" for m in maps)])
    assert mapped.exit_code == 2, mapped.output
    assert "$[0].source" in mapped.output and "Traceback" not in mapped.output


def test_tutorial_csv_scores_as_mlflow_evaluate(tmp_path: Path) -> None:
    import ast

    import mlflow
    import pandas as pd

    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": {m: {"k": 2} for m in METRICS}}))
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        ["eval", str(TUTORIAL), "--config", str(config), "--no-store", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())

    frame = pd.read_csv(TUTORIAL)
    for column in ("source", "retrieved_doc_ids"):
        frame[column] = frame[column].apply(ast.literal_eval)
    # A store of its own, and an experiment in it: other tests may have left another
    # tracking URI or an active experiment id in MLflow's process-wide state.
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        # Artifacts in the test's folder (by default ./mlruns, in the repository).
        artifacts = (tmp_path / "artifacts").as_uri()
        experiment = mlflow.create_experiment("retriever-parity", artifact_location=artifacts)
        with warnings.catch_warnings(), mlflow.start_run(experiment_id=experiment):
            warnings.simplefilter("ignore")
            evaluated = mlflow.evaluate(
                data=frame,
                model_type="retriever",
                targets="source",
                predictions="retrieved_doc_ids",
                evaluators="default",
                evaluator_config={"retriever_k": 2},
            )
    finally:
        mlflow.set_tracking_uri(previous)
    # mlflow.evaluate's summary, and per row the same metrics of mlflow.metrics on the
    # same frame (its result table is not kept by every MLflow setup a suite leaves).
    retrieved, truth = list(frame["retrieved_doc_ids"]), list(frame["source"])
    for metric in METRICS:
        name = metric.replace("_k", "_2")
        rows = [r[f"{name}/score"] for r in report["rows"]]
        assert rows == pytest.approx(_mlflow_scores(metric, 2, retrieved, truth), abs=1e-9)
        for agg in ("mean", "variance", "p90"):
            key = f"{name}/{agg}"
            assert report["summary"][key] == pytest.approx(evaluated.metrics[key], abs=1e-9)


def test_assay_metrics_lists_them() -> None:
    result = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    for name in METRICS:
        assert name in result.output
