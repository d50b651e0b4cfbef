"""Issue #33 (conversions): the real ADK eval sets in tests/data/realworld go to CES and to
Vertex rows (every extension) and back in all three modes (default, --sidecar, --lossy)
through the `assay convert` command, and google-adk reads back the same cases, turns,
tool calls and responses. Multi-turn cases are Vertex rows with the `history` the Gen AI
evaluation SDK reads (checked with the SDK's own types and dataset converter)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import InputError
from assay.formats import load
from assay.formats._vertex_history import parse_history

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
ADK_SETS = sorted(
    p.relative_to(REALWORLD).as_posix()
    for p in (REALWORLD / "adk").rglob("*.json")
    if "config" not in p.name and "initial.session" not in p.name
)
# Sets whose every case is a conversation scenario: no Vertex row can be one.
SCENARIOS_ONLY = {
    "adk/conversation_scenario/conversation_scenario.test.json",
    "adk/samples_user_simulation/conversation_scenarios.json",
}
TARGETS = [("ces", ".json"), ("ces", ".yaml"), ("vertex", ".json"), ("vertex", ".jsonl")]
TARGETS += [("vertex", ".csv")]
MODES = ("default", "--sidecar", "--lossy")
runner = CliRunner()

Exchange = tuple[str | None, list[tuple[str, Any]], str | None]


_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _WORDS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORDS, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _turns(draw: st.DrawFn) -> Any:
    """A turn a `history` holds: user text, tool calls and object replies, an answer."""
    from assay.core.cases import Step, ToolCall, ToolResponse, Turn, UserInput

    steps = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["find", "book", "cancel"]))
        if draw(st.booleans()):
            args = draw(st.dictionaries(_WORDS, _JSON, max_size=3))
            steps.append(Step(tool_call=ToolCall(name=name, args=args)))
        else:
            reply = draw(st.dictionaries(_WORDS, _JSON, max_size=3))
            steps.append(Step(tool_response=ToolResponse(name=name, response=reply)))
    return Turn(
        user_input=UserInput(text=draw(_WORDS)),
        steps=steps,
        final_response=draw(st.none() | _WORDS),
    )


def _copy(rel: str, tmp_path: Path) -> Path:
    src = REALWORLD / rel
    dst = tmp_path / "in" / src.name
    dst.parent.mkdir()
    shutil.copy(src, dst)
    if src.name == "trip_inquiry.test.json":  # its initial session is read beside it
        shutil.copy(src.parent / "initial.session.json", dst.parent / "initial.session.json")
    return dst


def _convert(src: Path, out: Path, to: str, *flags: str) -> Any:
    return runner.invoke(app, ["convert", str(src), str(out), "--to", to, *flags])


def _adk_view(path: Path) -> dict[str, list[Exchange]]:
    """What google-adk reads of an eval set: per case, each invocation's user text,
    expected tool calls and final response."""
    adk_set = AdkEvalSet.model_validate_json(path.read_text(encoding="utf-8"))
    out: dict[str, list[Exchange]] = {}
    for case in adk_set.eval_cases:
        turns: list[Exchange] = []
        for inv in case.conversation or []:
            user = "".join(p.text or "" for p in inv.user_content.parts or []) or None
            data = inv.intermediate_data
            uses = getattr(data, "tool_uses", None) or []
            final = inv.final_response
            answer = "".join(p.text or "" for p in (final.parts or [])) if final else None
            turns.append((user, [(u.name, u.args) for u in uses], answer or None))
        out[case.eval_id] = turns
    return out


def _reference_view(src: Path, tmp_path: Path) -> dict[str, list[Exchange]]:
    """google-adk's reading of the source: the file itself when it is an ADK eval set,
    else (a legacy test file, a stand-alone scenarios file) assay's ADK rendering of it."""
    try:
        return _adk_view(src)
    except ValueError:
        out = tmp_path / "ref" / "ref.evalset.json"
        out.parent.mkdir()
        assert _convert(src, out, "adk", "--lossy").exit_code == 0
        return _adk_view(out)


