"""`assay.cases.generate`: cases from an agent's definition, against the stand-in model.

The stand-in (`assay.testing.standin_generator`) answers over real HTTP with good cases
plus one calling an invented tool, one whose arguments break the schema and two
near-duplicates: exactly those four must be refused, each with its reason.
"""

from __future__ import annotations

import inspect
import json
import random
from pathlib import Path

import pytest

from assay.cases import generate, read_definition, write_generated
from assay.cases.generate_cases import GenerationResult, agenerate, plan
from assay.cases.generate_check import (
    INVALID_ARGUMENTS,
    INVENTED_TOOL,
    LEXICAL_THRESHOLD,
    MALFORMED,
    NEAR_DUPLICATE,
    UNKNOWN_PERSONA,
    Candidate,
    check_calls,
    jaccard,
    remove_near_duplicates,
    tokens,
)
from assay.core.cases import Persona, ToolCall
from assay.errors import InputError
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from assay.testing.standin_embeddings import embed
from assay.testing.standin_generator import REFUSED, generator_script, script

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "examples" / "home_automation" / "definition.json"
HOME_TOOLS = [
    "list_devices",
    "get_device_info",
    "set_device_info",
    "get_temperature",
    "set_temperature",
    "get_energy_report",
]


# -- definitions -------------------------------------------------------------------------


def test_description_file_gives_the_tools_and_their_schemas() -> None:
    agent = read_definition(HOME)
    assert agent.name == "home_automation"
    assert list(agent.all_tools()) == HOME_TOOLS
    schema = agent.all_tools()["set_temperature"].parameters
    assert schema["properties"]["temperature"] == {"type": "number", "minimum": 10, "maximum": 30}


def test_description_file_takes_openai_tools_and_sub_agents(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: desk\ninstruction: Route requests.\n"
        "sub_agents:\n"
        "  - name: billing\n"
        "    tools:\n"
        "      - type: function\n"
        "        function:\n"
        "          name: refund\n"
        "          parameters: {type: object, properties: {order: {type: string}},"
        " required: [order]}\n",
        encoding="utf-8",
    )
    agent = read_definition(path)
    assert [a.name for a in agent.walk()] == ["desk", "billing"]
    refund = agent.all_tools()["refund"]
    assert refund.agent == "billing" and refund.parameters["required"] == ["order"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"tools": {}}', "tools must be a list"),
        ('{"tools": [{"description": "x"}]}', "tools[0]: name is required"),
        ('{"tools": [{"name": "t", "parameters": {"type": 12}}]}', "not a valid JSON schema"),
        ('{"tools": [{"name": "t", "parameters": []}]}', "parameters must be a JSON schema"),
        ('{"tools": [{"name": "t", "parameters": {"type": "string"}}]}', "type: object"),
        ('{"instruction": 3}', "instruction must be a string"),
        ("[1, 2]", "an agent description must be an object"),
    ],
)
def test_a_broken_description_file_names_the_field(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "agent.json"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError, match=r"agent\.json") as caught:
        read_definition(path)
    assert message in str(caught.value)


def test_adk_agent_tree_gives_each_agents_tools() -> None:
    from google.adk.agents import LlmAgent

    def refund(order: str, amount: float) -> dict[str, str]:
        """Refund an order.

        Args:
            order: The order id.
            amount: How much to refund.
        """
        return {"order": order}

    billing = LlmAgent(name="billing", model="gemini-2.5-flash", tools=[refund])
    root = LlmAgent(
        name="desk", model="gemini-2.5-flash", instruction="Route.", sub_agents=[billing]
    )
    agent = read_definition(root)
    assert agent.instruction == "Route." and [a.name for a in agent.walk()] == ["desk", "billing"]
    tool = agent.all_tools()["refund"]
    assert tool.agent == "billing"
    assert tool.parameters["required"] == ["order", "amount"]
    assert tool.parameters["properties"]["amount"]["type"] == "number"


