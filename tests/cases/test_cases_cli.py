"""`assay cases`: blessing a run of the bundled home-automation agent, adding cases
from trace files and CES conversations, and refusing what it cannot write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.formats import load

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "examples" / "home_automation"
TRACES = REPO / "examples" / "traces"
AGENT = "examples.home_automation.agent:root_agent"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def evaluate(evalset: Path, store: str, *extra: str) -> dict[str, str]:
    """Run the home-automation agent on `evalset`; the status of each case."""
    code, out = cli(
        "eval", str(evalset), "--agent", AGENT, "--config", str(HOME / "test_config.json"),
        "--store", store, *extra,
    )  # fmt: skip
    assert code in (0, 1), out
    from assay.store.reading import load_stored_run

    _info, result = load_stored_run(store, "latest")
    return {c.case_id: c.status.value for c in result.cases}


@pytest.fixture
def home_copy(tmp_path: Path) -> Path:
    target = tmp_path / "home.evalset.json"
    shutil.copy(HOME / "home.evalset.json", target)
    return target


def test_a_blessed_failing_case_passes_on_the_next_run(home_copy: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    before = home_copy.read_text(encoding="utf-8")
    assert evaluate(home_copy, store)["two_devices_off"] == "FAILED"

    code, out = cli(
        "cases", "add", str(home_copy), "--from-run", "latest", "--case", "two_devices_off",
        "--update", "--store", store,
    )  # fmt: skip
    assert code == 0, out
    assert "updated two_devices_off" in out and "google-adk EvalSet" in out

    statuses = evaluate(home_copy, store)
    assert statuses["two_devices_off"] == "PASSED"
    # the other failing cases were not touched, and still fail
    assert statuses["two_devices_off"] == "PASSED" and statuses["energy_today"] == "FAILED"
    after = json.loads(home_copy.read_text(encoding="utf-8"))
    old = json.loads(before)
    for was, now in zip(old["eval_cases"], after["eval_cases"], strict=True):
        if was["eval_id"] != "two_devices_off":
            assert was == now
    blessed = next(c for c in after["eval_cases"] if c["eval_id"] == "two_devices_off")
    # the session input of the case is kept; the expectations are what the agent did
    assert blessed["session_input"] == {
        "app_name": "home_automation",
        "user_id": "eval_user",
        "state": {},
    }
    uses = blessed["conversation"][0]["intermediate_data"]["tool_uses"]
    assert uses == [{"name": "set_device_info", "args": {"device_id": "device_1", "status": "OFF"}}]


def test_the_blessed_file_loads_in_google_adk(home_copy: Path, tmp_path: Path) -> None:
    from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    evaluate(home_copy, store)
    code, out = cli(
        "cases", "add", str(home_copy), "--from-run", "latest", "--failed", "--update",
        "--store", store,
    )  # fmt: skip
    assert code == 0, out
    assert (
        "updated set_temperature_fahrenheit, energy_today, two_devices_off, conditional_switch_off"
        in out
    )
    agents = tmp_path / "agents"
    (agents / "app").mkdir(parents=True)
    shutil.copy(home_copy, agents / "app" / "home_automation.evalset.json")
    loaded = LocalEvalSetsManager(str(agents)).get_eval_set("app", "home_automation")
    assert loaded is not None and len(loaded.eval_cases) == 14
    # and every case now passes
    assert set(evaluate(home_copy, store).values()) == {"PASSED"}


def test_add_then_rm_gives_back_the_original_bytes(home_copy: Path, tmp_path: Path) -> None:
    original = home_copy.read_bytes()
    code, out = cli(
        "cases", "add", str(home_copy), "--from-trace", str(TRACES / "adk_weather.otlp.jsonl")
    )
    assert code == 0, out
    assert "added weather_paris, london_follow_up" in out
    code, out = cli("cases", "rm", str(home_copy), "london_follow_up", "weather_paris")
    assert code == 0, out
    assert home_copy.read_bytes() == original


def test_new_list_and_dry_run(tmp_path: Path) -> None:
    target = tmp_path / "mine.evalset.json"
    code, out = cli("cases", "new", str(target))
    assert code == 0, out
    assert json.loads(target.read_text()) == {"eval_set_id": "mine", "eval_cases": []}
    code, out = cli("cases", "new", str(target))
    assert code == 2 and "already exists" in out
    empty = target.read_bytes()
    code, out = cli(
        "cases", "add", str(target), "--from-trace", str(TRACES / "mlflow_travel.traces.jsonl"),
        "--session", "hot*", "--dry-run",
    )  # fmt: skip
    assert code == 0, out
    assert '+      "eval_id": "hotel",' in out and "would write" in out
    assert target.read_bytes() == empty
    code, out = cli(
        "cases", "add", str(target), "--from-trace", str(TRACES / "mlflow_travel.traces.jsonl"),
        "--session", "hotel",
    )  # fmt: skip
    assert code == 0, out
    code, out = cli("cases", "list", str(target))
    assert code == 0
    assert "adk, 1 case(s)" in out and "hotel" in out and "flights" not in out


@pytest.mark.parametrize(
    "traces", ["mlflow_travel.traces.jsonl", "adk_weather.otlp.jsonl", "openinference.otlp.json"]
)
def test_cases_from_traces_are_what_assay_eval_reads(tmp_path: Path, traces: str) -> None:
    source = TRACES / traces
    target = tmp_path / "from_traces.evalset.json"
    assert cli("cases", "new", str(target))[0] == 0
    code, out = cli("cases", "add", str(target), "--from-trace", str(source))
    assert code == 0, out
    # what `assay eval TRACES` reads and stores as each case's played turns
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    code, out = cli("eval", str(source), "--store", store)
    assert code in (0, 1), out
    from assay.store.reading import load_stored_run

    _info, result = load_stored_run(store, "latest")
    read = {
        c.case_id: [inv.actual for inv in c.invocations if inv.actual is not None]
        for c in result.cases
    }
    assert read == {c.id: c.actual for c in load(source).cases}
    written = {c.id: c.reference for c in load(target).cases}
    assert list(written) == list(read)
    for case_id, played in read.items():
        expected = written[case_id]
        assert played is not None and expected is not None
        assert [t.user_input.text for t in expected] == [t.user_input.text for t in played]
        assert [t.final_response for t in expected] == [t.final_response for t in played]
        assert [[(c.name, c.args) for c in t.tool_calls()] for t in expected] == [
            [(c.name, c.args) for c in t.tool_calls()] for t in played
        ]
        assert [
            [s.tool_response.response for s in t.steps if s.tool_response] for t in expected
        ] == [[s.tool_response.response for s in t.steps if s.tool_response] for t in played]


def test_blessing_every_case_including_multi_turn_ones_keeps_them_passing(
    home_copy: Path, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    evaluate(home_copy, store)
    code, out = cli(
        "cases", "add", str(home_copy), "--from-run", "latest", "--update", "--store", store
    )
    assert code == 0, out
    cases = {c.id: c for c in load(home_copy).cases}
    assert len(cases["tv_follow_up"].reference or []) == 2
    # tool mocks are no CES expectations: the run is still one session (NAIVE), with
    # the config's criteria, and every case passes
    assert set(evaluate(home_copy, store).values()) == {"PASSED"}
    # and without a config, ADK's default criteria apply (not CES's golden checks)
    code, out = cli("eval", str(home_copy), "--agent", AGENT, "--no-store")
    assert code == 0, out
    assert "tool_trajectory_avg_score" in out and "hallucination" not in out


def test_add_from_run_reads_runs_from_either_store(store_url: str, tmp_path: Path) -> None:
    from assay.cases import add_from_run

    evalset = tmp_path / "home.evalset.json"
    shutil.copy(HOME / "home.evalset.json", evalset)
    evaluate(evalset, store_url)
    target = tmp_path / "failing.evalset.json"
    assert cli("cases", "new", str(target))[0] == 0
    written = add_from_run(target, "latest", failed=True, store=store_url)
    assert written.added == [
        "set_temperature_fahrenheit", "energy_today", "two_devices_off", "conditional_switch_off"
    ]  # fmt: skip
    fahrenheit = {c.id: c for c in load(target).cases}["set_temperature_fahrenheit"]
    (turn,) = fahrenheit.reference or []
    assert [(c.name, c.args) for c in turn.tool_calls()] == [
        ("set_temperature", {"location": "Living Room", "temperature": 72})
    ]
    # a --case that names no case of the run is refused, naming it
    code, out = cli(
        "cases", "add", str(target), "--from-run", "latest", "--case", "nope*", "--store", store_url
    )  # fmt: skip
    assert code == 2 and "no case of run" in out and "'nope*'" in out
    code, out = cli("cases", "add", str(target), "--from-run", "0000", "--store", store_url)
    assert code == 2 and "Traceback" not in out


def test_a_case_from_a_conversation_the_store_recorded(home_copy: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    evaluate(home_copy, store)
    from assay.store.reading import open_existing

    db = open_existing(store)
    try:
        run_id = db.find_run("latest").id
    finally:
        db.close()
    target = tmp_path / "evaluations.json"
    assert cli("cases", "new", str(target), "--format", "ces")[0] == 0
    # the name the service's GenerateEvaluation takes for this case run's conversation
    name = f"projects/default/locations/global/apps/default/conversations/tv_follow_up-{run_id}-0"
    code, out = cli("cases", "add", str(target), "--from-ces", name, "--store", store)
    assert code == 0, out
    assert "added tv_follow_up" in out and "google-cloud-ces Evaluation" in out
    (case,) = load(target).cases
    assert [t.user_input.text for t in case.reference or []] == [
        "Is the living room TV on?",
        "Turn it off.",
    ]
    missing = name.replace(f"-{run_id}-0", f"-{run_id}-7")
    code, out = cli("cases", "add", str(target), "--from-ces", missing, "--store", store)
    assert code == 2 and "no conversation" in out
