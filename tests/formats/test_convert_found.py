"""Round-trip defects the property tests found, pinned as plain examples so they stay
fixed whatever the generator draws (each failed before its fix)."""

from __future__ import annotations

import json
from pathlib import Path

from google.cloud import ces_v1beta

from assay.core.cases import (
    AgentMessage,
    EvalCase,
    EvalSet,
    Scenario,
    SessionInput,
    Step,
    Turn,
    UserInput,
)
from assay.formats import detect_format, format_module, load
from assay.formats._common import read_structured
from assay.formats.convert import difference, fit

SUFFIX = {"adk": ".evalset.json", "ces": ".json", "vertex": ".json", "mlflow": ".jsonl"}


def _through(evalset: EvalSet, fmt: str, folder: Path) -> EvalSet:
    """Fit, write as `fmt`, check detection and read back (equal to the fitted set)."""
    fitted = fit(evalset, fmt)[0]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{fmt}{SUFFIX[fmt]}"
    format_module(fmt).write(fitted, path)
    assert detect_format(read_structured(path), path) == fmt
    back = load(path, fmt)
    assert difference(fitted, back) is None
    return back


def _turn(text: str, steps: list[Step] | None = None, answer: str | None = None) -> Turn:
    return Turn(user_input=UserInput(text=text), steps=steps or [], final_response=answer)


def test_mlflow_history_turn_without_an_answer_is_a_named_loss(tmp_path: Path) -> None:
    # An earlier turn of agent messages and no final response: a chat history reads its
    # last assistant message back as the answer. That is reported, not a silent change.
    said = Step(agent_message=AgentMessage(text="one moment"))
    case = EvalCase(id="c", reference=[_turn("hi", [said]), _turn("and?")])
    fitted, losses = fit(EvalSet(id="s", cases=[case]), "mlflow")
    assert [(x.case_id, x.field) for x in losses] == [
        ("c", "reference[].steps[].agent_message (read back as the answer)")
    ]
    first = fitted.cases[0].reference[0]  # type: ignore[index]
    assert (first.steps, first.final_response) == ([], "one moment")
    back = _through(fitted, "mlflow", tmp_path)
    assert back.cases == fitted.cases


def test_vertex_answer_survives_mlflow_and_back(tmp_path: Path) -> None:
    # Vertex keeps a golden's answer in `reference`, MLflow in `expected_response`: the
    # answer must come back to the Vertex `reference` column, not a new column.
    case = EvalCase(id="c", reference=[_turn("2+2?", answer="4")])
    source = _through(EvalSet(id="s", cases=[case]), "vertex", tmp_path / "a")
    in_mlflow = _through(source, "mlflow", tmp_path / "b")
    assert in_mlflow.cases[0].expected_response == "4"
    again, losses = fit(in_mlflow, "vertex")
    assert losses == []
    back = _through(again, "vertex", tmp_path / "c")
    assert back.cases == source.cases
    rows = json.loads((tmp_path / "c" / "vertex.json").read_text(encoding="utf-8"))
    assert rows == [{"id": "c", "prompt": "2+2?", "reference": "4"}]


def test_ces_scenario_without_a_task_is_refused_not_written_undetectable(
    tmp_path: Path,
) -> None:
    # `task` is required in a CES scenario; an empty `scenario: {}` was written and could
    # not be read back ("cannot tell the format of this data").
    cases = [
        EvalCase(id="bare", scenario=Scenario()),
        EvalCase(id="planned", scenario=Scenario(task="book a table", max_turns=3)),
    ]
    fitted, losses = fit(EvalSet(id="s", cases=cases), "ces")
    assert [(x.case_id, x.field) for x in losses] == [
        ("bare", "the case (its scenario has no task, which CES requires)")
    ]
    assert [c.id for c in fitted.cases] == ["planned"]
    back = _through(fitted, "ces", tmp_path)
    data = json.loads((tmp_path / "ces.json").read_text(encoding="utf-8"))
    ces_v1beta.Evaluation.from_json(json.dumps(data), ignore_unknown_fields=False)
    assert back.cases == fitted.cases


def test_golden_answer_comes_back_from_mlflow_as_the_final_response(tmp_path: Path) -> None:
    # MLflow holds a golden's answer as `expected_response`; ADK's evaluator and CES
    # goldens read it as the last turn's final response, and that is where it returns.
    case = EvalCase(id="c", reference=[_turn("hi", answer="hello"), _turn("2+2?", answer="4")])
    for fmt in ("adk", "ces"):
        source = _through(EvalSet(id="s", cases=[case]), fmt, tmp_path / fmt)
        in_mlflow = _through(source, "mlflow", tmp_path / f"{fmt}-mlflow")
        assert in_mlflow.cases[0].expected_response == "4"
        again, losses = fit(in_mlflow, fmt)
        assert losses == []
        back = _through(again, fmt, tmp_path / f"{fmt}-back")
        assert back.cases == source.cases


def test_an_empty_session_input_is_no_session_input_in_rows(tmp_path: Path) -> None:
    # ADK and CES read an empty session input back as none; rows must say the same
    # (and MLflow must not refuse a case over a session input that says nothing).
    case = EvalCase(id="c", session_input=SessionInput(), reference=[_turn("hi")])
    for fmt in ("vertex", "mlflow"):
        fitted, losses = fit(EvalSet(id="s", cases=[case]), fmt)
        assert losses == [] and fitted.cases[0].session_input is None
        source = _through(fitted, fmt, tmp_path / fmt)
        in_adk = _through(source, "adk", tmp_path / f"{fmt}-adk")
        back = _through(fit(in_adk, fmt)[0], fmt, tmp_path / f"{fmt}-back")
        assert back.cases == source.cases
