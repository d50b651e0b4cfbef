"""ADK 2.13's evaluators on the edges their code handles on purpose (issue #33), side by
side with assay: the same eval set, the same judge replies (a scripted model in ADK's
`LLMRegistry`, the stand-in judge server for assay), the same scores and statuses per
invocation, per case and per rubric.

Rows: a rubric reply cut short parses nothing; property texts decorated by the judge
(bullets, headings, quotes, dashes, curly quotes and apostrophes) still name their
rubric; the grounding metadata of the invocation's events reaches the judge; the
multi-turn rubric prompt shows each rubric's type; the simulator's "almost" /
"partially valid" labels are invalid; a failed sample leaves the invocation unscored;
an unknown `user_simulator_config.type` is refused; `rubric_content: {}` loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from judge_parity import JUDGE_MODEL, Router
from pydantic import ValidationError
from test_adk_judged_parity import SEGMENTER, VALIDATOR, assert_same, run_adk, run_assay, standin

from assay import formats
from assay.config import parse_config
from assay.core.results import Status
from assay.errors import ConfigError
from assay.formats import adk
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

__all__ = ["standin"]  # the stand-in judge fixture, shared with the parity tests

CONCISE = "The final response is concise."
OUTIL = "L'agent appelle l'outil météo."


def invocation(
    inv_id: str,
    user: str,
    final: str,
    events: list[dict[str, Any]] | None = None,
    rubrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "invocation_id": inv_id,
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": final}]},
    }
    if events is not None:
        out["intermediate_data"] = {"invocation_events": events}
    if rubrics is not None:
        out["rubrics"] = rubrics
    return out


def write_evalset(folder: Path, cases: dict[str, list[dict[str, Any]]]) -> Path:
    path = folder / "edges.evalset.json"
    doc = {
        "eval_set_id": "edges",
        "eval_cases": [
            {
                "eval_id": case_id,
                "conversation": conversation,
                "session_input": {"app_name": "edges", "user_id": "u"},
            }
            for case_id, conversation in cases.items()
        ],
    }
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def block(rubric_id: str, prop: str, verdict: str | None, rationale: str = "checked") -> str:
    """One block of ADK's rubric layout; `verdict` None leaves the Verdict line out."""
    text = f"ID: {rubric_id}\nProperty: {prop}\nRationale: {rationale}\n"
    return text + (f"Verdict: {verdict}\n\n" if verdict is not None else "\n")


def rubric_criterion(num_samples: int = 1, threshold: float = 0.5) -> dict[str, Any]:
    return {
        "threshold": threshold,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": num_samples},
        "rubrics": [
            {"rubric_id": "concise", "rubric_content": {"text_property": CONCISE}},
            {"rubric_id": "outil", "rubric_content": {"text_property": OUTIL}},
        ],
    }


# -- rubric replies: cut short, decorated, judged twice ---------------------------------

DECORATED = {
    # case id -> (how the judge echoed CONCISE, how it echoed OUTIL)
    "bullet": ("• " + CONCISE, "• " + OUTIL),
    "dash": ("- " + CONCISE, "- " + OUTIL),
    "heading": ("### " + CONCISE, "### " + OUTIL),
    "quote": ("> " + CONCISE, "> " + OUTIL),
    "em_dash": ("— " + CONCISE, "— " + OUTIL),
    "curly_quotes": (f"“{CONCISE}”", f"“{OUTIL}”"),
    "curly_apostrophe": (CONCISE, OUTIL.replace("'", "’")),
    "markdown": (f"* **{CONCISE}**", f"`{OUTIL}`"),
}


def _rubric_cases() -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[str]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    routes: dict[str, list[str]] = {}
    for case_id, (concise, outil) in DECORATED.items():
        user = f"Weather please ({case_id})."
        cases[case_id] = [invocation(f"{case_id}-1", user, "Sunny, 21°C.")]
        # No ID: the echoed property text alone must name each rubric.
        routes[user] = [block("", concise, "yes") + block("", outil, "no")]
    user = "Weather please (cut short)."
    cases["cut_short"] = [invocation("cut-1", user, "Sunny.")]
    # One complete block, the next without its Verdict line: ADK reads nothing.
    routes[user] = [block("concise", CONCISE, "yes") + block("outil", OUTIL, None)]
    user = "Weather please (markdown labels)."
    cases["markdown_labels"] = [invocation("md-1", user, "Sunny.")]
    routes[user] = ["**ID:** concise\n**Property:** x\n**Rationale:** r\n**Verdict:** yes\n"]
    user = "Weather please (twice)."
    cases["twice"] = [invocation("twice-1", user, "Sunny.")]
    # The same rubric judged twice in one reply votes twice: yes + no ties, a tie is no.
    routes[user] = [
        block("concise", CONCISE, "yes") + block("concise", CONCISE, "no")
        + block("outil", OUTIL, "yes")
    ]  # fmt: skip
    return cases, routes


