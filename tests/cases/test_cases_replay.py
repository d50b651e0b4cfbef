"""A case blessed from a run replays with FAKE tools: its mocks answer the agent."""

from __future__ import annotations

import json
from pathlib import Path

import weather_agent
from typer.testing import CliRunner

from assay.agents.tools import golden_mocks
from assay.cli import app
from assay.core.cases import EvalCase, Expectation, ToolCall, ToolResponse, Turn
from assay.store.reading import load_stored_run

AGENT = "weather_agent:weather_agent"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def latest_answers(store: str) -> dict[str, str | None]:
    _info, result = load_stored_run(store, "latest")
    return {
        c.case_id: c.invocations[0].actual.final_response if c.invocations[0].actual else None
        for c in result.cases
    }


def test_a_blessed_case_replays_with_fake_tools_from_its_mocks(tmp_path: Path) -> None:
    evalset = tmp_path / "weather.evalset.json"
    evalset.write_text(
        json.dumps(
            {
                "eval_set_id": "weather",
                "eval_cases": [
                    {
                        "eval_id": "paris",
                        "conversation": [
                            {
                                "user_content": {
                                    "role": "user",
                                    "parts": [{"text": "Weather in Paris?"}],
                                },
                                "final_response": {"role": "model", "parts": [{"text": "Sunny."}]},
                                "intermediate_data": {"tool_uses": [], "tool_responses": []},
                            }
                        ],
                    }
                ],
            },
            indent=2,
        )
    )
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    code, out = cli("eval", str(evalset), "--agent", AGENT, "--store", store)
    assert code == 1, out  # the hand-written expectation is wrong: no tool call, "Sunny."
    played = latest_answers(store)["paris"]
    assert played is not None and played.startswith("It is ")

    code, out = cli(
        "cases", "add", str(evalset), "--from-run", "latest", "--update", "--store", store
    )
    assert code == 0, out

    weather_agent.REAL_CALLS.clear()
    code, out = cli("eval", str(evalset), "--agent", AGENT, "--store", store, "--tools", "fake")
    assert code == 0, out
    assert weather_agent.REAL_CALLS == []  # the real tool never ran
    assert latest_answers(store)["paris"] == played  # the blessed temperature, from the mock

    code, out = cli("eval", str(evalset), "--agent", AGENT, "--store", store, "--tools", "real")
    assert weather_agent.REAL_CALLS == ["Paris"]
    assert latest_answers(store)["paris"] != played  # the real tool answers another one


def test_mocks_pair_with_repeated_calls_of_one_tool_in_order() -> None:
    first = ToolCall(name="switch", args={"device": "lamp"})
    second = ToolCall(name="switch", args={"device": "tv"})
    turn = Turn(
        expectations=[
            Expectation(tool_call=first),
            Expectation(tool_call=second),
            Expectation(mock_tool_response=ToolResponse(name="switch", response={"off": "lamp"})),
            Expectation(mock_tool_response=ToolResponse(name="switch", response={"off": "tv"})),
        ]
    )
    mocks = golden_mocks(EvalCase(id="c", reference=[turn]))
    assert [(m.call, m.response.response) for m in mocks] == [
        (first, {"off": "lamp"}),
        (second, {"off": "tv"}),
    ]
    # more calls than mocks: every mock keeps the last call, as before
    turn.expectations.append(Expectation(tool_call=ToolCall(name="switch", args={"device": "fan"})))
    assert {m.call.args["device"] for m in golden_mocks(EvalCase(id="c", reference=[turn]))} == {
        "fan"
    }
