"""Personas (presets, files), scenario mocks through the tool hook, real scenario files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from simulation_support import Recorder, simulator

from assay import formats
from assay.agents.base import SessionOptions
from assay.agents.callable import CallableAgent
from assay.agents.tools import ToolBehavior, ToolHook, scenario_mocks
from assay.core.cases import EvalCase, Persona, Scenario, ToolCall, ToolResponse
from assay.core.error_types import ErrorType
from assay.errors import ConfigError, InputError
from assay.simulation import (
    NO_USER_MODEL_MESSAGE,
    PRESET_PERSONAS,
    SimulationResult,
    SimulatorOptions,
    UserSimulator,
    load_personas,
    read_reply,
    resolve_persona,
    simulate,
)
from assay.testing.judge_server import JudgeServer, StandinReply

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"
LARGE_PARTY = (
    REALWORLD / "ces" / "bella_notte" / "evaluations" / "Scenario_-_Large_Party_Rejection.json"
)


def _simulate(
    agent: CallableAgent, case: EvalCase, sim: UserSimulator, **kw: Any
) -> SimulationResult:
    async def go() -> SimulationResult:
        try:
            return await simulate(agent, case, SessionOptions.for_case(case, **kw), sim)
        finally:
            await sim.aclose()

    return asyncio.run(go())


def test_persona_files_in_ces_and_adk_shapes(tmp_path: Path) -> None:
    ces = tmp_path / "personas.json"
    resource = {
        "name": "projects/p/locations/l/apps/a/personas/impatient",
        "displayName": "Impatient caller",
        "description": "In a hurry",
        "personality": "Short answers, sighs a lot.",
        "etag": "abc",
        "createTime": "2025-01-01T00:00:00Z",
    }
    ces.write_text(json.dumps({"personas": [resource]}))
    wanted = Persona(
        id="impatient",
        display_name="Impatient caller",
        description="In a hurry",
        personality="Short answers, sighs a lot.",
    )
    assert load_personas(ces) == {"impatient": wanted}
    adk = tmp_path / "personas.yaml"
    adk.write_text(
        "- id: PICKY\n  description: Wants everything just so\n  behaviors:\n"
        "    - name: tone\n      description: Polite but exacting\n"
        "      behavior_instructions: [Ask for confirmation of every detail]\n"
    )
    picky = load_personas(adk)["PICKY"]
    assert picky.description == "Wants everything just so"
    assert "Ask for confirmation of every detail" in (picky.personality or "")


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('[{"name": "x", "mood": "sad"}]', "$[0]"),
        ('[{"displayName": "no id"}]', "$[0].name"),
        ('[{"name": "x", "personality": 3}]', "$[0].personality"),
        ('[{"name": "x"}, {"name": "x"}]', "$[1]"),
        ("[]", "$"),
    ],
)
def test_bad_persona_files_name_the_place(tmp_path: Path, content: str, where: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_personas(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_persona_ids_resolve_against_the_run_then_the_presets() -> None:
    mine = {"impatient": Persona(id="impatient", personality="hurried")}
    assert resolve_persona("Impatient", mine) is mine["impatient"]
    assert resolve_persona("apps/a/personas/impatient", mine) is mine["impatient"]
    assert resolve_persona("novice", mine) is PRESET_PERSONAS["NOVICE"]
    assert resolve_persona(None, mine) is None
    with pytest.raises(ConfigError, match=r"unknown persona 'ghost'.*EXPERT.*impatient"):
        resolve_persona("ghost", mine)


def test_personas_reach_the_simulated_users_prompt(server: JudgeServer, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('[{"name": "impatient", "description": "In a hurry", "personality": "Sighs."}]')
    sim = simulator(server, ["</finished>"], personas=load_personas(path))
    case = EvalCase(id="p", scenario=Scenario(task="t", persona="impatient"))
    result = _simulate(Recorder().agent(), case, sim)
    assert result.metadata["persona"] == "impatient"
    assert "In a hurry" in server.requests[0].system and "Sighs." in server.requests[0].system

    sim = simulator(server, ["</finished>"])
    result = _simulate(
        Recorder().agent(), EvalCase(id="e", scenario=Scenario(task="t", persona="EXPERT")), sim
    )
    assert PRESET_PERSONAS["EXPERT"].description in server.requests[-1].system

    sim = simulator(server, [])
    result = _simulate(
        Recorder().agent(), EvalCase(id="g", scenario=Scenario(task="t", persona="ghost")), sim
    )
    assert result.error_type == ErrorType.CONFIG_ERROR and "'ghost'" in (result.error or "")
    assert "case 'g'" in (result.error or "")


def test_scenario_mocks_reach_the_agent_through_the_tool_hook(server: JudgeServer) -> None:
    case = formats.load(LARGE_PARTY).cases[0]
    scenario = case.scenario
    assert scenario is not None
    # give the real file's expected call a mock answer, as a CES FAKE run would use
    expectation = scenario.expectations[0].tool_expectation
    assert expectation is not None
    mocked = expectation.model_copy(
        update={
            "mock_tool_response": ToolResponse(name="set_party_size", response={"error": "max 8"})
        }
    )
    scenario.expectations[0] = scenario.expectations[0].model_copy(
        update={"tool_expectation": mocked}
    )
    seen: list[Any] = []

    def real_tool() -> Any:
        raise AssertionError("the real tool must not run under FAKE")

    async def agent(text: str, tools: ToolHook) -> dict[str, Any]:
        payload, _ = await tools.execute(
            ToolCall(name="set_party_size", args={"size": 12}), real_tool
        )
        seen.append(payload)
        return {"response": "Parties are limited to 8; write to events@bellanotte.com",
                "predicted_trajectory": [{"tool_name": "set_party_size", "tool_input": {"size": 12},
                                          "tool_output": payload}]}  # fmt: skip

    hook = ToolHook(ToolBehavior.FAKE, scenario_mocks(case))
    sim = simulator(server, ["I'd like to book for 12 people.", "</finished>"])
    result = _simulate(CallableAgent(agent), case, sim, tools=hook)
    assert seen == [{"error": "max 8"}] and hook.used == [0]
    assert result.stopped_by == "stop_signal"
    assert result.turns[0].tool_responses()[0].response == {"error": "max 8"}
    # the CES scenario's task and user facts went to the simulated user
    assert (
        "12 people" in server.requests[0].system and "party_size: 12" in server.requests[0].system
    )


@pytest.mark.parametrize(
    "path",
    [
        LARGE_PARTY,
        REALWORLD / "adk" / "conversation_scenario" / "conversation_scenario.test.json",
        REALWORLD / "adk" / "samples_user_simulation" / "conversation_scenarios.json",
        REALWORLD
        / "adk"
        / "live_non_blocking_tool_agent"
        / "live_non_blocking_tool_agent.evalset.json",
    ],
    ids=lambda p: p.name,
)
def test_real_scenario_files_load_and_simulate(server: JudgeServer, path: Path) -> None:
    cases = [c for c in formats.load(path).cases if c.scenario is not None]
    assert cases
    for case in cases:
        assert case.scenario is not None
        sim = simulator(server, ["Could you help me with that?", "</finished>"])
        result = _simulate(Recorder().agent(), case, sim)
        assert result.error is None and result.stopped_by == "stop_signal"
        texts = [t.user_input.text for t in result.turns]
        if case.scenario.starting_prompt:
            assert texts == [case.scenario.starting_prompt, "Could you help me with that?"]
        else:
            assert texts == ["Could you help me with that?"]
        if isinstance(case.scenario.persona, str):
            assert result.metadata["persona"] == case.scenario.persona.upper()


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError) as info:
        UserSimulator(SimulatorOptions())
    assert str(info.value) == NO_USER_MODEL_MESSAGE and "--user-model" in NO_USER_MODEL_MESSAGE
    with pytest.raises(ConfigError, match="unknown judge model"):
        UserSimulator(SimulatorOptions(model="gpt-4o"))
    with pytest.raises(ConfigError, match="max_turns"):
        UserSimulator(
            SimulatorOptions(model="openai:x", base_url="http://127.0.0.1:9", max_turns=0)
        )
    with pytest.raises(ConfigError, match="cloud models"):
        UserSimulator(SimulatorOptions(model="local:m.gguf", api_key="k"))


def test_an_api_key_is_sent_to_the_model(server: JudgeServer) -> None:
    server.set_script(StandinReply(text="</finished>"))
    sim = UserSimulator(
        SimulatorOptions(model="openai:m", base_url=server.base_url, api_key="sk-test")
    )
    result = _simulate(Recorder().agent(), EvalCase(id="k", scenario=Scenario(task="t")), sim)
    assert result.stopped_by == "stop_signal"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ("Hello!", "Hello!"),
        ("User: I need help", "I need help"),
        ('"quoted message"', "quoted message"),
        ("Thanks, bye </FINISHED>", None),
        ("   ", "EMPTY"),
    ],
)
def test_reading_replies(reply: str, text: str | None) -> None:
    found = read_reply(reply, "</finished>")
    if text == "EMPTY":
        assert found is None
    else:
        assert found is not None and found.text == text and found.stopped == (text is None)