def test_rubric_replies_read_as_adk_reads_them(standin: JudgeServer, tmp_path: Path) -> None:
    name = "rubric_based_final_response_quality_v1"
    cases, routes = _rubric_cases()
    path = write_evalset(tmp_path, cases)
    criterion = rubric_criterion()
    adk_results, _ = run_adk(path, name, criterion, routes)
    ours, _ = run_assay(standin, path, name, criterion, routes)
    assert_same(name, adk_results, ours)
    got = {c.case_id: c.metrics[name] for c in ours.cases}
    for case_id in DECORATED:
        assert got[case_id].score == 0.5, case_id  # both rubrics found: yes and no
        assert got[case_id].details["rubric_scores"] == {"concise": 1.0, "outil": 0.0}
    for case_id in ("cut_short", "markdown_labels"):
        assert got[case_id].score is None and got[case_id].status is Status.NOT_EVALUATED
    assert got["twice"].details["rubric_scores"] == {"concise": 0.0, "outil": 1.0}


# -- grounding metadata ----------------------------------------------------------------

QUERY = "weather Paris tomorrow"
SOURCE = "https://meteo.example/paris"
GROUNDED_USER = "Will it rain in Paris tomorrow?"
GROUNDED_ANSWER = "No rain is expected in Paris tomorrow."


def _grounded_set(folder: Path) -> Path:
    grounding = {
        "web_search_queries": [QUERY],
        "grounding_chunks": [{"web": {"uri": SOURCE, "title": "Météo Paris"}}],
        "grounding_supports": [
            {
                "segment": {"start_index": 0, "end_index": 38, "text": GROUNDED_ANSWER},
                "grounding_chunk_indices": [0],
            }
        ],
    }
    events = [{"author": "weather_agent", "grounding_metadata": grounding}]
    inv = invocation("g-1", GROUNDED_USER, GROUNDED_ANSWER, events=events)
    return write_evalset(folder, {"grounded": [inv]})


def test_grounding_metadata_reaches_the_rubric_judge(standin: JudgeServer, tmp_path: Path) -> None:
    name = "rubric_based_final_response_quality_v1"
    path = _grounded_set(tmp_path)
    routes = {GROUNDED_USER: [block("concise", CONCISE, "yes") + block("outil", OUTIL, "no")]}
    criterion = rubric_criterion()
    adk_results, adk_router = run_adk(path, name, criterion, routes)
    ours, our_router = run_assay(standin, path, name, criterion, routes)
    assert_same(name, adk_results, ours)
    for prompts in (adk_router.prompts, our_router.prompts):
        (prompt,) = prompts
        assert QUERY in prompt and SOURCE in prompt and '"author": "weather_agent"' in prompt
    # Kept on the turn, and written back with the events.
    loaded = formats.load(path)
    (turn,) = loaded.cases[0].reference or []
    assert turn.grounding is not None and turn.grounding[0].metadata["web_search_queries"] == [
        QUERY
    ]
    again = AdkEvalSet.model_validate(adk.dump(loaded))
    event = again.eval_cases[0].conversation[0].intermediate_data.invocation_events[0]
    assert event.grounding_metadata.web_search_queries == [QUERY]