@pytest.mark.parametrize("spec", ["examples.adk_weather.agent:root_agent", "examples/adk_weather"])
def test_adk_example_by_module_spec_or_folder(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    agent = read_definition(spec)
    assert sorted(agent.all_tools()) == ["get_timezone", "get_weather"]
    assert "weather" in agent.instruction


def test_openai_tools_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    agent = read_definition("examples.openai_tools.agent:agent")
    tools = agent.all_tools()
    assert "get_weather" in tools
    assert tools["get_weather"].parameters["properties"]["unit"]["enum"] == [
        "celsius",
        "fahrenheit",
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("examples.home_automation.agent:root_agent", "declares no tools"),
        ("http://127.0.0.1:9/agent", "does not publish its tools"),
        ("missing.json", "no such description file"),
    ],
)
def test_agents_without_readable_tools_ask_for_a_description_file(
    spec: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(InputError, match=message):
        read_definition(spec)


# -- checks ------------------------------------------------------------------------------


def _cand(cid: str, text: str, *calls: ToolCall) -> Candidate:
    return Candidate(id=cid, user_goal="g", opening_message=text, tool_calls=list(calls))


@pytest.mark.parametrize(
    ("call", "kind", "reason"),
    [
        (ToolCall(name="fly", args={}), INVENTED_TOOL, "names tool 'fly'"),
        (
            ToolCall(name="set_temperature", args={"location": "Kitchen", "temperature": 45}),
            INVALID_ARGUMENTS,
            "temperature: 45 is greater than the maximum of 30",
        ),
        (
            ToolCall(name="set_device_info", args={"device_id": "device_2", "status": "off"}),
            INVALID_ARGUMENTS,
            "status: 'off' is not one of ['ON', 'OFF']",
        ),
        (
            ToolCall(name="get_temperature", args={}),
            INVALID_ARGUMENTS,
            "'location' is a required property",
        ),
        (
            ToolCall(name="get_temperature", args={"location": "Kitchen", "unit": "F"}),
            INVALID_ARGUMENTS,
            "unexpected argument(s) unit; get_temperature takes location",
        ),
    ],
)
def test_check_calls_refuses_with_the_reason(call: ToolCall, kind: str, reason: str) -> None:
    tools = read_definition(HOME).all_tools()
    refusal = check_calls(_cand("c", "hello", call), tools)
    assert refusal is not None and refusal.kind == kind and reason in refusal.reason


def test_check_calls_keeps_valid_calls() -> None:
    tools = read_definition(HOME).all_tools()
    call = ToolCall(name="set_temperature", args={"location": "Kitchen", "temperature": 21.5})
    assert check_calls(_cand("c", "warm", call, ToolCall(name="list_devices")), tools) is None


def test_lexical_near_duplicates_first_kept() -> None:
    call = ToolCall(name="get_temperature", args={"location": "Bedroom"})
    a = _cand("a", "What is the temperature in the bedroom?", call)
    b = _cand("b", "What is the temperature in the bedroom? Thanks", call)
    other = ToolCall(name="get_temperature", args={"location": "Kitchen"})
    c = _cand("c", "How warm is the kitchen right now?", other)
    assert jaccard(tokens(a), tokens(b)) >= LEXICAL_THRESHOLD > jaccard(tokens(a), tokens(c))
    kept, refused = remove_near_duplicates([a, b, c])
    assert [k.id for k in kept] == ["a", "c"]
    (only,) = refused
    assert only.case_id == "b" and only.kind == NEAR_DUPLICATE
    assert "repeats case a (lexical similarity" in only.reason


# -- generation against the stand-in -----------------------------------------------------


def test_generate_refuses_exactly_the_bad_cases(standin: JudgeServer) -> None:
    result = generate(HOME, model="openai:stand-in", count=6)
    assert {r.case_id: r.kind for r in result.refusals} == REFUSED
    reasons = {r.case_id: r.reason for r in result.refusals}
    assert "'open_the_pod_bay_doors', which the agent does not have" in reasons["invented_tool"]
    assert "device_id: 42 is not of type 'string'" in reasons["broken_arguments"]
    assert "repeats case use_list_devices" in reasons["near_duplicate_1"]
    assert [c.id for c in result.cases] == [f"use_{name}" for name in HOME_TOOLS]
    assert result.proposed == 10 and result.requests == 1
    assert result.coverage.tools == dict.fromkeys(HOME_TOOLS, 1)
    assert result.coverage.untouched_tools == []
    (request,) = standin.requests
    assert request.json_schema is not None and "TOOLS (JSON):" in request.user
    assert result.input_tokens > 0 and result.output_tokens > 0


def _home_generated(monkeypatch: pytest.MonkeyPatch) -> GenerationResult:
    """Five cases from the home-automation example's own stand-in generator."""
    monkeypatch.chdir(REPO)
    from examples.home_automation.standin_generate import script as home_script

    with JudgeServer(home_script) as server:
        return generate(
            HOME, model="openai:stand-in", count=5, base_url=server.openai_base_url, api_key="k"
        )


def test_coverage_names_the_tools_never_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _home_generated(monkeypatch)
    assert result.coverage.untouched_tools == ["get_energy_report"]
    assert result.coverage.tools["set_device_info"] == 1
    assert {r.case_id for r in result.refusals} == set(REFUSED)


def test_written_set_loads_in_google_adk_and_passes_in_assay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from typer.testing import CliRunner

    from assay.cli import app

    result = _home_generated(monkeypatch)
    out = tmp_path / "generated.evalset.json"
    readers = write_generated(result.cases, out, "adk")
    assert readers == ["assay's adk reader", "google-adk EvalSet"]
    adk = AdkEvalSet.model_validate_json(out.read_text("utf-8"))
    assert [c.eval_id for c in adk.eval_cases] == [c.id for c in result.cases]
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    loaded = load_eval_set_from_file(str(out), "generated")  # what `adk eval` reads with
    assert [c.eval_id for c in loaded.eval_cases] == [c.id for c in result.cases]
    uses = adk.eval_cases[0].conversation[0].intermediate_data.tool_uses  # type: ignore[index,union-attr]
    assert [(u.name, u.args) for u in uses] == [
        ("set_device_info", {"device_id": "device_2", "status": "OFF"})
    ]
    report = tmp_path / "report.json"
    args = ["eval", str(out), "--agent", "examples.home_automation.agent:root_agent",
            "-m", "tool_trajectory_avg_score", "--no-store", "--out", str(report)]  # fmt: skip
    ran = CliRunner().invoke(app, args)
    assert ran.exit_code == 0, ran.output
    statuses = {c["eval_id"]: c["status"] for c in json.loads(report.read_text("utf-8"))["cases"]}
    assert statuses == dict.fromkeys((c.id for c in result.cases), "PASSED")


def test_scenarios_with_a_persona_file(standin: JudgeServer, tmp_path: Path) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    personas = tmp_path / "personas.json"
    personas.write_text(
        json.dumps(
            [
                {
                    "name": "projects/p/locations/l/apps/a/personas/busy",
                    "displayName": "Busy",
                    "description": "In a hurry.",
                    "personality": "Short answers.",
                },
                {
                    "name": "projects/p/locations/l/apps/a/personas/chatty",
                    "displayName": "Chatty",
                    "description": "Talks a lot.",
                    "personality": "Long answers.",
                },
                {
                    "name": "projects/p/locations/l/apps/a/personas/unused",
                    "displayName": "Unused",
                    "description": "Never picked.",
                },
            ]
        ),
        encoding="utf-8",
    )
    # The stand-in hands the personas out in turn, one per case (10 cases, 3 personas).
    result = generate(HOME, model="openai:stand-in", count=6, scenarios=True, personas=personas)
    assert {r.case_id: r.kind for r in result.refusals} == REFUSED
    assert result.coverage.personas == {"busy": 2, "chatty": 2, "unused": 2}
    (request,) = standin.requests
    assert "conversation scenarios" in request.user and '"id": "busy"' in request.user
    out = tmp_path / "scenarios.evalset.json"
    write_generated(result.cases, out, "adk")
    adk = AdkEvalSet.model_validate_json(out.read_text("utf-8"))
    scenario = adk.eval_cases[0].conversation_scenario
    assert scenario is not None and scenario.user_persona is not None
    assert scenario.user_persona.id == "busy"
    assert "Stop when:" in scenario.conversation_plan
    ces = tmp_path / "scenarios.ces.json"
    assert write_generated(result.cases_as("ces"), ces, "ces")[-1] == "google-cloud-ces Evaluation"
    first = json.loads(ces.read_text("utf-8"))["evaluations"][0]["scenario"]
    assert "Open with: Could you list devices" in first["task"]


def test_scenario_with_a_persona_not_given_is_refused(standin: JudgeServer) -> None:
    standin.set_script(
        StandinReply(
            json.dumps(
                {
                    "cases": [
                        {
                            "id": "x",
                            "user_goal": "g",
                            "opening_message": "hi",
                            "persona": "PIRATE",
                            "conversation_plan": "p",
                            "stop_condition": "s",
                            "expected_tool_calls": [],
                        }
                    ]
                }
            )
        )
    )
    result = generate(HOME, model="openai:stand-in", count=1, scenarios=True)
    (refusal,) = result.refusals
    assert refusal.kind == UNKNOWN_PERSONA and "'PIRATE'" in refusal.reason
    assert "NOVICE" in refusal.reason and result.cases == []


def test_malformed_items_are_refused_and_the_rest_kept(standin: JudgeServer) -> None:
    good = {"id": "ok", "user_goal": "g", "opening_message": "List my devices.",
            "expected_tool_calls": [{"name": "list_devices", "args": {}}]}  # fmt: skip
    items = [
        good,
        "not a case",
        {"id": "no_message", "user_goal": "g", "expected_tool_calls": []},
        {
            "id": "calls_not_list",
            "user_goal": "g",
            "opening_message": "x",
            "expected_tool_calls": {"name": "list_devices"},
        },
        {
            "id": "args_not_object",
            "user_goal": "g",
            "opening_message": "y",
            "expected_tool_calls": [{"name": "list_devices", "args": [1]}],
        },
        {**good, "opening_message": "Show me every device in the house, with statuses."},
    ]
    standin.set_script(StandinReply(json.dumps({"cases": items})))
    result = generate(HOME, model="openai:stand-in", count=2)
    assert [c.id for c in result.cases] == ["ok", "ok-2"]  # a repeated id gets a suffix
    kinds = {r.case_id: (r.kind, r.reason) for r in result.refusals}
    assert kinds == {
        "generated_1_2": (MALFORMED, "item 1 of batch 1 is not an object"),
        "no_message": (MALFORMED, "opening_message is missing"),
        "calls_not_list": (MALFORMED, "expected_tool_calls must be a list"),
        "args_not_object": (MALFORMED, "expected_tool_calls[0].args must be an object"),
    }


def test_an_unreadable_reply_is_a_refusal_not_a_crash(standin: JudgeServer) -> None:
    standin.set_script(StandinReply("Sure! Here are some cases: ..."))
    result = generate(HOME, model="openai:stand-in", count=3)
    (refusal,) = result.refusals
    assert refusal.kind == MALFORMED and refusal.reason.startswith("unreadable reply")
    assert result.cases == []


def test_batches_show_the_kept_openings_to_later_requests(standin: JudgeServer) -> None:
    result = generate(HOME, model="openai:stand-in", count=12)
    first, second = standin.requests
    # The second request asks for what the first left short (12 - 6), then none follows:
    # it brought nothing new.
    assert "Write 10 diverse" in first.user and "Write 6 diverse" in second.user
    assert "ALREADY WRITTEN" not in first.user
    assert "- Could you list devices for location Living Room?" in second.user
    # The second batch says the same as the first: every case of it repeats one kept.
    assert len(result.cases) == 6
    second_ids = [r.case_id for r in result.refusals if r.case_id.startswith("use_")]
    assert len(second_ids) == 6
    assert all("-2" in cid for cid in second_ids)


def test_semantic_near_duplicates_with_an_embeddings_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lamp = [{"name": "set_device_info", "args": {"device_id": "device_2", "status": "OFF"}}]
    a = "switch the bedroom lamp off lamp lamp"
    b = "could you please put the lamp in my bedroom off lamp lamp"
    c = "which devices are in the kitchen"
    sim = sum(x * y for x, y in zip(embed(a), embed(b), strict=True))
    assert sim > sum(x * y for x, y in zip(embed(a), embed(c), strict=True))
    cases = [
        {"id": i, "user_goal": "g", "opening_message": text, "expected_tool_calls": calls}
        for i, text, calls in (
            ("a", a, lamp),
            ("b", b, lamp),
            ("c", c, [{"name": "list_devices", "args": {"location": "Kitchen"}}]),
        )
    ]
    cand = [_cand(x["id"], x["opening_message"]) for x in cases]
    assert jaccard(tokens(cand[0]), tokens(cand[1])) < LEXICAL_THRESHOLD

    def only_good(request: StandinRequest) -> StandinReply:
        return StandinReply(json.dumps({"cases": cases}))

    with JudgeServer(only_good) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        options = {"model": "openai:stand-in", "count": 3, "base_url": server.openai_base_url}
        lexical = generate(HOME, **options)  # type: ignore[arg-type]
        assert [x.id for x in lexical.cases] == ["a", "b", "c"]
        semantic = generate(
            HOME,
            **options,  # type: ignore[arg-type]
            embeddings=server.openai_base_url,
            semantic_threshold=sim - 1e-9,
        )
        assert server.embedding_requests
    assert [x.id for x in semantic.cases] == ["a", "c"]
    # one short of --count: one top-up request, whose three cases all repeat kept ones
    assert semantic.requests == 2
    refusal, *top_up = semantic.refusals
    assert [r.case_id for r in top_up] == ["a-2", "b-2", "c-2"]
    assert refusal.case_id == "b" and refusal.kind == NEAR_DUPLICATE
    assert "repeats case a (semantic similarity" in refusal.reason


def test_plan_calls_nothing_and_prices_known_models() -> None:
    planned = plan(HOME, model="openai:gpt-4o-mini", count=25)
    assert planned.sizes == [10, 10, 5]
    assert planned.estimate.requests == 3 and planned.estimate.usd is not None
    assert planned.estimate.output_tokens == 25 * 250
    assert "set_temperature" in planned.messages[1]["content"]
    unknown = plan(HOME, model="openai:my-own-model", count=1)
    assert unknown.estimate.usd is None and "no list price known" in unknown.estimate.show()


def test_count_below_one_is_refused() -> None:
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="--count must be at least 1, got 0"):
        plan(HOME, model="openai:x", count=0)


