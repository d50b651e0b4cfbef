"""Every real-world file under shared/realworld/ loads, as the format it is, with the
expected cases and a few checked values. A file this test does not know fails it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.config import EvalConfig, load_config
from assay.core.cases import EvalSet, UserGoalBehavior
from assay.errors import InputError, UnknownFormatError
from assay.formats import FORMAT_MODULES, ces, detect_format, format_module, load, save
from assay.formats._common import read_structured

REALWORLD = (Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld").resolve()
MLFLOW_MAP = {"question": "request", "relevant_doc_id": "expected_retrieved_context"}

Check = Callable[[Any], None]


def _first_text(es: EvalSet, case: int = 0, turn: int = 0) -> str | None:
    turns = es.cases[case].reference or es.cases[case].actual or []
    return turns[turn].user_input.text


def _calls(es: EvalSet, case: int = 0, turn: int = 0) -> list[str]:
    turns = es.cases[case].reference or []
    return [c.name for c in turns[turn].tool_calls()]


def _founder(es: EvalSet) -> None:
    assert es.id == "founder_validation_agent_eval" and es.cases[0].id == "clarify_vague_idea"
    assert _calls(es) == ["clarify_idea"]
    assert es.cases[0].session_input is not None


def _cs_test(es: EvalSet) -> None:
    sc = es.cases[0].scenario
    assert es.cases[0].id == "CS-1" and sc is not None and sc.starting_prompt


def _crypto(es: EvalSet) -> None:
    assert es.cases[0].id == "equal_token_payroll_selects_spraay_batch_token"
    assert _calls(es) == ["lookup_token_info"]
    assert len(es.cases[0].reference or []) == 2


def _elicitation(es: EvalSet) -> None:
    assert _first_text(es) == "Book a flight to London" and _calls(es) == ["trigger_elicitation"]


def _home(es: EvalSet) -> None:
    assert _first_text(es) == "Turn off device_2 in the Bedroom."
    assert (es.cases[0].reference or [])[
        0
    ].final_response == "I have set the device_2 status to off."


def _legacy(es: EvalSet) -> None:
    case = es.cases[0]
    assert case.id.endswith("trip_inquiry.test.json") and len(case.reference or []) == 2
    assert _first_text(es) == "Hi, who are you? What can you do?"
    # initial.session.json beside the file supplies the session.
    assert case.session_input is not None
    assert case.session_input.state["origin"] == "San Francisco"


def _live(es: EvalSet) -> None:
    assert es.cases[0].id == "background_task_scenario" and es.cases[0].scenario is not None
    assert es.cases[1].reference is not None


def _plot(es: EvalSet) -> None:
    turn = (es.cases[0].reference or [])[0]
    assert es.cases[0].id == "plot_save_as_downloadable_artifact"
    assert turn.rubrics and turn.rubrics[0].type is not None


def _scenarios(es: EvalSet) -> None:
    assert all(c.scenario is not None for c in es.cases)


def _multi_turn(es: EvalSet) -> None:
    assert len(es.cases[0].reference or []) == 2
    assert (es.cases[0].reference or [])[1].tool_calls()[0].name == "transfer_to_agent"


def _math(es: EvalSet) -> None:
    assert es.id == "math-basic" and _first_text(es) == "calc add 2 3"
    assert (es.cases[0].reference or [])[0].final_response == "calc result: 5"


def _leakage(es: EvalSet) -> None:
    assert es.metadata[ces.RESOURCES][0]["displayName"] == "No Technical Leakage"


def _prefill(es: EvalSet) -> None:
    case = es.cases[0]
    assert (case.reference or [])[0].user_input.event == "welcome"
    assert [r.id for r in case.rubrics] == ["No Technical Leakage"]  # linked from the export


def _off_rails(es: EvalSet) -> None:
    last = (es.cases[0].reference or [])[3]
    assert last.expectations[1].tool_call is not None
    assert last.expectations[1].tool_call.name == "end_session"


def _scenario(es: EvalSet) -> None:
    sc = es.cases[0].scenario
    assert sc is not None and sc.user_goal_behavior == UserGoalBehavior.USER_GOAL_REJECTED
    assert len(sc.rubrics) == 3 and sc.max_turns == 5


def _exported(es: EvalSet) -> None:
    assert (es.cases[0].reference or [])[0].user_input.event == "WelcomeEvent"
    assert es.cases[0].rubrics[0].id == "Simple tool expectation 1"


def _golden_yaml(es: EvalSet) -> None:
    assert es.cases[2].id == "Datastore_Intent1"
    turn = (es.cases[2].reference or [])[1]
    assert turn.user_input.text == "block a number"
    assert turn.expectations[0].tool_call is not None
    assert turn.expectations[0].tool_call.name == "website_datastore"


def _mlflow(es: EvalSet) -> None:
    assert es.cases[14].id == "q15" and es.cases[14].expected_facts == []
    assert es.cases[2].expected_facts == ["convolutional", "LSTM"]
    assert (es.cases[2].expected_retrieved_context or [])[0].doc_uri == "battery-health"


def _support(es: EvalSet) -> None:
    ref = (es.cases[1].reference or [])[0]
    assert ref.user_input.text == "Can you check the status of my order OD179190?"
    assert [s.kind for s in ref.steps] == ["tool_call", "tool_call", "tool_response"]
    assert es.cases[1].metadata["difficulty"] == "easy"


def _hybrid(es: EvalSet) -> None:
    assert es.name == "Founder Validation Agent - Official Vertex AI Eval"
    assert _calls(es, 9) == ["clarify_idea", "identify_risky_assumptions"]


def _fx(es: EvalSet) -> None:
    assert es.cases[1].id == "usd_to_jpy"
    assert _first_text(es, 1) == "How much is 50 US dollars in Japanese yen?"


def _smoke(es: EvalSet) -> None:
    assert [r.id for r in es.cases[0].rubrics] == ["relevance", "helpfulness"]
    assert es.description is not None and "\u2014" in es.description


def _criteria(*names: str) -> Check:
    def check(cfg: EvalConfig) -> None:
        assert sorted(cfg.criteria) == sorted(names)

    return check


# path -> (format, number of cases, checks); format "adk-config" goes through load_config.
FILES: dict[str, tuple[str, int, Check]] = {
    "adk/camelcase_founder_validation/founder_validation_agent_eval.evalset.json": (
        "adk",
        10,
        _founder,
    ),
    "adk/conversation_scenario/conversation_scenario.test.json": ("adk", 1, _cs_test),
    "adk/conversation_scenario/test_config.json": ("adk-config", 0, _criteria("hallucinations_v1")),
    "adk/crypto_payroll/crypto_payroll_eval_set.evalset.json": ("adk", 6, _crypto),
    "adk/elicitation_agent/elicitation_flow.test.json": ("adk", 1, _elicitation),
    "adk/home_automation/simple_test.test.json": ("adk", 1, _home),
    "adk/legacy_trip_planner/test_config.json": (
        "adk-config",
        0,
        _criteria("response_match_score"),
    ),
    "adk/legacy_trip_planner/trip_inquiry.test.json": ("adk-legacy", 1, _legacy),
    "adk/live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json": ("adk", 2, _live),
    "adk/long_horizon_harness/eval_config.json": (
        "adk-config",
        0,
        _criteria("rubric_based_final_response_quality_v1"),
    ),
    "adk/long_horizon_harness/plot_artifact_journey.evalset.json": ("adk", 1, _plot),
    "adk/new_hire_onboarding/eval_config.json": (
        "adk-config",
        0,
        _criteria("tool_trajectory_avg_score", "final_response_match_v2"),
    ),
    "adk/samples_rubric_criteria/eval_config.json": (
        "adk-config",
        0,
        _criteria("rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1"),
    ),
    "adk/samples_user_simulation/conversation_scenarios.json": ("adk", 2, _scenarios),
    "adk/samples_user_simulation/eval_config.json": (
        "adk-config",
        0,
        _criteria("hallucinations_v1", "per_turn_user_simulator_quality_v1"),
    ),
    "adk/trip_planner/trip_inquiry_multi_turn.test.json": ("adk", 1, _multi_turn),
    "adk/trpc_agent_go/math-basic.evalset.json": ("adk", 2, _math),
    "ces/bella_notte/evaluationExpectations/No_Technical_Leakage.json": ("ces", 0, _leakage),
    "ces/bella_notte/evaluations/Event_Prefill_-_Party_Size_Skipped.json": ("ces", 1, _prefill),
    "ces/bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json": ("ces", 1, _off_rails),
    "ces/bella_notte/evaluations/Scenario_-_Large_Party_Rejection.json": ("ces", 1, _scenario),
    "ces/scrapi_yaml/exported_eval_example.yaml": ("ces", 1, _exported),
    "ces/scrapi_yaml/golden_eval_example.yaml": ("ces", 3, _golden_yaml),
    "mlflow/eval_set.jsonl": ("mlflow", 15, _mlflow),
    "vertex/customer_support_eval.json": ("vertex", 3, _support),
    "vertex/eval_dataset.json": ("vertex", 10, _hybrid),
    "vertex/fx-dataset.json": ("vertex", 6, _fx),
    "vertex/smoke-dataset.json": ("vertex", 1, _smoke),
}
# Files that are not eval sets on their own, each with its own test below.
SPECIAL = {
    "SOURCES.md",
    "adk/legacy_trip_planner/initial.session.json",
    "ces/scrapi_yaml/turn_eval_example.yaml",
}


def _all_files() -> set[str]:
    return {p.relative_to(REALWORLD).as_posix() for p in REALWORLD.rglob("*") if p.is_file()}


def test_the_folder_holds_exactly_the_known_files() -> None:
    files = _all_files()
    unknown = files - set(FILES) - SPECIAL
    missing = (set(FILES) | SPECIAL) - files
    assert not unknown, f"new real-world files this test does not cover: {sorted(unknown)}"
    assert not missing, f"files this test expects but the folder lacks: {sorted(missing)}"


@pytest.mark.parametrize("rel", sorted(FILES))
def test_real_world_file_loads(rel: str) -> None:
    fmt, count, check = FILES[rel]
    path = REALWORLD / rel
    assert detect_format(read_structured(path), path) == fmt
    if fmt == "adk-config":
        check(load_config(path))
        return
    evalset = load(path, mapping=MLFLOW_MAP if fmt == "mlflow" else None)
    assert len(evalset.cases) == count
    check(evalset)


@pytest.mark.parametrize("rel", sorted(FILES))
def test_exactly_one_format_claims_each_file(rel: str) -> None:
    path = REALWORLD / rel
    data = read_structured(path)
    claims = [name for name in FORMAT_MODULES if format_module(name).detect(path, data)]
    assert claims == [FILES[rel][0]]


@pytest.mark.parametrize(
    "rel", sorted(r for r, (fmt, _, _) in FILES.items() if fmt in ("vertex", "mlflow", "ces"))
)
def test_written_files_are_claimed_by_their_own_format_only(rel: str, tmp_path: Path) -> None:
    fmt = FILES[rel][0]
    evalset = load(REALWORLD / rel, mapping=MLFLOW_MAP if fmt == "mlflow" else None)
    out = tmp_path / Path(rel).name
    save(evalset, out, fmt)
    data = read_structured(out)
    assert [name for name in FORMAT_MODULES if format_module(name).detect(out, data)] == [fmt]


def test_sources_lists_every_file() -> None:
    sources = (REALWORLD / "SOURCES.md").read_text(encoding="utf-8")
    for rel in _all_files() - {"SOURCES.md"}:
        assert rel in sources, rel


def test_the_initial_session_file_is_not_an_eval_set_by_itself() -> None:
    path = REALWORLD / "adk/legacy_trip_planner/initial.session.json"
    with pytest.raises(UnknownFormatError):
        detect_format(read_structured(path), path)
    # It is read beside the legacy test file instead (see _legacy).
    assert read_structured(path)["state"]["origin"] == "San Francisco"


def test_the_scrapi_turn_eval_file_is_refused_with_a_reason() -> None:
    path = REALWORLD / "ces/scrapi_yaml/turn_eval_example.yaml"
    assert detect_format(read_structured(path), path) == "ces"
    with pytest.raises(InputError, match="turn-eval"):
        load(path)