def test_grounding_metadata_reaches_the_hallucinations_validator(
    standin: JudgeServer, tmp_path: Path
) -> None:
    name = "hallucinations_v1"
    path = _grounded_set(tmp_path)
    blocks = (
        f"sentence: {GROUNDED_ANSWER}\nlabel: supported\nrationale: the search says so\n"
        "supporting_excerpt: null\ncontradicting_excerpt: null"
    )

    def routes(tool: str) -> dict[Any, list[str]]:
        return {
            (SEGMENTER[tool], GROUNDED_ANSWER): [f"<sentence>{GROUNDED_ANSWER}</sentence>"],
            (VALIDATOR[tool], GROUNDED_ANSWER): [blocks],
        }

    criterion = {"threshold": 0.5, "judge_model_options": {"judge_model": JUDGE_MODEL}}
    adk_results, adk_router = run_adk(path, name, criterion, routes("adk"))
    ours, our_router = run_assay(standin, path, name, criterion, routes("assay"))
    assert_same(name, adk_results, ours)
    for tool, router in (("adk", adk_router), ("assay", our_router)):
        (validator,) = [p for p in router.prompts if VALIDATOR[tool] in p]
        assert QUERY in validator and SOURCE in validator, tool
    assert ours.cases[0].metrics[name].score == 1.0


# -- rubric types in the multi-turn prompt ------------------------------------------------


def test_multi_turn_prompt_shows_rubric_types(standin: JudgeServer, tmp_path: Path) -> None:
    name = "rubric_based_multi_turn_trajectory_quality_v1"
    first, second = "Book a table for two tonight.", "Make it 8 pm."
    conversation = [
        invocation("t-1", first, "Which time?"),
        invocation("t-2", second, "Booked for 8 pm."),
    ]
    path = write_evalset(tmp_path, {"booking": conversation})
    tools = "The agent used the booking tool before confirming."
    intent = "The agent booked what the user asked for."
    criterion = {
        "threshold": 0.5,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 1},
        "rubrics": [
            {
                "rubric_id": "tools",
                "type": "TOOL_USAGE",
                "rubric_content": {"text_property": tools},
            },
            {
                "rubric_id": "intent",
                "type": "FULFILL_USER_INTENT",
                "rubric_content": {"text_property": intent},
            },
        ],
    }
    routes = {second: [block("tools", tools, "no") + block("intent", intent, "yes")]}
    adk_results, adk_router = run_adk(path, name, criterion, routes)
    ours, our_router = run_assay(standin, path, name, criterion, routes)
    assert_same(name, adk_results, ours)
    (adk_prompt,) = adk_router.prompts
    (our_prompt,) = our_router.prompts
    for kind in ("TOOL_USAGE", "FULFILL_USER_INTENT"):
        assert f'"type": "{kind}"' in adk_prompt
        assert f"[type: {kind}]" in our_prompt
    assert ours.cases[0].metrics[name].score == 0.5


# -- the simulated user's validity labels -------------------------------------------------

ODD_LABELS = ("almost", "partially_valid", "partially valid", "partially")


def test_partially_valid_simulator_turns_fail(standin: JudgeServer, tmp_path: Path) -> None:
    name = "per_turn_user_simulator_quality_v1"
    cases: dict[str, list[dict[str, Any]]] = {}
    routes: dict[Any, list[str]] = {}
    scenarios: dict[str, tuple[str, str]] = {}
    for i, label in enumerate(ODD_LABELS):
        case_id = label.replace(" ", "-")
        start, later = f"Hello, I need a taxi ({i}).", f"To the station, please ({i})."
        cases[case_id] = [
            invocation(f"{case_id}-1", start, "Where to?"),
            invocation(f"{case_id}-2", later, "Booked."),
        ]
        scenarios[case_id] = (start, "Ask for a taxi to the station, then end.")
        routes[later] = [f'{{\n  "reasoning": "half of the plan",\n  "is_valid": "{label}"\n}}']
        routes[(start, "</finished>")] = ['{\n  "reasoning": "done",\n  "is_valid": True\n}']
    path = write_evalset(tmp_path, cases)
    criterion = {
        "threshold": 1.0,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 1},
    }
    adk_results, _ = run_adk(path, name, criterion, routes, scenarios)
    ours, _ = run_assay(standin, path, name, criterion, routes, scenarios)
    assert_same(name, adk_results, ours)
    for case in ours.cases:
        result = case.metrics[name]
        assert (result.score, result.status) == (0.5, Status.FAILED), case.case_id


# -- a failed judge sample ---------------------------------------------------------------

FAIL = "<<HTTP 403>>"


