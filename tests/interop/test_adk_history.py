"""ADK eval history: what `assay eval --agent <ADK folder>` writes, ADK's own manager reads.

The agent folder is made in a temporary directory (so the repository's fixtures stay
untouched) and runs the travel agent on the scripted test model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from adk_fixtures.scripted import script
from adk_fixtures.travel_agent import agent as travel
from google.adk.evaluation.evaluator import EvalStatus
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from typer.testing import CliRunner

from assay.cli import app
from assay.core.results import EvalResult
from assay.errors import AssayError
from assay.interop.adk_history import AdkApp, app_for_agent_spec, write_history

REPO = Path(__file__).resolve().parents[2]
EVALSET = REPO / "tests" / "agents" / "adk_fixtures" / "travel.evalset.json"
APP = "history_travel"


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An `adk web`-style agents folder holding one app, `history_travel`."""
    root = tmp_path_factory.mktemp("agents")
    folder = root / APP
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(
        "from adk_fixtures.travel_agent.agent import root_agent\n\n__all__ = ['root_agent']\n"
    )
    return root


@pytest.fixture
def travel_model() -> Iterator[None]:
    with script(travel.MODEL, travel.travel_rule):
        yield


def _eval(agents_dir: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        app,
        ["eval", str(EVALSET), "--agent", str(agents_dir / APP), "--no-store", *extra],
    )
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_adk_results_manager_lists_and_loads_what_assay_wrote(
    agents_dir: Path, travel_model: None
) -> None:
    history = agents_dir / APP / ".adk" / "eval_history"
    before = set(history.glob("*")) if history.exists() else set()
    output = _eval(agents_dir)
    assert "Result: 2 passed, 0 failed" in output
    (written,) = set(history.glob("*.evalset_result.json")) - before
    assert f"wrote ADK eval history {written}" in output.replace("\n", "")

    manager = LocalEvalSetResultsManager(agents_dir=str(agents_dir))
    result_id = written.name.removesuffix(".evalset_result.json")
    assert result_id in manager.list_eval_set_results(APP)
    assert result_id.startswith(f"{APP}_travel_")

    loaded = manager.get_eval_set_result(APP, result_id)
    assert loaded.eval_set_id == "travel"
    by_id = {c.eval_id: c for c in loaded.eval_case_results}
    assert set(by_id) == {"book_paris", "book_then_thanks"}
    paris = by_id["book_paris"]
    assert paris.final_eval_status == EvalStatus.PASSED
    overall = {m.metric_name: m for m in paris.overall_eval_metric_results}
    assert overall["tool_trajectory_avg_score"].score == 1.0
    assert overall["tool_trajectory_avg_score"].threshold == 1.0
    (invocation,) = paris.eval_metric_result_per_invocation
    actual = invocation.actual_invocation
    assert actual.final_response is not None
    assert actual.final_response.parts is not None
    assert actual.final_response.parts[0].text == "Booked flight LON-PAR-1."
    tools = actual.intermediate_data.tool_uses  # type: ignore[union-attr]
    assert [t.name for t in tools] == ["find_flights", "book_flight"]
    assert tools[0].args == {"origin": "London", "destination": "Paris"}
    assert len(by_id["book_then_thanks"].eval_metric_result_per_invocation) == 2


def test_failed_cases_are_failed_in_adk_history(agents_dir: Path, travel_model: None) -> None:
    history = agents_dir / APP / ".adk" / "eval_history"
    before = set(history.glob("*")) if history.exists() else set()
    # A reply far from the reference fails response_match_score for every case.
    with script(travel.MODEL, lambda request: travel.say("Sorry, no.")):
        output = _eval(agents_dir, "--metric", "response_match_score=0.8")
    assert "0 passed, 2 failed" in output
    (written,) = set(history.glob("*.evalset_result.json")) - before
    doc = json.loads(written.read_text())
    assert {c["final_eval_status"] for c in doc["eval_case_results"]} == {2}
    loaded = LocalEvalSetResultsManager(str(agents_dir)).get_eval_set_result(
        APP, written.name.removesuffix(".evalset_result.json")
    )
    for case in loaded.eval_case_results:
        (metric,) = case.overall_eval_metric_results
        assert metric.eval_status == EvalStatus.FAILED
        assert metric.score is not None and metric.score < 0.8


def test_no_adk_history_writes_nothing(agents_dir: Path, travel_model: None) -> None:
    history = agents_dir / APP / ".adk" / "eval_history"
    before = sorted(history.glob("*")) if history.exists() else []
    output = _eval(agents_dir, "--no-adk-history")
    assert "Result: 2 passed" in output and "ADK eval history" not in output
    assert (sorted(history.glob("*")) if history.exists() else []) == before


def test_agent_specs_name_their_adk_app_folder(tmp_path: Path) -> None:
    weather = REPO / "examples" / "adk_weather"
    assert app_for_agent_spec(str(weather)) == AdkApp(REPO / "examples", "adk_weather")
    # module:attribute names the folder that holds the module, as adk web would.
    assert app_for_agent_spec("adk_fixtures.travel_agent.agent:root_agent") == AdkApp(
        REPO / "tests" / "agents" / "adk_fixtures", "travel_agent"
    )
    assert app_for_agent_spec("https://agent.example/run") is None
    assert app_for_agent_spec("no_such_module_here:agent") is None


def test_an_unwritable_history_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "app"
    blocker.write_text("a file where the agent folder should be")
    with pytest.raises(AssayError, match=r"cannot write ADK eval history .*--no-adk-history"):
        write_history(EvalResult({}, cases=[]), AdkApp(tmp_path, "app"))


def test_the_python_api_writes_history_for_an_agent_object(
    tmp_path: Path, travel_model: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assay

    # An app folder whose agent.py defines its own root_agent (a copy, so no other
    # imported module holds the same object), imported the way adk web imports it.
    folder = tmp_path / "api_travel"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(
        "from adk_fixtures.travel_agent.agent import root_agent as _base\n\n"
        "root_agent = _base.model_copy()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("api_travel.agent")
    history = folder / ".adk" / "eval_history"
    assay.evaluate(EVALSET, agent=module.root_agent)  # off by default from Python
    assert not history.exists()
    result = assay.evaluate(EVALSET, agent=module.root_agent, adk_history=True)
    (written,) = history.glob("*.evalset_result.json")
    manager = LocalEvalSetResultsManager(agents_dir=str(tmp_path))
    loaded = manager.get_eval_set_result(
        "api_travel", written.name.removesuffix(".evalset_result.json")
    )
    assert {c.eval_id for c in loaded.eval_case_results} == {c.case_id for c in result.cases}

    # An explicit folder wins; a re-exported agent (two folders) must be named.
    elsewhere = tmp_path / "named" / "api_travel"
    elsewhere.mkdir(parents=True)
    assay.evaluate(EVALSET, agent=module.root_agent, adk_history=str(elsewhere))
    assert len(list((elsewhere / ".adk" / "eval_history").glob("*.json"))) == 1
    with pytest.raises(AssayError, match="not an agent folder"):
        assay.evaluate(EVALSET, agent=module.root_agent, adk_history=str(tmp_path / "nope"))
    again = tmp_path / "reexport"
    again.mkdir()
    (again / "agent.py").write_text("from api_travel.agent import root_agent\n")
    importlib.import_module("reexport.agent")
    with pytest.raises(AssayError, match="several folders"):
        assay.evaluate(EVALSET, agent=module.root_agent, adk_history=True)
