"""The bundled example: its tools, its agent, and the README's main command end to end."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from examples.home_automation import home
from examples.home_automation.agent import root_agent
from typer.testing import CliRunner

from assay.cli import app

REPO = Path(__file__).resolve().parents[2]
EXPECTED_PASSING = {
    "turn_off_device_by_id",
    "list_bedroom_devices",
    "kitchen_light_status",
    "set_bedroom_temperature",
    "bedroom_energy_week",
    "unknown_device",
    "tv_follow_up",
    "kitchen_warmer",
    "light_then_list",
    "bedroom_evening",
}
EXPECTED_FAILING = {
    "set_temperature_fahrenheit",
    "energy_today",
    "two_devices_off",
    "conditional_switch_off",
}


def readme_command() -> str:
    """The one install-and-run command of the README, without the install part."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^pip install -e \. && (assay eval .+)$", text, re.MULTILINE)
    assert match, "README has no 'pip install -e . && assay eval ...' line"
    return match.group(1).strip()


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """The examples folder copied to a fresh directory (the run stores .assay/ there)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def _statuses(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if len(cells) >= 2 and cells[1] in ("PASSED", "FAILED", "NOT_EVALUATED"):
            found[cells[0]] = cells[1]
    return found


def _check_output(output: str) -> None:
    statuses = _statuses(output)
    assert {k for k, v in statuses.items() if v == "PASSED"} == EXPECTED_PASSING
    assert {k for k, v in statuses.items() if v == "FAILED"} == EXPECTED_FAILING
    assert "Result: 10 passed, 4 failed, 0 not evaluated (14 cases)" in output


def test_tools_change_state_and_report_errors() -> None:
    h = home.new_home()
    assert home.set_device_info(h, "device_3", "ON") == {"device_id": "device_3", "status": "ON"}
    assert home.get_device_info(h, "device_3")["status"] == "ON"
    assert home.new_home()["devices"]["device_3"]["status"] == "OFF"  # sessions are isolated
    assert "not found" in home.set_device_info(h, "device_9", "ON")["error"]
    assert "ON or OFF" in home.set_device_info(h, "device_1", "DIM")["error"]
    assert "between 10 and 30" in home.set_temperature(h, "Bedroom", 72)["error"]
    assert home.set_temperature(h, "bedroom", 23) == {"location": "Bedroom", "temperature": 23}
    assert "no thermostat" in home.get_temperature(h, "Garage")["error"]
    kitchen = home.list_devices(h, "Kitchen")
    assert [d["device_id"] for d in kitchen["devices"]] == ["device_3"]
    report = home.get_energy_report(h, period="week", location="Bedroom")
    assert report["total_kwh"] == 4.8 and report["top_device"] == "Bedroom Fan"
    assert "period" in home.get_energy_report(h, period="year")["error"]


def test_agent_keeps_session_state_across_turns() -> None:
    state: dict[str, object] = {}
    first = root_agent("What's the temperature in the kitchen?", state)
    assert first.final_response == "It is 20°C in the Kitchen."
    second = root_agent("Make it 2 degrees warmer.", state)
    assert [(c.name, c.args) for c in second.tool_calls()] == [
        ("get_temperature", {"location": "Kitchen"}),
        ("set_temperature", {"location": "Kitchen", "temperature": 22}),
    ]
    assert second.tool_responses()[-1].response == {"location": "Kitchen", "temperature": 22}
    # A new session starts from the default home again.
    fresh = root_agent("What's the temperature in the kitchen?", {})
    assert fresh.final_response == "It is 20°C in the Kitchen."
    assert root_agent("Turn it off.", {}).final_response == "Which device do you mean?"
    assert root_agent("hello", {}).tool_calls() == []


def test_eval_set_and_config_are_valid_adk_files() -> None:
    eval_set = pytest.importorskip("google.adk.evaluation.eval_set")
    folder = REPO / "examples" / "home_automation"
    data = json.loads((folder / "home.evalset.json").read_text(encoding="utf-8"))
    parsed = eval_set.EvalSet.model_validate(data)
    ids = {case.eval_id for case in parsed.eval_cases}
    assert ids == EXPECTED_PASSING | EXPECTED_FAILING
    assert sum(len(c.conversation or []) > 1 for c in parsed.eval_cases) >= 4  # multi-turn
    config = json.loads((folder / "test_config.json").read_text(encoding="utf-8"))
    assert set(config["criteria"]) == {
        "tool_trajectory_avg_score",
        "response_match_score",
        "trajectory_recall",
    }


def test_readme_command_through_cli_runner(
    example_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(example_copy)
    args = shlex.split(readme_command())
    assert args[0] == "assay"
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 1, result.output
    _check_output(result.output)
    assert (example_copy / ".assay" / "assay.db").is_file()


def test_readme_command_in_a_real_subprocess(example_copy: Path) -> None:
    exe = shutil.which("assay")
    args = shlex.split(readme_command())
    command = [exe, *args[1:]] if exe else [sys.executable, "-m", "assay.cli", *args[1:]]
    proc = subprocess.run(
        command, cwd=example_copy, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    _check_output(proc.stdout)
    assert "Traceback" not in proc.stderr


def test_json_report_of_the_example_is_read_by_adk(
    example_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")
    monkeypatch.chdir(example_copy)
    args = shlex.split(readme_command())[1:]
    result = CliRunner().invoke(app, [*args, "--out", "results.json", "--no-store",
                                      "--timeout", "0"])  # fmt: skip
    assert result.exit_code == 1, result.output
    doc = json.loads((example_copy / "results.json").read_text(encoding="utf-8"))
    assert doc["eval_set_ids"] == ["home_automation"]
    for case in doc["cases"]:
        parsed = eval_result.EvalCaseResult.model_validate(case)
        expected = 1 if parsed.eval_id in EXPECTED_PASSING else 2
        assert parsed.final_eval_status.value == expected
    multi = next(c for c in doc["cases"] if c["eval_id"] == "kitchen_warmer")
    second = multi["eval_metric_result_per_invocation"][1]
    tools = second["actual_invocation"]["intermediate_data"]
    assert [t["name"] for t in tools["tool_uses"]] == ["get_temperature", "set_temperature"]
    assert tools["tool_responses"][-1]["response"] == {"location": "Kitchen", "temperature": 22}
    assert second["expected_invocation"]["invocation_id"] == "kitchen_warmer-2"