def test_personas_in_the_prompt_are_the_given_ones() -> None:
    planned = plan(
        HOME,
        model="openai:x",
        count=2,
        scenarios=True,
        personas={"ops": Persona(id="ops", description="An operator.")},
    )
    assert '{"id": "ops", "description": "An operator."}' in planned.messages[1]["content"]


def test_generic_script_derives_bad_cases_from_any_tools() -> None:
    tools = [{"name": "add", "parameters": {"type": "object",
              "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]  # fmt: skip
    prompt = "TOOLS (JSON):\n```json\n" + json.dumps(tools) + "\n```\n"
    request = StandinRequest(
        dialect="openai", path="/v1/chat/completions", model="m", body={}, headers={},
        messages=({"role": "user", "content": prompt},),
    )  # fmt: skip
    cases = json.loads(generator_script()(request).text)["cases"]
    by_id = {c["id"]: c for c in cases}
    assert by_id["use_add"]["expected_tool_calls"] == [{"name": "add", "args": {"n": 1}}]
    assert by_id["broken_arguments"]["expected_tool_calls"] == [
        {"name": "add", "args": {"n": "a lot"}}
    ]


def test_top_ups_fill_the_set_and_surplus_is_refused(standin: JudgeServer) -> None:
    def case(i: int) -> dict[str, object]:
        room = ["Living Room", "Bedroom", "Kitchen"][i % 3]
        call = {"name": "get_temperature", "args": {"location": room}}
        return {"id": f"c{i}", "user_goal": "g", "opening_message": f"Case {i} {room}.",
                "expected_tool_calls": [call]}  # fmt: skip

    replies = [
        # 3 asked, 1 good + 2 invented: short by 2
        {
            "cases": [
                case(1),
                {**case(2), "expected_tool_calls": [{"name": "x", "args": {}}]},
                {**case(3), "expected_tool_calls": [{"name": "y", "args": {}}]},
            ]
        },
        {"cases": [case(4), case(5), case(6)]},  # 2 asked, 3 kept: one surplus
    ]
    standin.set_script([StandinReply(json.dumps(r)) for r in replies])
    result = generate(HOME, model="openai:stand-in", count=3)
    assert [c.id for c in result.cases] == ["c1", "c4", "c5"]
    assert result.requests == 2
    first, second = standin.requests
    assert "Write 3 diverse" in first.user and "Write 2 diverse" in second.user
    assert "- Case 1 Bedroom." in second.user
    surplus = result.refusals[-1]
    assert (surplus.case_id, surplus.kind) == ("c6", "surplus")
    assert surplus.reason == "more cases than --count 3 asked for"


def test_top_ups_are_bounded(standin: JudgeServer) -> None:
    # Each reply brings one new case: the set stays short, and asking stops after
    # ceil(count / 10) + MAX_TOP_UPS requests.
    from assay.cases.generate_cases import MAX_TOP_UPS

    def one_new(request: StandinRequest) -> StandinReply:
        room = ["Living Room", "Bedroom", "Kitchen"][request.index % 3]
        call = {"name": "get_temperature", "args": {"location": room}}
        item = {"id": f"r{request.index}", "user_goal": "g",
                "opening_message": f"Reading {request.index} please, {room}",
                "expected_tool_calls": [call]}  # fmt: skip
        return StandinReply(json.dumps({"cases": [item]}))

    standin.set_script(one_new)
    result = generate(HOME, model="openai:stand-in", count=10)
    assert result.requests == 1 + MAX_TOP_UPS == len(standin.requests)
    assert len(result.cases) == 1 + MAX_TOP_UPS


def test_home_definition_matches_the_home_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    # definition.json describes examples/home_automation/home.py: same tools, same
    # parameters (all but the session's `home`), the same required ones.
    monkeypatch.chdir(REPO)
    from examples.home_automation.home import TOOLS

    tools = read_definition(HOME).all_tools()
    assert list(tools) == list(TOOLS)
    for name, fn in TOOLS.items():
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "home"]
        schema = tools[name].parameters
        assert list(schema["properties"]) == [p.name for p in params], name
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        assert schema.get("required", []) == required, name


async def test_generate_runs_inside_a_running_loop(standin: JudgeServer) -> None:
    # as from a notebook cell: `generate` must not call asyncio.run on the running loop
    result = generate(HOME, model="openai:stand-in", count=6)
    assert len(result.cases) == 6


def test_generate_takes_agenerates_parameters_declared_once() -> None:
    """`generate` is `agenerate` run to completion: the same parameters (for `help()`),
    its own name and docstring, and a wrong call refused before anything runs."""
    assert inspect.signature(generate) == inspect.signature(agenerate)
    assert "count" in inspect.signature(generate).parameters
    assert generate.__name__ == "generate" and generate.__module__ == agenerate.__module__
    assert (generate.__doc__ or "").startswith("Generate cases from the agent's definition")
    with pytest.raises(TypeError):
        generate(HOME, "openai:stand-in", 3)  # type: ignore[misc]  # keywords only


def _random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 10**30, 3.5, float("1e308")])
    if kind == 3:
        return rng.choice(["", "x", "device_2", "Kitchen", "\u0000", "ON", "a" * 500])
    if kind == 4:
        return rng.choice(["id", "cases", "name", "args"])
    if kind == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["id", "user_goal", "opening_message", "expected_tool_calls", "name", "args",
            "rubrics", "persona", "location", "device_id", "status", "temperature"]  # fmt: skip
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


