"""Row output in the libraries it is for: the written file, read with pandas, handed to
Vertex AI's `EvalTask` and to `mlflow.genai.evaluate` (offline).

Vertex: the SDK validates the dataset's columns and builds one `evaluateInstances`
request per row and metric from them; the service call itself is answered in process
(no network), and the requests must carry exactly the rows' references, responses and
trajectories. MLflow: `mlflow.genai.evaluate` converts the DataFrame (it needs an
`inputs` column, `tags` objects, ...) and runs a scorer on every row, against a SQLite
tracking store in the test's folder; the scorer must see every row's inputs, outputs
and expectations.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from convert_strategies import evalsets
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay.core.cases import EvalSet
from assay.formats import detect_format, format_module, load, load_rows
from assay.formats._common import read_structured
from assay.formats.convert import fit

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
MLFLOW_MAP = {"question": "request", "relevant_doc_id": "expected_retrieved_context"}
SKIP = ("config.json", "initial.session.json", "SOURCES.md", "turn_eval_example.yaml")
FILES = sorted(p for p in REALWORLD.rglob("*") if p.is_file() and not p.name.endswith(SKIP))
FEW = settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        # the request recorder is cleared before each run
        HealthCheck.function_scoped_fixture,
    ],
)


MANY = settings(FEW, max_examples=20)


def _real_sets() -> list[EvalSet]:
    sets = []
    for path in FILES:
        fmt = detect_format(read_structured(path), path)
        sets.append(load(path, mapping=MLFLOW_MAP if fmt == "mlflow" else None))
    return sets


# Recorded rows (answers and trajectories of a run), which the real files lack.
RECORDED_VERTEX = [
    {
        "id": "paris",
        "prompt": "Weather in Paris?",
        "response": "Sunny, 21 °C",
        "reference": "It is sunny",
        "predicted_trajectory": [
            {"tool_name": "get_weather", "tool_input": {"city": "Paris", "units": ["C"]}}
        ],
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
    },
    {
        "id": "book",
        "prompt": "Book a table",
        "response": "Booked",
        "reference": "Your table is booked",
        "predicted_trajectory": [],
        "reference_trajectory": [{"tool_name": "book", "tool_input": {"people": 2}}],
    },
]
RECORDED_MLFLOW = [
    {
        "request_id": "mlflow",
        "request": {
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "What is MLflow?"},
            ]
        },
        "response": "A platform.",
        "expected_response": "An ML platform.",
        "retrieved_context": [{"doc_uri": "doc1", "content": "MLflow is ..."}],
        "tags": ["smoke"],
    }
]


def _rows(sets: list[EvalSet], fmt: str, folder: Path) -> list[dict[str, Any]]:
    """Each set as `fmt` holds it, written as JSONL and read back with pandas as one
    DataFrame's records (what a user hands the library)."""
    frames = []
    for i, evalset in enumerate(sets):
        fitted = fit(evalset, fmt)[0]
        if not fitted.cases:
            continue
        # Rows only (a JSONL file has no place for the set's name and description).
        fitted = fitted.model_copy(update={"name": None, "description": None, "metadata": {}})
        path = folder / f"{i}.jsonl"
        format_module(fmt).write(fitted, path)
        frames.append(pd.read_json(path, lines=True, dtype=False))
    assert frames
    frame = pd.concat(frames, ignore_index=True)
    # pandas fills a column a row lacks with NaN; the libraries take the frame as is.
    return [{k: v for k, v in r.items() if not _missing(v)} for r in frame.to_dict("records")]


def _missing(value: Any) -> bool:
    return isinstance(value, float) and value != value


# ----------------------------------------------------------------------------- Vertex


@pytest.fixture
def vertex_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every `evaluateInstances` request the Vertex SDK sends, answered in process."""
    import vertexai
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1beta1.services.evaluation_service import (
        EvaluationServiceClient,
    )
    from google.cloud.aiplatform_v1beta1.types import evaluation_service as v

    seen: list[Any] = []
    lock = threading.Lock()

    def answer(self: Any, request: Any = None, **_: Any) -> Any:
        with lock:
            seen.append(request)
        if "trajectory_exact_match_input" in request:
            value = v.TrajectoryExactMatchMetricValue(score=1.0)
            return v.EvaluateInstancesResponse(
                trajectory_exact_match_results=v.TrajectoryExactMatchResults(
                    trajectory_exact_match_metric_values=[value]
                )
            )
        value = v.ExactMatchMetricValue(score=1.0)
        return v.EvaluateInstancesResponse(
            exact_match_results=v.ExactMatchResults(exact_match_metric_values=[value])
        )

    monkeypatch.setattr(EvaluationServiceClient, "evaluate_instances", answer)
    vertexai.init(project="assay", location="us-central1", credentials=AnonymousCredentials())
    yield seen


def _calls(trajectory: Any) -> list[tuple[str, Any]]:
    """A trajectory column (a list) or the SDK's Trajectory message, as (name, args)."""
    if isinstance(trajectory, list):
        return [(c["tool_name"], c["tool_input"]) for c in trajectory]
    return [(c.tool_name, json.loads(c.tool_input)) for c in trajectory.tool_calls]


