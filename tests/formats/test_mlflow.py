"""Databricks / MLflow rows (flat and MLflow 3), and the shared column mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import Chunk, EvalCase, EvalSet, Step, ToolCall, Turn, UserInput
from assay.errors import InputError
from assay.formats import load, load_rows, mlflow
from assay.formats import mapping as m

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld" / "mlflow"
EVAL_SET = REALWORLD / "eval_set.jsonl"
MAPPING = {"question": "request", "relevant_doc_id": "expected_retrieved_context"}


def _load(rows: Any, mapping: dict[str, str] | None = None) -> EvalSet:
    return mlflow.load_data(rows, file="rows.jsonl", mapping=mapping)


FLAT = {
    "request_id": "r1",
    "request": "What is MLflow?",
    "response": "A platform.",
    "expected_response": "An ML platform.",
    "expected_facts": ["open source"],
    "guidelines": ["Be brief"],
    "retrieved_context": [{"doc_uri": "doc1", "content": "MLflow is ..."}],
    "expected_retrieved_context": [{"doc_uri": "doc1"}],
}


def test_a_flat_row_is_a_recorded_case() -> None:
    case = _load([FLAT]).cases[0]
    assert case.id == "r1" and case.reference is None and case.actual is not None
    turn = case.actual[0]
    assert (turn.user_input.text, turn.final_response) == ("What is MLflow?", "A platform.")
    assert turn.retrieved_chunks() == [Chunk(doc_uri="doc1", content="MLflow is ...")]
    assert case.expected_response == "An ML platform."
    assert case.expected_facts == ["open source"] and case.guidelines == ["Be brief"]
    assert case.expected_retrieved_context == [Chunk(doc_uri="doc1")]
    assert _load(mlflow.dump(_load([FLAT]))) == _load([FLAT])


def test_a_request_without_outputs_drives_an_agent() -> None:
    case = _load([{"request": "hi", "guidelines": {"tone": ["polite"], "form": ["short"]}}]).cases[
        0
    ]
    assert case.actual is None
    assert case.reference == [Turn(user_input=UserInput(text="hi"))]
    assert case.guidelines == {"tone": ["polite"], "form": ["short"]}
    assert case.id == "row-0"


def test_chat_messages_become_turns() -> None:
    request = {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Thinking"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Bye?"},
        ]
    }
    evalset = _load([{"request": request, "response": "Bye."}])
    case = evalset.cases[0]
    assert case.metadata == {"mlflow:system": ["You are terse."]}
    first, last = case.actual  # type: ignore[misc]
    assert first.user_input.text == "Hi" and first.final_response == "Hello"
    assert [s.agent_message.text for s in first.steps] == ["Thinking"]  # type: ignore[union-attr]
    assert (last.user_input.text, last.final_response) == ("Bye?", "Bye.")
    written = mlflow.dump(evalset)[0]
    # Written as MLflow 3 rows: the conversation is the `messages` input.
    assert written["inputs"] == request and written["outputs"] == "Bye."
    assert _load([written]) == evalset


def test_chat_completion_responses_keep_text_and_usage() -> None:
    response = {
        "id": "cmpl-1",
        "choices": [{"message": {"role": "assistant", "content": "Four."}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }
    evalset = _load([{"request": "2+2?", "response": response}])
    turn = evalset.cases[0].actual[0]  # type: ignore[index]
    assert turn.final_response == "Four."
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (10, 2)
    turn.final_response = "4"
    written = mlflow.dump(evalset)[0]["outputs"]
    assert written["id"] == "cmpl-1" and written["choices"][0]["message"]["content"] == "4"


def test_mlflow3_rows_keep_their_input_names_and_custom_expectations() -> None:
    row = {
        "inputs": {"question": "Capital of France?", "locale": "en"},
        "outputs": "Paris",
        "expectations": {"expected_response": "Paris", "must_cite": True},
        "tags": {"team": "geo"},
    }
    evalset = _load([row])
    case = evalset.cases[0]
    assert case.actual is not None and case.actual[0].user_input.text == "Capital of France?"
    assert case.actual[0].final_response == "Paris"
    assert case.expected_response == "Paris" and case.tags == []
    assert case.metadata["expectations"] == {"must_cite": True}
    assert case.metadata["tags"] == {"team": "geo"}
    written = mlflow.dump(evalset)[0]
    assert written["inputs"] == row["inputs"] and written["outputs"] == "Paris"
    assert written["expectations"] == {"expected_response": "Paris", "must_cite": True}
    assert _load([written]) == evalset


def test_rows_are_written_as_mlflow3_rows_and_read_back_the_same() -> None:
    # `mlflow.genai.evaluate` takes `inputs` / `outputs` / `expectations` and tags as an
    # object of strings (tests/formats/test_convert_tools.py runs it on written files).
    flat = {**FLAT, "tags": ["smoke", "geo"]}
    evalset = _load([flat])
    written = mlflow.dump(evalset)[0]
    assert written == {
        "request_id": "r1",
        "inputs": {"request": "What is MLflow?"},
        "outputs": "A platform.",
        "expectations": {
            "expected_response": "An ML platform.",
            "expected_facts": ["open source"],
            "guidelines": ["Be brief"],
            "expected_retrieved_context": [{"doc_uri": "doc1"}],
        },
        "retrieved_context": [{"doc_uri": "doc1", "content": "MLflow is ..."}],
        "tags": {"smoke": "", "geo": ""},
    }
    # The flat row and the MLflow 3 row say the same case.
    assert _load([written]) == evalset
    repeated = _load([{**flat, "tags": ["a", "a"]}])
    fitted, losses = mlflow.fit(repeated)
    assert fitted.cases == [] and "repeat a tag" in losses[0].field


def test_csv_is_written_flat() -> None:
    evalset = _load([FLAT])
    assert "request" in mlflow.dump(evalset, flat=True)[0]


def test_mlflow3_prompt_choice() -> None:
    single = _load([{"inputs": {"text_in": "hello"}}]).cases[0]
    assert single.reference[0].user_input.text == "hello"  # type: ignore[index]
    chat = _load([{"inputs": {"messages": [{"role": "user", "content": "yo"}]}}]).cases[0]
    assert chat.reference[0].user_input.text == "yo"  # type: ignore[index]
    with pytest.raises(InputError) as info:
        _load([{"inputs": {"a": 1, "b": "x"}}])
    assert info.value.path == "$[0].inputs" and "question" in str(info.value)


def test_bad_requests_are_located() -> None:
    with pytest.raises(InputError) as info:
        _load([FLAT, {"request_id": "bad", "request": 42}])
    err = info.value
    assert (err.case_id, err.path) == ("bad", "$[1].request")
    assert "{messages: [{role, content}]}" in str(err)
    with pytest.raises(InputError, match="last message is not the user's"):
        _load(
            [
                {
                    "request": {
                        "messages": [
                            {"role": "user", "content": "a"},
                            {"role": "assistant", "content": "b"},
                        ]
                    }
                }
            ]
        )
    with pytest.raises(InputError, match="not a chat message"):
        _load([{"request": {"messages": [{"role": "tool", "content": "a"}]}}])
    with pytest.raises(InputError) as info:
        _load([{"request": "q", "expected_facts": ["a", 1]}])
    assert info.value.path == "$[0].expected_facts[1]" and "expected a string" in str(info.value)
    with pytest.raises(InputError, match="doc_uri, content"):
        _load([{"request": "q", "retrieved_context": [{"uri": "x"}]}])
    with pytest.raises(InputError, match="duplicate case id"):
        _load([{"request_id": "a", "request": "q"}, {"request_id": "a", "request": "q"}])


def test_csv_rows(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    mlflow.write(_load([FLAT, {"request": "plain", "expected_facts": ["a", "b"]}]), path)
    evalset = load(path)
    assert evalset.cases[0].actual[0].retrieved_chunks()[0].doc_uri == "doc1"  # type: ignore[index]
    assert evalset.cases[1].expected_facts == ["a", "b"]
    assert evalset.cases == _load([FLAT, {"request": "plain", "expected_facts": ["a", "b"]}]).cases


def test_in_memory_rows() -> None:
    evalset = load_rows([{"request": "q", "response": "a"}], fmt="mlflow", name="mine")
    assert evalset.id == "mine" and evalset.cases[0].actual[0].final_response == "a"  # type: ignore[index]


def test_detection() -> None:
    assert mlflow.detect(None, [FLAT])
    assert mlflow.detect(None, [{"inputs": {"q": "x"}, "expectations": {}}])
    assert mlflow.detect(None, [{"id": "q", "question": "x", "expected_facts": []}])
    assert not mlflow.detect(None, [{"prompt": "p", "response": "r"}])
    assert not mlflow.detect(None, [{"prompt": "p", "expected_response": "r"}])
    assert not mlflow.detect(None, {"request": "r"})


def test_cases_with_tool_calls_cannot_be_rows() -> None:
    case = EvalCase(
        id="tools",
        actual=[Turn(user_input=UserInput(text="q"), steps=[Step(tool_call=ToolCall(name="t"))])],
    )
    with pytest.raises(InputError) as info:
        mlflow.dump(EvalSet(id="s", cases=[case]))
    assert info.value.case_id == "tools" and "retrieval" in str(info.value)


# ----------------------------------------------------------------------------- real file


def test_real_file_needs_a_mapping_and_says_which() -> None:
    with pytest.raises(InputError) as info:
        load(EVAL_SET)
    message = str(info.value)
    assert "'request'" in message and "--map question=request" in message
    assert "eval_set.jsonl" in message and info.value.case_id == "q01"


def test_real_file_with_a_mapping(tmp_path: Path) -> None:
    evalset = load(EVAL_SET, mapping=MAPPING)
    assert len(evalset.cases) == 15
    first = evalset.cases[0]
    assert first.id == "q01" and first.expected_facts == ["3 percent"]
    assert first.expected_retrieved_context == [Chunk(doc_uri="boiler-scheduling")]
    assert first.reference is not None and first.reference[0].user_input.text.startswith(
        "How much did natural gas"
    )
    assert evalset.cases[-1].expected_facts == []
    out = tmp_path / "eval_set.jsonl"
    mlflow.write(evalset, out)
    assert load(out) == evalset


# ----------------------------------------------------------------------------- mapping


def test_map_options_parse() -> None:
    assert m.parse_map_options(["question=request", " a = b "]) == {"question": "request", "a": "b"}
    with pytest.raises(InputError, match="SRC=DST"):
        m.parse_map_options(["question"])


def test_mapping_coerces_plain_values_of_mapped_columns() -> None:
    rows = [{"q": "x", "docs": ["a", "b"], "fact": "one", "ctx": "c"}]
    mapping = {
        "q": "request",
        "docs": "expected_retrieved_context",
        "fact": "expected_facts",
        "ctx": "retrieved_context",
    }
    case = _load(rows, mapping).cases[0]
    assert case.expected_retrieved_context == [Chunk(doc_uri="a"), Chunk(doc_uri="b")]
    assert case.expected_facts == ["one"]
    assert case.actual[0].retrieved_chunks() == [Chunk(doc_uri="c")]  # type: ignore[index]
    with pytest.raises(InputError, match="list of"):
        _load([{"request": "q", "expected_retrieved_context": "unmapped"}])


def test_mapping_errors() -> None:
    rows = [{"q": "x", "r": "y"}]
    with pytest.raises(InputError) as info:
        _load(rows, {"question": "request"})
    assert "one of the columns: q, r" in str(info.value)
    with pytest.raises(InputError, match="both mapped to 'request'"):
        _load(rows, {"q": "request", "r": "request"})