class FailingRouter(Router):
    """Replies where `FAIL` stands for a judge call that failed: ADK's model raises, the
    stand-in server answers HTTP 403 (not retried)."""

    def reply(self, prompt: str) -> str:
        text = super().reply(prompt)
        if text == FAIL:
            raise PermissionError("403 Forbidden: the judge refused this sample")
        return text

    def standin(self, request: StandinRequest) -> Any:
        text = Router.reply(self, request.prompt)
        if text == FAIL:
            return StandinReply(text="the judge refused this sample", status=403)
        return text


def _valid(label: str) -> str:
    return f'{{\n  "reasoning": "compared",\n  "is_the_agent_response_valid": "{label}"\n}}'


@pytest.mark.parametrize("name", ["final_response_match_v2", "rubric_based_tool_use_quality_v1"])
def test_a_failed_sample_leaves_the_invocation_unscored(
    standin: JudgeServer, tmp_path: Path, name: str
) -> None:
    ok_user, failing_user = "What is 2 + 2?", "What is 3 + 3?"
    path = write_evalset(
        tmp_path,
        {
            "failing": [
                invocation("f-1", ok_user, "4"),
                invocation("f-2", failing_user, "6"),
            ]
        },
    )
    if name == "final_response_match_v2":
        good, bad = _valid("valid"), _valid("invalid")
        criterion: dict[str, Any] = {
            "threshold": 0.5,
            "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 2},
        }
    else:
        good = block("right_tool", "The agent used the right tool.", "yes")
        bad = block("right_tool", "The agent used the right tool.", "no")
        criterion = {
            "threshold": 0.5,
            "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 2},
            "rubrics": [
                {
                    "rubric_id": "right_tool",
                    "rubric_content": {"text_property": "The agent used the right tool."},
                }
            ],
        }
    routes = {ok_user: [good, bad], failing_user: [good, FAIL]}
    adk_results, _ = run_adk(path, name, criterion, routes, router_type=FailingRouter)
    ours, _ = run_assay(standin, path, name, criterion, routes, router_type=FailingRouter)
    assert_same(name, adk_results, ours)
    (case,) = ours.cases
    per = case.metrics[name].per_invocation
    assert per[1].value is None and "1 of 2 samples failed" in (per[1].explanation or "")
    assert case.metrics[name].score == 0.0  # the tie of the first invocation is a no


# -- the config and the eval set ---------------------------------------------------------


@pytest.mark.parametrize(
    ("simulator", "accepted"),
    [
        ({"type": "llm_backed", "model": "gemini-2.5-flash"}, True),
        ({"type": "llm_audio"}, True),
        ({"model": "gemini-2.5-flash"}, True),  # no type: ADK's legacy default
        ({"type": None}, True),
        ({"type": "scripted"}, False),
        ({"type": "LLM_BACKED"}, False),
    ],
)
def test_user_simulator_type_validated_as_adk(simulator: dict[str, Any], accepted: bool) -> None:
    doc = {"criteria": {"response_match_score": 0.5}, "user_simulator_config": simulator}
    try:
        AdkEvalConfig.model_validate(doc)
        adk_accepts = True
    except ValidationError:
        adk_accepts = False
    assert adk_accepts is accepted
    if accepted:
        assert parse_config(doc).user_simulator_config == simulator
    else:
        with pytest.raises(ConfigError, match=r"user_simulator_config: type '.+' is not"):
            parse_config(doc, source="eval_config.json")


def test_empty_rubric_content_loads_as_adk(tmp_path: Path) -> None:
    rubrics = [
        {"rubric_id": "empty", "rubric_content": {}},
        {"rubric_id": "null", "rubric_content": {"text_property": None}, "type": "TONE"},
        {"rubric_id": "full", "rubric_content": {"text_property": CONCISE}},
    ]
    path = write_evalset(tmp_path, {"c": [invocation("i", "hi", "hello", rubrics=rubrics)]})
    theirs = AdkEvalSet.model_validate_json(path.read_text(encoding="utf-8"))
    (inv,) = theirs.eval_cases[0].conversation
    want = [(r.rubric_id, r.rubric_content.text_property, r.type) for r in inv.rubrics or []]
    loaded = formats.load(path)
    (turn,) = loaded.cases[0].reference or []
    assert [(r.id, r.text, r.type) for r in turn.rubrics] == want
    assert want == [("empty", None, None), ("null", None, "TONE"), ("full", CONCISE, None)]
    # Written back, ADK reads the same rubrics.
    again = AdkEvalSet.model_validate(adk.dump(loaded))
    (back,) = again.eval_cases[0].conversation
    assert [(r.rubric_id, r.rubric_content.text_property, r.type) for r in back.rubrics or []] == (
        want
    )


