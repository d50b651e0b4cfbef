"""`assay.adk.AgentEvaluator` against google-adk's own `AgentEvaluator`, on the same agent.

Both evaluators run the travel agent (scripted test model, no network) on the same eval
set and config: they must pass together, fail together, and name the same criteria with
the same scores and thresholds.
"""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adk_fixtures.scripted import call, last_function_response, say, script, user_texts
from adk_fixtures.travel_agent import agent as travel
from google.adk.evaluation.agent_evaluator import AgentEvaluator as AdkAgentEvaluator
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse

from assay.adk import AgentEvaluator
from assay.errors import AgentError

FIXTURES = Path(__file__).resolve().parents[1] / "agents" / "adk_fixtures"
MODULE = "adk_fixtures.travel_agent"
CONFIG = '{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}'
FAILURE = re.compile(r"^(\w+) for (\S+) Failed\. Expected ([\d.]+), but got ([\d.]+)\.$", re.M)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """An ADK test folder: the travel cases as `travel.test.json` beside test_config.json."""
    shutil.copy(FIXTURES / "travel.evalset.json", tmp_path / "travel.test.json")
    (tmp_path / "test_config.json").write_text(CONFIG)
    return tmp_path


@pytest.fixture
def travel_model() -> Iterator[None]:
    with script(travel.MODEL, travel.travel_rule):
        yield


def wrong_city_rule(request: LlmRequest) -> LlmResponse:
    """Searches Paris → Rome whatever was asked: a wrong argument, then a drifting reply."""
    answer = last_function_response(request)
    if answer is not None and answer.name == "find_flights":
        return say("There is a flight to Rome, but I did not book it.")
    texts = user_texts(request)
    if texts and "from" in texts[-1]:
        return travel.reply(call("find_flights", origin="Paris", destination="Rome"))
    return say("You're welcome.")


async def _failure_lines(evaluator: Any, suite: Path) -> set[tuple[str, float, float]]:
    with pytest.raises(AssertionError) as caught:
        await evaluator.evaluate(MODULE, str(suite), num_runs=1, print_detailed_results=False)
    message = str(caught.value)
    assert message.startswith("Following are all the test failures.")
    found = FAILURE.findall(message)
    assert found, message
    assert {module for _, module, _, _ in found} == {MODULE}
    return {(name, float(threshold), float(score)) for name, _, threshold, score in found}


async def test_passes_where_adk_passes(suite: Path, travel_model: None) -> None:
    await AdkAgentEvaluator.evaluate(MODULE, str(suite), num_runs=1, print_detailed_results=False)
    await AgentEvaluator.evaluate(MODULE, str(suite), num_runs=2)


async def test_fails_where_adk_fails_with_the_same_criteria_and_scores(suite: Path) -> None:
    with script(travel.MODEL, wrong_city_rule):
        ours = await _failure_lines(AgentEvaluator, suite)
        theirs = await _failure_lines(AdkAgentEvaluator, suite)
    # The same criteria fail for the same cases, with the same scores and thresholds.
    assert _rounded(ours) == _rounded(theirs)
    assert len(ours) == 4  # both cases miss both criteria