def test_every_real_adk_set_is_here() -> None:
    assert len(ADK_SETS) == 11


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("to", "ext"), TARGETS)
@pytest.mark.parametrize("rel", ADK_SETS)
def test_real_adk_set_converts_and_comes_back(
    rel: str, to: str, ext: str, mode: str, tmp_path: Path
) -> None:
    src = _copy(rel, tmp_path)
    out = tmp_path / f"out{ext}"
    flags = () if mode == "default" else (mode,)
    done = _convert(src, out, to, *flags)
    if to == "vertex" and rel in SCENARIOS_ONLY:
        # Refused in every mode, naming each case and why.
        assert done.exit_code == 2, done.output
        assert "it is a scenario" in done.output and not out.exists()
        assert "`starting_prompt` and `conversation_plan`" in done.output
        return
    if mode == "default" and done.exit_code == 2:
        # Refused because the target cannot hold a field: named, and nothing written.
        assert "cannot hold these fields" in done.output, done.output
        assert "pass --sidecar" in done.output and not out.exists()
        return
    assert done.exit_code == 0, done.output
    back = tmp_path / "back" / "back.evalset.json"
    back.parent.mkdir()
    # The way back loses nothing more with the sidecar; without it, --lossy drops what
    # ADK has no place for (a CES golden's rows-only detail, say).
    again = _convert(out, back, "adk", *(() if mode == "--sidecar" else ("--lossy",)))
    if again.exit_code == 2 and "needs a starting_prompt" in again.output:
        # A scenario whose starting prompt CES has no place for, converted --lossy.
        assert mode == "--lossy" and to == "ces"
        return
    assert again.exit_code == 0, again.output
    got = _adk_view(back)
    want = _reference_view(src, tmp_path)
    if mode == "--lossy":
        # Cases the target could not hold at all are left out; every other one is equal.
        assert set(got) <= set(want) and got
        want = {k: v for k, v in want.items() if k in got}
    assert got == want
    if mode == "--sidecar":
        source = load(src)
        assert load(back).cases == source.cases


@pytest.mark.parametrize(
    ("rel", "turns"),
    [
        ("adk/trip_planner/trip_inquiry_multi_turn.test.json", 2),
        ("adk/elicitation_agent/elicitation_flow.test.json", 2),
        ("adk/camelcase_founder_validation/founder_validation_agent_eval.evalset.json", 3),
    ],
)
def test_multi_turn_cases_are_rows_the_vertex_sdk_reads(
    rel: str, turns: int, tmp_path: Path
) -> None:
    import pandas as pd
    from google.genai import types as genai_types
    from vertexai._genai import _evals_data_converters as converters
    from vertexai._genai import types

    src = _copy(rel, tmp_path)
    out = tmp_path / "rows.jsonl"
    assert _convert(src, out, "vertex", "--lossy").exit_code == 0
    records = pd.read_json(out, lines=True).to_dict(orient="records")
    multi = [r for r in records if isinstance(r.get("history"), list)]
    assert multi and max(len({m["role"] for m in r["history"]}) for r in multi) == 2
    view = _reference_view(src, tmp_path)
    for record in multi:
        history = [
            types.evals.Message(turn_id=str(i), content=genai_types.Content.model_validate(m))
            for i, m in enumerate(record["history"])
        ]
        case = types.EvalCase(
            prompt=genai_types.Content(parts=[genai_types.Part(text=record["prompt"])]),
            conversation_history=history,
            eval_case_id=record["id"],
        )
        adk_turns = view[record["id"]]
        # The history is the conversation before the last turn: its user texts, tool
        # calls and answers, in order, as google-adk reads them from the source.
        assert case.conversation_history is not None
        users = [
            m.content.parts[0].text
            for m in case.conversation_history
            if m.content is not None
            and m.content.role == "user"
            and m.content.parts
            and m.content.parts[0].text is not None
        ]
        assert users == [t[0] for t in adk_turns[:-1]]
        calls = [
            (p.function_call.name, p.function_call.args)
            for m in case.conversation_history
            for p in (m.content.parts or [] if m.content else [])
            if p.function_call is not None
        ]
        assert calls == [c for t in adk_turns[:-1] for c in t[1]]
        assert record["prompt"] == adk_turns[-1][0]
    # The SDK's own dataset converter takes the rows (with a response, as after its
    # run_inference) and sees the same history.
    rows = [{**r, "response": r.get("reference") or "ok"} for r in multi]
    dataset = converters._FlattenEvalDataConverter().convert(rows)
    assert dataset.eval_cases is not None
    lengths = [len(c.conversation_history or []) for c in dataset.eval_cases]
    assert lengths == [len(r["history"]) for r in multi]
    assert max(len(view[r["id"]]) for r in multi) == turns


