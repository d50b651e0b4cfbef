"""ADK agents end to end: loaded from a folder, run by the engine and by `assay eval`.

The test agent folder (adk_fixtures/travel_agent) runs on the scripted test model; the
README's example (examples/adk_weather) runs offline on its own stand-in model in a
real subprocess.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from adk_fixtures.scripted import script
from adk_fixtures.travel_agent import agent as travel
from typer.testing import CliRunner

from assay.agents.adk import AdkAgent, is_adk_agent, load_adk_agent
from assay.agents.loader import load_agent
from assay.agents.tools import ToolBehavior
from assay.cli import app
from assay.core.cases import EvalCase, EvalSet, Expectation, ToolCall, ToolResponse, Turn
from assay.core.results import Status
from assay.engine import RunOptions, arun
from assay.engine.replay import RunMethod
from assay.errors import AgentError
from assay.formats import load
from assay.metrics.base import Metric
from assay.metrics.registry import build_metric

FIXTURES = Path(__file__).parent / "adk_fixtures"
TRAVEL_DIR = FIXTURES / "travel_agent"
EVALSET = FIXTURES / "travel.evalset.json"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def travel_model() -> Iterator[None]:
    travel.BOOKINGS.clear()
    with script(travel.MODEL, travel.travel_rule):
        yield


def folder_bookings() -> list[str]:
    """The bookings of the agent loaded from its folder (a top-level `travel_agent`)."""
    loaded: list[str] = importlib.import_module("travel_agent.agent").BOOKINGS
    return loaded


@pytest.fixture
def fresh_folder_bookings() -> None:
    load_adk_agent(TRAVEL_DIR)  # imports the folder, once per process
    folder_bookings().clear()


def metrics() -> list[Metric]:
    return [
        build_metric("tool_trajectory_avg_score", {"threshold": 1.0, "match_type": "EXACT"}),
        build_metric("response_match_score", 0.8),
    ]


async def test_engine_replays_an_adk_eval_set_with_trajectory_metrics(
    travel_model: None, fresh_folder_bookings: None
) -> None:
    agent = load_adk_agent(TRAVEL_DIR)
    assert agent.app_name == "travel_agent" and agent.name == "travel_agent"
    result = await arun([load(EVALSET)], metrics(), agent=agent)
    by_case = {c.case_id: c for c in result.cases}
    assert set(by_case) == {"book_paris", "book_then_thanks"}
    for case in by_case.values():
        assert case.status is Status.PASSED, case
        assert case.metrics["tool_trajectory_avg_score"].score == 1.0
    # STABLE: turn 2 ran in a fresh session seeded with turn 1, and booked nothing new.
    assert sorted(folder_bookings()) == ["LON-PAR-1", "ROM-OSL-1"]
    paris = by_case["book_paris"].invocations[0].actual
    assert [s.kind for s in paris.steps] == [
        "tool_call",
        "tool_response",
        "tool_call",
        "tool_response",
        "variables_update",
    ]
    assert paris.usage is not None and paris.usage.input_tokens > 0
    thanks = by_case["book_then_thanks"].invocations[1].actual
    assert thanks.final_response == "You're welcome." and thanks.tool_calls() == []


async def test_engine_fake_mode_answers_from_golden_mocks(travel_model: None) -> None:
    expected = Turn(
        user_input={"text": "Book a flight from Paris to Rome"},  # type: ignore[arg-type]
        expectations=[
            Expectation(tool_call=ToolCall(name="find_flights")),
            Expectation(tool_call=ToolCall(name="book_flight")),
            Expectation(
                mock_tool_response=ToolResponse(
                    name="book_flight", response={"booking": "MOCK-7", "status": "HELD"}
                )
            ),
            Expectation(
                mock_tool_response=ToolResponse(
                    name="find_flights", response={"flights": [{"id": "PAR-ROM-9"}]}
                )
            ),
        ],
    )
    evalset = EvalSet(id="fake", cases=[EvalCase(id="mocked_booking", reference=[expected])])
    options = RunOptions(tool_behavior=ToolBehavior.FAKE, run_method=RunMethod.NAIVE)
    result = await arun(
        [evalset],
        [build_metric("tool_invocation_score")],
        agent=AdkAgent(travel.root_agent),
        options=options,
    )
    (case,) = result.cases
    turn = case.invocations[0].actual
    assert travel.BOOKINGS == []  # the real booking tool never ran
    assert [c.args for c in turn.tool_calls()] == [
        {"origin": "Paris", "destination": "Rome"},
        {"flight_id": "PAR-ROM-9"},  # the id from the mocked search
    ]
    assert turn.final_response == "Booked flight MOCK-7."
    assert case.metrics["tool_invocation_score"].score == 1.0
    assert case.error is None


def test_cli_evaluates_an_adk_agent_folder(
    travel_model: None, fresh_folder_bookings: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    history = TRAVEL_DIR / ".adk"
    shutil.rmtree(history, ignore_errors=True)
    result = CliRunner().invoke(
        app, ["eval", str(EVALSET), "--agent", str(TRAVEL_DIR), "--no-adk-history"]
    )
    assert result.exit_code == 0, result.output
    assert "Result: 2 passed, 0 failed" in result.output
    assert sorted(folder_bookings()) == ["LON-PAR-1", "ROM-OSL-1"]
    assert not history.exists()  # --no-adk-history: the fixture folder stays as it is


def test_loader_wraps_module_attribute_adk_agents(travel_model: None) -> None:
    agent = load_agent("adk_fixtures.travel_agent.agent:root_agent")
    assert isinstance(agent, AdkAgent)
    assert is_adk_agent(travel.root_agent) and not is_adk_agent(travel.book_flight)


def _folder(tmp_path: Path, name: str, agent_py: str | None, init: str = "") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text(init, encoding="utf-8")
    if agent_py is not None:
        (folder / "agent.py").write_text(agent_py, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("name", "agent_py", "message"),
    [
        ("adk_no_root", "x = 1\n", "no root_agent found"),
        ("adk_broken", "raise RuntimeError('bad config')\n", "RuntimeError: bad config"),
        ("adk_wrong_type", "root_agent = 42\n", "root_agent is a int, not an ADK agent"),
        ("adk_empty", None, "no root_agent found"),
    ],
)
def test_load_adk_agent_errors_name_the_problem(
    tmp_path: Path, name: str, agent_py: str | None, message: str
) -> None:
    with pytest.raises(AgentError, match=message):
        load_adk_agent(_folder(tmp_path, name, agent_py))


def test_load_adk_agent_rejects_non_agent_folders(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="not a directory"):
        load_adk_agent(tmp_path / "missing")
    (tmp_path / "bare").mkdir()
    with pytest.raises(AgentError, match=r"expected agent\.py defining root_agent"):
        load_adk_agent(tmp_path / "bare")
    with pytest.raises(AgentError, match="must be a Python identifier"):
        load_adk_agent(_folder(tmp_path, "my-agent", "root_agent = None\n"))


def test_load_adk_agent_without_google_adk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path, "adk_needs_adk", "root_agent = None\n")
    monkeypatch.setitem(sys.modules, "google.adk", None)
    with pytest.raises(AgentError, match=r"pip install -e '\.\[adk\]'"):
        load_adk_agent(folder)


def test_weather_example_runs_offline_through_the_cli(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    exe = shutil.which("assay")
    args = ["eval", "examples/adk_weather/weather.evalset.json", "--agent", "examples/adk_weather"]
    command = [exe, *args] if exe else [sys.executable, "-m", "assay.cli", *args]
    env = {**os.environ, "ASSAY_EXAMPLE_MODEL": "scripted-weather"}
    proc = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Result: 4 passed, 0 failed, 0 not evaluated (4 cases)" in proc.stdout
    for case in ("weather_paris", "timezone_tokyo", "london_follow_up", "unknown_city"):
        assert case in proc.stdout


def test_weather_example_eval_set_is_a_valid_adk_file() -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    folder = REPO / "examples" / "adk_weather"
    parsed = AdkEvalSet.model_validate_json((folder / "weather.evalset.json").read_text("utf-8"))
    assert len(parsed.eval_cases) == 4
    assert any(len(c.conversation or []) == 2 for c in parsed.eval_cases)