_VALID = {
    "id": "v",
    "user_goal": "g",
    "opening_message": "Set the kitchen to 20.",
    "persona": "NOVICE",
    "conversation_plan": "p",
    "stop_condition": "s",
    "expected_tool_calls": [
        {"name": "set_temperature", "args": {"location": "Kitchen", "temperature": 20}}
    ],
}


def _mutated(rng: random.Random) -> object:
    """A valid case with one field (or one argument) replaced by random JSON, or noise."""
    if rng.random() < 0.2:
        return _random_json(rng, 1)
    case = json.loads(json.dumps(_VALID))
    if rng.random() < 0.3:
        return case
    if rng.random() < 0.5:
        case["expected_tool_calls"][0]["args"][rng.choice(["location", "temperature", "x"])] = (
            _random_json(rng, 2)
        )
    else:
        case[rng.choice(list(_VALID))] = _random_json(rng, 1)
    return case


def test_hostile_replies_never_crash_the_checks() -> None:
    # Whatever JSON a model answers, parsing and checking give cases or refusals: never
    # an exception other than the ValueError of a reply that is not {"cases": [...]}.
    from assay.cases.generate_check import parse_reply

    rng = random.Random(36)
    tools = read_definition(HOME).all_tools()
    personas = {"NOVICE": Persona(id="NOVICE")}
    outcomes = {"kept": 0, "refused": 0, "unreadable": 0}
    for _ in range(400):
        value = _random_json(rng)
        if rng.random() < 0.7:
            value = {"cases": [_mutated(rng) for _ in range(rng.randrange(4))]}
        try:
            found, bad = parse_reply(json.dumps(value), batch=1, scenarios=True, taken=set())
        except ValueError:
            outcomes["unreadable"] += 1
            continue
        outcomes["refused"] += len(bad)
        for cand in found:
            from assay.cases.generate_check import check_persona

            refusal = check_calls(cand, tools) or check_persona(cand, personas)
            outcomes["kept" if refusal is None else "refused"] += 1
        remove_near_duplicates(found)
    assert all(outcomes.values()), outcomes