def _vertex_checks(rows: list[dict[str, Any]], seen: list[Any]) -> None:
    from vertexai.preview.evaluation import EvalTask

    def run(subset: list[dict[str, Any]], metric: str) -> list[Any]:
        seen.clear()
        frame = pd.DataFrame(subset)
        recorded = all("response" in r for r in subset)
        task = EvalTask(dataset=frame, metrics=[metric])
        if recorded:
            result = task.evaluate()
        else:
            # Goldens: the SDK runs the agent; a stand-in answers every prompt.
            result = task.evaluate(runnable=lambda prompt: {"response": "stand-in"})
        assert result.summary_metrics["row_count"] == len(subset)
        assert result.summary_metrics[f"{metric}/mean"] == 1.0
        return list(seen)

    with_reference = [r for r in rows if "reference" in r]
    if with_reference:
        for group in _by_recorded(with_reference):
            sent = run(group, "exact_match")
            got = sorted(
                (
                    r.exact_match_input.instances[0].reference,
                    r.exact_match_input.instances[0].prediction,
                )
                for r in sent
            )
            want = sorted((r["reference"], r.get("response", "stand-in")) for r in group)
            assert got == want
    with_trajectory = [r for r in rows if "reference_trajectory" in r]
    if with_trajectory:
        for group in _by_recorded(with_trajectory):
            sent = run(group, "trajectory_exact_match")
            instances = [r.trajectory_exact_match_input.instances[0] for r in sent]
            got = sorted(
                json.dumps([_calls(i.reference_trajectory), _calls(i.predicted_trajectory)])
                for i in instances
            )
            want = sorted(
                json.dumps(
                    [_calls(r["reference_trajectory"]), _calls(r.get("predicted_trajectory", []))]
                )
                for r in group
            )
            assert got == want


def _by_recorded(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups = [[r for r in rows if "response" in r], [r for r in rows if "response" not in r]]
    return [g for g in groups if g]


def test_real_files_as_vertex_rows_go_through_eval_task(
    tmp_path: Path, vertex_requests: list[Any]
) -> None:
    recorded = load_rows(RECORDED_VERTEX, "vertex", name="recorded")
    rows = _rows([*_real_sets(), recorded], "vertex", tmp_path)
    assert sum("response" in r for r in rows) == 2
    _vertex_checks(rows, vertex_requests)


@FEW
@given(sets=st.lists(evalsets(), min_size=2, max_size=4))
def test_generated_sets_as_vertex_rows_go_through_eval_task(
    sets: list[EvalSet], tmp_path_factory: pytest.TempPathFactory, vertex_requests: list[Any]
) -> None:
    usable = [s for s in sets if fit(s, "vertex")[0].cases]
    assume(usable)
    _vertex_checks(_rows(usable, "vertex", tmp_path_factory.mktemp("vertex")), vertex_requests)


# ----------------------------------------------------------------------------- MLflow


def _mlflow_checks(rows: list[dict[str, Any]], store: Path) -> None:
    import mlflow
    from mlflow.genai.scorers import scorer

    seen: list[str] = []
    lock = threading.Lock()

    @scorer
    def sees(inputs: Any, outputs: Any, expectations: Any) -> bool:
        with lock:
            seen.append(_key(inputs, outputs, expectations))
        return True

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download attempt
        mlflow.set_tracking_uri(f"sqlite:///{store / 'mlflow.db'}")
        # Artifacts in the test's folder too (by default ./mlruns, in the repository).
        artifacts = (store / "artifacts").as_uri()
        mlflow.set_experiment(
            experiment_id=mlflow.create_experiment("assay-convert", artifact_location=artifacts)
        )
        # Tracing each row costs tens of seconds on a busy machine and is not what is
        # checked here: how the rows' columns reach a scorer.
        mlflow.tracing.disable()
        try:
            mlflow.genai.evaluate(data=pd.DataFrame(rows), scorers=[sees])
        finally:
            mlflow.tracing.enable()
    want = [_key(r["inputs"], r.get("outputs"), r.get("expectations") or {}) for r in rows]
    assert sorted(seen) == sorted(want)


def _key(inputs: Any, outputs: Any, expectations: Any) -> str:
    # A column only some rows have reaches the others' scorers as NaN: no value.
    outputs = None if _missing(outputs) else outputs
    expectations = {} if expectations is None or _missing(expectations) else expectations
    return json.dumps([inputs, outputs, expectations], sort_keys=True, ensure_ascii=False)


def test_real_files_as_mlflow_rows_go_through_genai_evaluate(tmp_path: Path) -> None:
    recorded = load_rows(RECORDED_MLFLOW, "mlflow", name="recorded")
    rows = _rows([*_real_sets(), recorded], "mlflow", tmp_path)
    assert all("inputs" in r and "request" not in r for r in rows)
    assert sum("outputs" in r for r in rows) == 1
    _mlflow_checks(rows, tmp_path)


@MANY
@given(sets=st.lists(evalsets(), min_size=1, max_size=4))
def test_generated_sets_as_mlflow_rows_pass_mlflows_dataset_conversion(
    sets: list[EvalSet], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`mlflow.genai.evaluate`'s own dataset conversion and tag check, on every row
    (one full evaluate run is the real-file test above: it takes seconds, not ms)."""
    from mlflow.genai.evaluation.utils import _convert_to_eval_set, validate_tags

    usable = [s for s in sets if fit(s, "mlflow")[0].cases]
    assume(usable)
    rows = _rows(usable, "mlflow", tmp_path_factory.mktemp("mlflow"))
    frame = _convert_to_eval_set(pd.DataFrame(rows))
    assert len(frame) == len(rows)
    for row, converted in zip(rows, frame.to_dict("records"), strict=True):
        validate_tags(converted.get("tags"))
        assert converted["inputs"] == row["inputs"]
        assert _key(row["inputs"], row.get("outputs"), row.get("expectations") or {}) == _key(
            converted["inputs"], converted.get("outputs"), converted.get("expectations")
        )