def _rounded(lines: set[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    return sorted((name, threshold, round(score, 9)) for name, threshold, score in lines)


async def test_the_failure_shows_the_trajectory_and_response_difference(suite: Path) -> None:
    with script(travel.MODEL, wrong_city_rule), pytest.raises(AssertionError) as caught:
        await AgentEvaluator.evaluate(MODULE, str(suite / "travel.test.json"), num_runs=1)
    message = str(caught.value)
    assert "tool_trajectory_avg_score for adk_fixtures.travel_agent Failed. Expected 1.0" in message
    assert "expected tool calls: find_flights(origin='London', destination='Paris')" in message
    assert "actual tool calls:   find_flights(origin='Paris', destination='Rome')" in message
    assert "actual response:   'There is a flight to Rome, but I did not book it.'" in message


async def test_evaluate_eval_set_takes_adks_own_objects(
    suite: Path, travel_model: None, tmp_path: Path
) -> None:
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    eval_set = AdkEvalSet.model_validate_json((suite / "travel.test.json").read_text())
    config = AdkEvalConfig.model_validate_json(CONFIG)
    manager = LocalEvalSetResultsManager(agents_dir=str(tmp_path / "agents"))
    out = tmp_path / "out" / "results.csv"
    for _ in range(2):
        await AgentEvaluator.evaluate_eval_set(
            MODULE,
            eval_set,
            eval_config=config,
            num_runs=1,
            output_file=str(out),
            app_name="travel_app",
            eval_set_results_manager=manager,
        )
    # Saved through ADK's manager, which lists and loads them back.
    saved = manager.list_eval_set_results("travel_app")
    assert len(saved) == 2
    loaded = manager.get_eval_set_result("travel_app", saved[0])
    assert {c.eval_id for c in loaded.eval_case_results} == {"book_paris", "book_then_thanks"}
    # ADK's CSV: one row per metric per invocation, appended with one header.
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 3  # two calls x two metrics x three invocations
    assert {r["metric_name"] for r in rows} == {"tool_trajectory_avg_score", "response_match_score"}
    assert {r["eval_status"] for r in rows} == {"PASSED"}


async def test_deprecated_criteria_and_sub_agents(suite: Path, travel_model: None) -> None:
    eval_set = (suite / "travel.test.json").read_text()
    import json

    await AgentEvaluator.evaluate_eval_set(
        MODULE, json.loads(eval_set), criteria={"tool_trajectory_avg_score": 1.0}, num_runs=1
    )
    with pytest.raises(ValueError, match="Sub-Agent 'nobody' not found"):
        await AgentEvaluator.evaluate_eval_set(
            MODULE, json.loads(eval_set), criteria={"x": 1.0}, agent_name="nobody"
        )


@pytest.mark.parametrize(
    ("call_args", "error", "message"),
    [
        ({"num_runs": 0}, ValueError, "`num_runs` must be at least 1, got 0"),
        ({"agent_module": "json"}, ValueError, "does not have a member named `agent`"),
        ({"agent_module": "no_such_pkg_xyz"}, AgentError, "cannot import it"),
        ({"app_name": None, "eval_set_results_manager": object()}, ValueError, "app_name"),
    ],
)
async def test_bad_arguments_fail_like_adk(
    suite: Path, call_args: dict[str, Any], error: type[Exception], message: str
) -> None:
    kwargs: dict[str, Any] = {
        "agent_module": MODULE,
        "eval_dataset_file_path_or_dir": str(suite),
        **call_args,
    }
    with pytest.raises(error, match=message):
        await AgentEvaluator.evaluate(**kwargs)


async def test_a_folder_without_test_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"No `\*\.test\.json` eval files found"):
        await AgentEvaluator.evaluate(MODULE, str(tmp_path))


async def test_each_evaluation_is_a_run_session_that_records_nothing(
    suite: Path, travel_model: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cases run in a `RunSession` (the life every run has: its collector sees each
    case run, the run ends finished) with no store: ADK's evaluator keeps none."""
    from assay.core.results import EvalResult
    from assay.session.run_session import RunSession

    sessions: list[tuple[RunSession, EvalResult]] = []
    session_arun = RunSession.arun

    async def spy(self: RunSession) -> EvalResult:
        result = await session_arun(self)
        sessions.append((self, result))
        return result

    monkeypatch.setattr(RunSession, "arun", spy)
    await AgentEvaluator.evaluate(MODULE, str(suite), num_runs=2, print_detailed_results=False)
    assert len(sessions) == 1
    session, result = sessions[0]
    assert session.store is None and session.run_id is None and not session.opened
    assert session.agent is not None and session.options.runs == 2
    assert [e.id for e in session.evalsets] == [result.eval_set_id]
    assert {"tool_trajectory_avg_score", "response_match_score"} <= {
        m.name for m in session.metrics
    }
    # Two cases, two runs each: every case run reached the session as it finished.
    assert session.total == 4
    assert len(session.partial_result().cases) == len(result.cases) == 4
    assert {c.case_id for c in result.cases} == {"book_paris", "book_then_thanks"}