def test_a_multi_turn_row_reads_back_as_its_turns(tmp_path: Path) -> None:
    rel = "adk/trip_planner/trip_inquiry_multi_turn.test.json"
    src = _copy(rel, tmp_path)
    for ext in (".json", ".jsonl", ".csv"):
        out = tmp_path / f"rows{ext}"
        assert _convert(src, out, "vertex", "--sidecar").exit_code == 0
        side = out.with_name(out.name + ".assay-sidecar.json")
        side.unlink()  # what the rows say alone
        back = load(out).cases[0].reference or []
        source = load(src).cases[0].reference or []
        assert [t.user_input.text for t in back] == [t.user_input.text for t in source]
        assert [t.final_response for t in back] == [t.final_response for t in source]
        assert [[s.tool_call.name for s in t.steps if s.tool_call] for t in back] == [
            [s.tool_call.name for s in t.steps if s.tool_call] for t in source
        ]


@pytest.mark.parametrize(
    ("cell", "message", "path"),
    [
        ("not json", "not a JSON list", "$[0].history"),
        ({"role": "user"}, "got dict", "$[0].history"),
        (
            [{"role": "model", "parts": [{"text": "hi"}]}],
            "does not start",
            "$[0].history[0].parts[0]",
        ),
        ([{"role": "user", "parts": "x"}], "no list of parts", "$[0].history[0]"),
        (
            [{"role": "user", "parts": [{"text": "a"}]}, {"role": "model", "parts": [{"x": 1}]}],
            "does not read (keys: x)",
            "$[0].history[1].parts[0]",
        ),
        (
            [
                {"role": "user", "parts": [{"text": "a"}]},
                {"role": "model", "parts": [{"function_call": {"name": "f", "args": [1]}}]},
            ],
            "args is not an object",
            "$[0].history[1].parts[0]",
        ),
    ],
)
def test_a_hostile_history_cell_is_refused_naming_it(
    cell: Any, message: str, path: str, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "p", "reference": "r", "history": cell}) + "\n")
    with pytest.raises(InputError) as info:
        load(rows)
    assert message in str(info.value) and info.value.path == path
    done = _convert(rows, tmp_path / "out.evalset.json", "adk")
    assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output


def test_history_messages_in_other_spellings_are_read() -> None:
    turns = parse_history(
        [
            {"role": "user", "content": "hello"},
            {"content": {"role": "model", "parts": [{"functionCall": {"name": "f"}}]}},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "model", "parts": [{"text": "done"}]},
        ],
        None,
        "c",
        "$",
    )
    assert [t.user_input.text for t in turns] == ["hello"]
    assert [s.kind for s in turns[0].steps] == ["tool_call", "tool_response"]
    assert turns[0].final_response == "done"


def test_csv_metadata_objects_are_named_and_kept_as_text(tmp_path: Path) -> None:
    src = tmp_path / "in" / "support.json"
    src.parent.mkdir()
    shutil.copy(REALWORLD / "vertex" / "customer_support_eval.json", src)
    out = tmp_path / "rows.csv"
    refused = _convert(src, out, "vertex")
    assert refused.exit_code == 2 and not out.exists()
    assert "metadata.metadata (written as JSON text in a CSV cell)" in refused.output
    lossy = _convert(src, out, "vertex", "--lossy")
    assert lossy.exit_code == 0, lossy.output
    assert "metadata.metadata (written as JSON text in a CSV cell): 3 (in 3 cases)" in lossy.output
    first = load(out).cases[0].metadata["metadata"]
    assert json.loads(first) == load(src).cases[0].metadata["metadata"]
    kept = _convert(src, out, "vertex", "--sidecar")
    assert kept.exit_code == 0, kept.output
    back = tmp_path / "back.json"
    assert _convert(out, back, "vertex").exit_code == 0
    assert load(back).cases == load(src).cases


def test_set_fields_in_vertex_jsonl_and_csv_go_with_lossy_and_sidecar(tmp_path: Path) -> None:
    src = tmp_path / "in" / "smoke-dataset.json"
    src.parent.mkdir()
    shutil.copy(REALWORLD / "vertex" / "smoke-dataset.json", src)
    for ext in (".jsonl", ".csv"):
        out = tmp_path / f"rows{ext}"
        refused = _convert(src, out, "vertex")
        assert refused.exit_code == 2 and "the set: description" in refused.output
        lossy = _convert(src, out, "vertex", "--lossy")
        assert lossy.exit_code == 0, lossy.output
        assert "the set's description: 1" in lossy.output
        assert _convert(src, out, "vertex", "--sidecar").exit_code == 0
        back = tmp_path / f"back{ext}.json"
        assert _convert(out, back, "vertex").exit_code == 0
        assert load(back).description == load(src).description is not None


