"""assay's pytest plugin in real pytest sessions (pytester, one subprocess per session).

The sessions collect eval files beside ordinary tests: an ADK agent folder with its eval
set and test_config.json (the weather example on its offline stand-in model), and eval
sets run on a Python callable named by an ini option, a conftest fixture or a marker.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEATHER = REPO / "examples" / "adk_weather"

BOT = '''
def answer(prompt):
    """Knows one capital; says so otherwise."""
    if "France" in prompt:
        return "The capital of France is Paris."
    return "I do not know."
'''


def _evalset(cases: dict[str, tuple[str, str]]) -> str:
    """An ADK eval set of one-turn cases: {case id: (question, expected answer)}."""
    return json.dumps(
        {
            "eval_set_id": "capitals",
            "eval_cases": [
                {
                    "eval_id": case_id,
                    "conversation": [
                        {
                            "invocation_id": f"{case_id}-1",
                            "user_content": {"role": "user", "parts": [{"text": question}]},
                            "final_response": {"role": "model", "parts": [{"text": reply}]},
                        }
                    ],
                }
                for case_id, (question, reply) in cases.items()
            ],
        }
    )


CAPITALS = _evalset(
    {
        "france": ("What is the capital of France?", "The capital of France is Paris."),
        "peru": ("What is the capital of Peru?", "The capital of Peru is Lima."),
    }
)
CONFIG = '{"criteria": {"response_match_score": 0.8}}'


@pytest.fixture
def capitals(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(bot=BOT)
    evals = pytester.mkdir("evals")
    (evals / "test_capitals.evalset.json").write_text(CAPITALS)
    (evals / "test_config.json").write_text(CONFIG)
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k in ("passed", "failed", "errors")}


def test_each_eval_case_is_an_item_with_a_readable_failure(capitals: pytest.Pytester) -> None:
    capitals.makeini("[pytest]\nassay_agent = bot:answer\n")
    result = capitals.runpytest_subprocess("-v", "--junitxml=junit.xml")
    assert _outcomes(result) == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines(
        [
            "*evals/test_capitals.evalset.json::france PASSED*",
            "*evals/test_capitals.evalset.json::peru FAILED*",
        ]
    )
    output = result.stdout.str()
    assert "case peru in capitals: FAILED" in output
    assert "response_match_score: 0 < threshold 0.8" in output
    assert "expected response: 'The capital of Peru is Lima.'" in output
    assert "actual response:   'I do not know.'" in output
    assert "Traceback" not in output and "site-packages" not in output

    suite = ET.parse(capitals.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"france", "peru"}
    failure = cases["peru"].find("failure")
    assert failure is not None and cases["france"].find("failure") is None
    assert "response_match_score: 0 < threshold 0.8" in (failure.text or "")


def test_the_agent_comes_from_a_conftest_fixture_or_a_marker(capitals: pytest.Pytester) -> None:
    capitals.makeconftest(
        """
        import pytest

        @pytest.fixture
        def assay_agent():
            return lambda prompt: "The capital of Peru is Lima."
        """
    )
    assert _outcomes(capitals.runpytest_subprocess()) == {"passed": 1, "failed": 1}
    # A marker wins over the fixture: every case now gets the France answer.
    capitals.makeconftest(
        """
        import pytest

        @pytest.fixture
        def assay_agent():
            return lambda prompt: "The capital of Peru is Lima."

        def pytest_collection_modifyitems(items):
            for item in items:
                item.add_marker(pytest.mark.assay_agent("bot:answer"))
        """
    )
    result = capitals.runpytest_subprocess("-v")
    result.stdout.fnmatch_lines(["*::france PASSED*", "*::peru FAILED*"])


def _weather_folder(pytester: pytest.Pytester) -> Path:
    """The weather agent folder, its eval set named as pytest collects it."""
    folder = pytester.path / "weather"
    shutil.copytree(WEATHER, folder, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    (folder / "weather.evalset.json").rename(folder / "test_weather.evalset.json")
    return folder


def test_an_adk_agent_folder_runs_its_own_eval_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_EXAMPLE_MODEL", "scripted-weather")
    folder = _weather_folder(pytester)
    evalset = json.loads((folder / "test_weather.evalset.json").read_text())
    paris = evalset["eval_cases"][0]["conversation"][0]
    paris["intermediate_data"]["tool_uses"][0]["args"] = {"city": "Lyon"}
    (folder / "test_weather.evalset.json").write_text(json.dumps(evalset))

    result = pytester.runpytest_subprocess("-v")
    assert _outcomes(result) == {"passed": 3, "failed": 1}
    result.stdout.fnmatch_lines(["*test_weather.evalset.json::weather_paris FAILED*"])
    output = result.stdout.str()
    assert "tool_trajectory_avg_score: 0 < threshold 1.0" in output
    assert "expected tool calls: get_weather(city='Lyon')" in output
    assert "actual tool calls:   get_weather(city='Paris')" in output


ADK_STYLE_TEST = """
import pytest
from assay.adk import AgentEvaluator