# -- thought parts: google-adk 2.13 and after ---------------------------------------------

THOUGHT = "I should look at the forecast first."


def _thoughtful_set(folder: Path) -> Path:
    inv = invocation("th-1", "Weather in Nice?", "Sunny, 24°C.")
    inv["final_response"]["parts"].insert(0, {"text": THOUGHT, "thought": True})
    inv["intermediate_data"] = {
        "invocation_events": [
            {
                "author": "weather_agent",
                "content": {"role": "model", "parts": [{"text": "Planning.", "thought": True}]},
            }
        ]
    }
    return write_evalset(folder, {"thoughtful": [inv]})


def test_thought_parts_are_text_as_in_the_installed_adk(
    standin: JudgeServer, tmp_path: Path
) -> None:
    from google.adk.evaluation.llm_as_judge_utils import get_text_from_content

    path = _thoughtful_set(tmp_path)
    theirs = AdkEvalSet.model_validate_json(path.read_text(encoding="utf-8"))
    (inv,) = theirs.eval_cases[0].conversation
    (turn,) = formats.load(path).cases[0].reference or []
    # google-adk 2.13 (installed) reads thought parts as text: so does assay.
    assert turn.final_response == get_text_from_content(inv.final_response)
    assert THOUGHT in (turn.final_response or "")
    name = "rubric_based_final_response_quality_v1"
    routes = {"Weather in Nice?": [block("concise", CONCISE, "yes") + block("outil", OUTIL, "no")]}
    adk_results, adk_router = run_adk(path, name, rubric_criterion(), routes)
    ours, our_router = run_assay(standin, path, name, rubric_criterion(), routes)
    assert_same(name, adk_results, ours)
    assert THOUGHT in adk_router.prompts[0] and THOUGHT in our_router.prompts[0]


def test_thought_parts_left_out_after_adk_2_13(
    standin: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _thoughtful_set(tmp_path)
    monkeypatch.setenv("ASSAY_ADK_VERSION", "2.14")
    loaded = formats.load(path)
    (turn,) = loaded.cases[0].reference or []
    assert turn.final_response == "Sunny, 24°C." and turn.steps == []
    name = "rubric_based_final_response_quality_v1"
    routes = {"Weather in Nice?": [block("concise", CONCISE, "yes") + block("outil", OUTIL, "no")]}
    _, our_router = run_assay(standin, path, name, rubric_criterion(), routes)
    (prompt,) = our_router.prompts
    assert THOUGHT not in prompt and "Planning." not in prompt and "Sunny, 24°C." in prompt
    # The file written back still holds the thoughts, as ADK reads them.
    again = AdkEvalSet.model_validate(adk.dump(loaded))
    (inv,) = again.eval_cases[0].conversation
    assert [p.thought for p in inv.final_response.parts] == [True, None]
    monkeypatch.setenv("ASSAY_ADK_VERSION", "two")
    with pytest.raises(ConfigError, match="ASSAY_ADK_VERSION='two'"):
        formats.load(path)


def test_grounding_of_a_run_survives_the_adk_format() -> None:
    from assay.core.cases import (
        AgentMessage,
        EvalCase,
        EvalSet,
        Grounding,
        Step,
        Turn,
        UserInput,
    )

    kept = Grounding(step=1, author="a", metadata={"web_search_queries": [QUERY]}, first_step=1)
    turn = Turn(
        user_input=UserInput(text="hi"),
        steps=[Step(agent_message=AgentMessage(author="a", text="Looking."))],
        final_response="Sunny.",
        grounding=[kept],
    )
    written = adk.dump(EvalSet(id="s", cases=[EvalCase(id="c", reference=[turn])]))
    AdkEvalSet.model_validate(written)  # still an eval set ADK reads
    (back,) = adk.load_data(written, file="s.json").cases[0].reference or []
    assert back.grounding == [kept]