@pytest.mark.parametrize(("to", "name"), [("ces", "out.jsonl"), ("adk", "out.csv")])
def test_an_extension_the_target_is_not_written_as_is_refused(
    to: str, name: str, tmp_path: Path
) -> None:
    src = _copy("adk/home_automation/simple_test.test.json", tmp_path)
    done = _convert(src, tmp_path / name, to, "--lossy")
    assert done.exit_code == 2 and f"cannot be written as a {Path(name).suffix}" in done.output
    assert not (tmp_path / name).exists()


def test_trace_target_names_cases_without_recorded_turns(tmp_path: Path) -> None:
    src = _copy("adk/home_automation/simple_test.test.json", tmp_path)
    refused = _convert(src, tmp_path / "t.jsonl", "trace")
    assert refused.exit_code == 2 and "the case (it has no recorded turns)" in refused.output
    lossy = _convert(src, tmp_path / "t.jsonl", "trace", "--lossy")
    assert lossy.exit_code == 2 and "it has no recorded turns" in lossy.output


def test_a_recorded_conversation_shares_its_history_and_comes_back(tmp_path: Path) -> None:
    from assay.core.cases import EvalCase, EvalSet, Step, ToolCall, ToolResponse, Turn, UserInput
    from assay.formats import vertex

    first = Turn(
        user_input=UserInput(text="book a table"),
        steps=[
            Step(tool_call=ToolCall(name="find", args={"n": 2})),
            Step(tool_response=ToolResponse(name="find", response={"ok": True})),
        ],
        final_response="for how many?",
    )
    case = EvalCase(
        id="c",
        reference=[first, Turn(user_input=UserInput(text="two"), final_response="booked")],
        actual=[first, Turn(user_input=UserInput(text="two"), final_response="done")],
    )
    evalset = EvalSet(id="rows", cases=[case])
    for ext in (".json", ".jsonl", ".csv"):
        path = tmp_path / f"rows{ext}"
        vertex.write(evalset, path)
        assert load(path, "vertex").cases == [case]


def test_refusing_every_case_lists_twenty_then_how_many_more(tmp_path: Path) -> None:
    from assay.core.cases import EvalCase, EvalSet, Scenario
    from assay.formats import adk

    cases = [
        EvalCase(id=f"s{i:02}", scenario=Scenario(starting_prompt="hi", conversation_plan="p"))
        for i in range(23)
    ]
    src = tmp_path / "many.evalset.json"
    adk.write(EvalSet(id="many", cases=cases), src)
    done = _convert(src, tmp_path / "rows.jsonl", "vertex", "--lossy")
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.startswith("  case ")]
    assert [line.split("'")[1] for line in lines] == [f"s{i:02}" for i in range(20)]
    assert "\n  and 3 more" in done.output


@settings(max_examples=200, deadline=None)
@given(turns=st.lists(_turns(), min_size=1, max_size=4))
def test_generated_histories_come_back_as_their_turns(turns: list[Any]) -> None:
    from assay.formats._vertex_history import dump_history

    def fail(message: str) -> InputError:
        return InputError(message)

    history = dump_history(turns, fail)
    assert parse_history(json.loads(json.dumps(history)), None, "c", "$") == turns


@settings(max_examples=300, deadline=None)
@given(
    cell=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "role",
                        "parts",
                        "text",
                        "content",
                        "function_call",
                        "name",
                        "args",
                        "function_response",
                        "response",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_any_history_cell_reads_or_is_refused_naming_it(cell: Any) -> None:
    try:
        parse_history(cell, "f.jsonl", "c", "$[0].history")
    except InputError as exc:
        assert exc.path is not None and exc.path.startswith("$[0].history")


def test_a_big_cell_is_read_and_a_too_deep_one_exits_2_naming_where(tmp_path: Path) -> None:
    # Python csv's default field limit (131,072 characters) is not the format's: a
    # 200,000-character cell is read whole (issue #31).
    big = tmp_path / "big.csv"
    big.write_text('prompt,reference\np,r\nq,"' + "x" * 200_000 + '"\n', encoding="utf-8")
    out = tmp_path / "a.evalset.json"
    done = _convert(big, out, "adk")
    assert done.exit_code == 0, done.output
    assert "x" * 200_000 in out.read_text(encoding="utf-8")
    deep = tmp_path / "deep.csv"
    nested = "[" * 60_000 + "]" * 60_000
    deep.write_text(f'prompt,reference,history\np,r,"{nested}"\n', encoding="utf-8")
    done = _convert(deep, tmp_path / "b.evalset.json", "adk")
    assert done.exit_code == 2 and "$[0].history" in done.output
    assert "nested too deeply" in done.output