@pytest.mark.asyncio
async def test_weather_agent():
    await AgentEvaluator.evaluate("weather", "weather/{file}", num_runs=1)
"""


@pytest.mark.parametrize(("file", "passes"), [("weather.test.json", True), ("drift.json", False)])
def test_an_adk_style_test_file_with_assays_agent_evaluator(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, file: str, passes: bool
) -> None:
    monkeypatch.setenv("ASSAY_EXAMPLE_MODEL", "scripted-weather")
    folder = _weather_folder(pytester)
    evalset = json.loads((folder / "test_weather.evalset.json").read_text())
    (folder / "test_weather.evalset.json").unlink()
    if not passes:
        # The golden answer says Fahrenheit: the reply drifts below ROUGE's 0.6.
        turn = evalset["eval_cases"][0]["conversation"][0]
        turn["final_response"]["parts"][0]["text"] = "Paris: 70 degrees Fahrenheit, clear skies"
    (folder / file).write_text(json.dumps(evalset))
    pytester.makepyfile(test_agent=ADK_STYLE_TEST.format(file=file))
    pytester.makeini("[pytest]\nassay_collect = false\n")
    result = pytester.runpytest_subprocess("-p", "asyncio")
    if passes:
        assert _outcomes(result) == {"passed": 1}
        return
    assert _outcomes(result) == {"failed": 1}
    result.stdout.fnmatch_lines(
        [
            "*Following are all the test failures.*",
            "*response_match_score for weather Failed. Expected 0.6, but got 0.*",
        ]
    )


def test_assert_eval_in_a_hand_written_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bot=BOT)
    (pytester.path / "capitals.json").write_text(CAPITALS)
    pytester.makepyfile(
        test_handwritten="""
        from assay.testing import assert_eval
        from bot import answer

        def test_france():
            result = assert_eval("capitals.json", ["response_match_score"], answer)
            assert result.cases[0].case_id == "france"

        def test_everything():
            assert_eval("capitals.json", {"response_match_score": 0.8}, answer)
        """
    )
    # One case only in the first test: drop Peru from its copy.
    data = json.loads(CAPITALS)
    data["eval_cases"] = data["eval_cases"][:1]
    (pytester.path / "capitals.json").write_text(json.dumps(data))
    (pytester.path / "all_capitals.json").write_text(CAPITALS)
    test_file = pytester.path / "test_handwritten.py"
    test_file.write_text(test_file.read_text().replace(
        'assert_eval("capitals.json", {', 'assert_eval("all_capitals.json", {'
    ))  # fmt: skip
    result = pytester.runpytest_subprocess()
    assert _outcomes(result) == {"passed": 1, "failed": 1}
    output = result.stdout.str()
    assert "EvalFailure: 1 of 2 case runs did not pass" in output
    assert "response_match_score: 0 < threshold 0.8" in output


def test_a_broken_eval_file_is_one_clear_error_and_the_rest_still_run(
    capitals: pytest.Pytester,
) -> None:
    capitals.makeini("[pytest]\nassay_agent = bot:answer\n")
    (capitals.path / "evals" / "test_broken.evalset.json").write_text('{"eval_cases": [')
    result = capitals.runpytest_subprocess()
    assert _outcomes(result) == {"passed": 1, "failed": 2}
    output = result.stdout.str()
    assert "cannot read this eval file: file " in output
    assert "test_broken.evalset.json" in output and "Traceback" not in output


def test_collection_can_be_turned_off(capitals: pytest.Pytester) -> None:
    capitals.makeini("[pytest]\nassay_collect = false\n")
    result = capitals.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