def test_hostile_description_files_are_input_errors(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "agent.json"
    read = refused = 0
    for _ in range(300):
        value: object = _random_json(rng)
        if rng.random() < 0.6:
            tool = {"name": rng.choice(["t", 3, None]), "parameters": _random_json(rng, 1)}
            value = {"name": "a", "tools": [tool, _random_json(rng, 2)][: rng.randrange(1, 3)]}
        path.write_text(json.dumps(value), encoding="utf-8")
        try:
            read_definition(path)
        except InputError as exc:
            assert "agent.json" in str(exc)
            refused += 1
        else:
            read += 1
    assert read and refused


def test_a_model_error_after_some_cases_keeps_them(standin: JudgeServer) -> None:
    first = script  # the stand-in's first reply: six good cases and four to refuse
    replies = iter([None, StandinReply(text="the model refuses this request", status=403)])

    def then_fail(request: StandinRequest) -> StandinReply:
        reply = next(replies)
        return first(request) if reply is None else reply

    standin.set_script(then_fail)
    result = generate(HOME, model="openai:stand-in", count=20)
    assert len(result.cases) == 6 and result.requests == 2
    error = result.refusals[-1]
    assert (error.case_id, error.kind) == ("batch 2", "model error")
    assert "the model refuses this request" in error.reason


def test_a_model_error_before_any_case_is_raised(standin: JudgeServer) -> None:
    from assay.models.types import ModelCallError

    standin.set_script(StandinReply(text="no such model", status=404))
    with pytest.raises(ModelCallError, match="no such model"):
        generate(HOME, model="openai:stand-in", count=3)


def test_an_adk_app_gives_its_root_agents_definition() -> None:
    from google.adk.agents import LlmAgent
    from google.adk.apps.app import App

    def ping(host: str) -> dict[str, str]:
        """Ping a host."""
        return {"host": host}

    root = LlmAgent(name="netops", model="gemini-2.5-flash", instruction="Ops.", tools=[ping])
    agent = read_definition(App(name="netops_app", root_agent=root))
    assert agent.name == "netops" and list(agent.all_tools()) == ["ping"]


WITHOUT_ADK = """
import sys
for name in ("google.adk", "google.cloud.ces_v1beta"):
    sys.modules[name] = None
from assay.cases import generate, write_generated
from assay.testing.judge_server import JudgeServer
from assay.testing.standin_generator import script

with JudgeServer(script) as server:
    result = generate(sys.argv[1], model="openai:s", count=6,
                      base_url=server.openai_base_url, api_key="k")
print(write_generated(result.cases, sys.argv[2], "adk"))
print(write_generated(result.cases_as("ces"), sys.argv[3], "ces"))
"""


def test_generation_works_without_the_adk_and_ces_extras(tmp_path: Path) -> None:
    import subprocess
    import sys

    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_ADK,
            str(HOME),
            str(tmp_path / "a.json"),
            str(tmp_path / "c.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [str(["assay's adk reader"]), str(["assay's ces reader"])]
