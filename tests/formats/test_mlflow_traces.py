"""MLflow traces as input rows: traces recorded by MLflow's own tracing SDK (a real SQLite
tracking store), read back with `mlflow.search_traces()` and as exported files, become
conversations with their trajectories, and score like any recorded rows."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import assay
from assay import formats
from assay.api_inputs import load_dataset
from assay.cli import app
from assay.errors import AssayWarning, InputError
from assay.formats._common import read_structured
from assay.formats.otel import TraceSkipped

mlflow = pytest.importorskip("mlflow")


def _record(uri: str) -> list[str]:
    """Trace a small agent (model call, retrieval, tool) with MLflow; the trace ids."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("traces")

    @mlflow.trace(span_type="TOOL")
    def get_weather(city: str) -> dict[str, Any]:
        return {"temp": 21, "city": city}

    @mlflow.trace(span_type="RETRIEVER")
    def retrieve(query: str) -> list[dict[str, Any]]:
        return [{"page_content": "Paris is in France.", "metadata": {"doc_uri": "wiki/paris"}}]

    @mlflow.trace(span_type="CHAT_MODEL")
    def llm(messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "choices": [{"message": {"role": "assistant", "content": "calling a tool"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 4},
        }

    @mlflow.trace(span_type="AGENT")
    def agent(question: str, session: str, city: str | None) -> str:
        mlflow.update_current_trace(metadata={"mlflow.trace.session": session})
        llm([{"role": "user", "content": question}])
        if city is None:
            return "Which city?"
        retrieve(question)
        weather = get_weather(city=city)
        return f"It is {weather['temp']}C in {city}"

    ids = []
    for question, session, city in (
        ("What's the weather in Paris?", "single", "Paris"),
        ("What's the weather?", "chat", None),
        ("In Rome, please", "chat", "Rome"),
    ):
        agent(question, session, city)
        trace_id = mlflow.get_last_active_trace_id()
        assert trace_id is not None
        ids.append(trace_id)
    mlflow.log_expectation(trace_id=ids[0], name="expected_response", value="It is 21C in Paris")
    mlflow.log_expectation(trace_id=ids[0], name="expected_facts", value=["21C"])
    mlflow.log_expectation(trace_id=ids[0], name="guidelines", value=["Give the temperature"])
    return ids


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[Any]]:
    """`search_traces()` as a DataFrame and as Trace objects, from a real tracking store."""
    folder = tmp_path_factory.mktemp("mlflow")
    patch = pytest.MonkeyPatch()
    patch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    patch.chdir(folder)  # MLflow's artifact root is ./mlruns: not in the checkout
    try:
        _record(f"sqlite:///{folder / 'mlflow.db'}")
        experiment = mlflow.get_experiment_by_name("traces")
        frame = mlflow.search_traces(locations=[experiment.experiment_id])
        objects = mlflow.search_traces(locations=[experiment.experiment_id], return_type="list")
    finally:
        patch.undo()
    return frame, objects


def _by_id(evalset: Any) -> dict[str, Any]:
    return {case.id: case for case in evalset.cases}


def test_search_traces_frame_becomes_conversations(traced: tuple[Any, list[Any]]) -> None:
    frame, _ = traced
    (evalset,) = load_dataset(frame)  # detected: no format given
    cases = _by_id(evalset)
    assert set(cases) == {"single", "chat"}
    (turn,) = cases["single"].actual
    assert turn.user_input.text == "What's the weather in Paris?"
    assert turn.final_response == "It is 21C in Paris"
    kinds = [step.kind for step in turn.steps]
    assert kinds == ["retrieval", "tool_call", "tool_response"]
    assert turn.steps[0].retrieval.chunks[0].doc_uri == "wiki/paris"
    assert turn.tool_calls()[0].name == "get_weather"
    assert turn.tool_calls()[0].args == {"city": "Paris"}
    assert turn.tool_responses()[0].response == {"temp": 21, "city": "Paris"}
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (12, 4)
    assert turn.model_calls == 1
    assert cases["single"].expected_response == "It is 21C in Paris"
    assert cases["single"].expected_facts == ["21C"]
    assert cases["single"].guidelines == ["Give the temperature"]
    # One session, two traces: one case whose turns keep their order.
    chat = cases["chat"].actual
    assert [t.user_input.text for t in chat] == ["What's the weather?", "In Rome, please"]
    assert chat[0].steps == [] and chat[1].final_response == "It is 21C in Rome"


def test_trace_objects_and_frame_load_the_same(traced: tuple[Any, list[Any]]) -> None:
    frame, objects = traced
    (from_frame,) = load_dataset(frame)
    (from_objects,) = load_dataset(objects)
    assert _by_id(from_frame) == _by_id(from_objects)


def test_evaluate_scores_traces_with_their_expectations(traced: tuple[Any, list[Any]]) -> None:
    frame, _ = traced
    result = assay.evaluate(frame, metrics=["response_match_score", "tool_call_count"], store=None)
    by_case = {c.case_id: c for c in result.cases}
    assert by_case["single"].metrics["response_match_score"].score == pytest.approx(1.0)
    assert by_case["single"].metrics["tool_call_count"].score == 1
    # No expected response on the session's traces: nothing to compare, not a 0.
    assert by_case["chat"].metrics["response_match_score"].score is None


def test_exported_files_load_through_the_cli(traced: tuple[Any, list[Any]], tmp_path: Path) -> None:
    frame, objects = traced
    rows = tmp_path / "traces.jsonl"
    frame.to_json(rows, orient="records", lines=True)
    one = tmp_path / "trace.json"
    one.write_text(objects[0].to_json())
    listed = tmp_path / "traces.json"
    listed.write_text(json.dumps([json.loads(t.to_json()) for t in objects]))
    for path in (rows, one, listed):
        assert formats.detect_format(read_structured(path), path) == "mlflow-trace"
    assert _by_id(formats.load(rows)) == _by_id(formats.load(listed))
    out = tmp_path / "result.json"
    result = CliRunner().invoke(
        app,
        ["eval", str(rows), "--metric", "response_match_score", "--no-store", "--out", str(out)],
    )
    # The session has no expected response: NOT_EVALUATED, so the run is not a pass.
    assert result.exit_code == 1, result.output
    report = json.loads(out.read_text())
    statuses = {c["eval_id"]: c["status"] for c in report["cases"]}
    assert statuses == {"single": "PASSED", "chat": "NOT_EVALUATED"}
    assert len(report["cases"]) == 2
    # Every trace its own case.
    per_trace = formats.load(rows, "mlflow-trace", {"case_id": "trace_id"})
    assert len(per_trace.cases) == 3


def test_a_sessions_expected_responses_are_not_guessed(
    traced: tuple[Any, list[Any]],
) -> None:
    _, objects = traced
    docs = [json.loads(t.to_json()) for t in objects]
    for doc in docs:  # every trace gets an expectation, both chat turns included
        doc["info"]["assessments"] = [
            {"assessment_name": "expected_response", "expectation": {"value": "x"}}
        ]
    with pytest.warns(AssayWarning, match="session chat: expected_response"):
        evalset = formats.load_rows(docs, "mlflow-trace")
    cases = _by_id(evalset)
    assert cases["chat"].expected_response is None and cases["chat"].reference is None
    assert cases["single"].expected_response == "x"


def test_broken_traces_are_skipped_by_name_and_the_rest_load(
    traced: tuple[Any, list[Any]], tmp_path: Path
) -> None:
    _, objects = traced
    docs = [json.loads(t.to_json()) for t in objects]
    orphan = docs[1]
    orphan["data"]["spans"] = orphan["data"]["spans"][1:]  # the root is gone
    orphan_id = orphan["info"]["trace_id"]
    path = tmp_path / "broken.jsonl"
    lines = [json.dumps(d) for d in docs] + ['{"info": {"trace_id": "cut']  # truncated
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evalset = formats.load(path, "mlflow-trace")
    messages = [str(w.message) for w in caught if issubclass(w.category, TraceSkipped)]
    assert any(orphan_id in m and "names parent" in m for m in messages), messages
    assert any("line 4 is not JSON" in m for m in messages), messages
    assert {c.id for c in evalset.cases} == {"single", "chat"}
    assert len(_by_id(evalset)["chat"].actual) == 1  # the good trace of the session


def test_no_traces_at_all_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(InputError, match="no traces found"):
        formats.load(path, "mlflow-trace")
    with pytest.raises(InputError, match="not an MLflow trace option"):
        formats.load(path, "mlflow-trace", {"request": "x"})
