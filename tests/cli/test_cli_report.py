"""`assay runs`, `assay runs show` and `assay compare` over a real store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"
AGENT = "examples.home_automation.agent:root_agent"


def _data(text: str) -> dict[str, Any]:
    raw = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', text, re.S)
    assert raw is not None
    return json.loads(raw.group(1))  # type: ignore[no-any-return]


def _eval(store: str, agent: str = AGENT, *extra: str) -> str:
    result = runner.invoke(
        app, ["eval", str(EXAMPLE), "--agent", agent, "--store", store, "--fresh", *extra]
    )
    assert result.exit_code == 1, result.output  # the example has four failing cases
    with Store.open(store) as db:
        return db.list_runs(limit=1)[0].id


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def test_runs_lists_unique_id_prefixes_and_show_accepts_them(store: str) -> None:
    _eval(store), _eval(store)
    with Store.open(store) as db:
        run_id, other_id = (info.id for info in db.list_runs(limit=2))
    narrow = runner.invoke(app, ["runs", "--store", store], env={"COLUMNS": "60"})
    assert narrow.exit_code == 0, narrow.output
    for full in (run_id, other_id):
        # A unique prefix (the two ids share their time-ordered start), never the full id.
        shown = next(w for line in narrow.output.splitlines() for w in line.split()
                     if full.startswith(w) and len(w) >= 8)  # fmt: skip
        assert shown != full and not (run_id if full == other_id else other_id).startswith(shown)
        found = runner.invoke(app, ["runs", "show", shown, "--store", store])
        assert found.exit_code == 0 and full in found.output, found.output
    shown = runner.invoke(app, ["runs", "show", run_id[:12], "--store", store],
                          env={"COLUMNS": "160"})  # fmt: skip
    assert shown.exit_code == 0, shown.output
    out = shown.output
    assert run_id in out and "COMPLETED" in out and "response_match_score ≥ 0.7" in out
    assert "Result: 10 passed, 4 failed, 0 not evaluated (14 cases)" in out
    assert 'two_devices_off: missing call set_device_info(device_id="device_4"' in out
    latest = runner.invoke(app, ["runs", "show", "latest", "--store", store])
    assert latest.exit_code == 0 and run_id in latest.output


def test_bad_run_references_are_one_line_errors(store: str, tmp_path: Path) -> None:
    first, second = _eval(store), _eval(store)
    common = 0
    while first[common] == second[common]:
        common += 1
    ambiguous = runner.invoke(app, ["runs", "show", first[:common], "--store", store])
    assert ambiguous.exit_code == 2
    assert "ambiguous" in ambiguous.output and "Traceback" not in ambiguous.output
    unknown = runner.invoke(app, ["compare", "zzzz", first, "--store", store])
    assert unknown.exit_code == 2 and "no run id starts with 'zzzz'" in unknown.output
    missing = f"sqlite:///{tmp_path / 'nope' / 'absent.db'}"
    for args in (["runs"], ["runs", "show", "latest"], ["compare", "a", "b"]):
        result = runner.invoke(app, [*args, "--store", missing])
        assert result.exit_code == 2, result.output
        assert "does not exist" in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "nope").exists()  # reading never creates a store


def test_compare_identical_reruns_of_a_deterministic_agent_is_not_a_regression(
    store: str,
) -> None:
    first, second = _eval(store), _eval(store)
    result = runner.invoke(
        app, ["compare", first, second, "--store", store, "--fail-on-regression"]
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "No regression: 14 cases in common, 14 unchanged, 0 newly failing" in out
    assert "Cases: 14 unchanged" in out and "within noise" in out
    assert not re.search(r"-0\.0+(?![0-9])", out) and "Changed cases" not in out
    doc = json.loads(
        runner.invoke(app, ["compare", first, second, "--store", store, "--json"]).output
    )
    assert doc["counts"]["unchanged"] == 14 and doc["regression"] is False
    assert all(c["change"] == "unchanged" and c["response_diff"] is None for c in doc["cases"])
    duration = next(m for m in doc["metrics"] if m["metric"] == "invocation_duration_v1")
    assert duration["verdict"] == "informational" and duration["better"] == "lower"
    assert all(m["delta"] == 0 for m in doc["metrics"] if m["gated"])


def test_a_slower_rerun_is_unchanged_informational_metrics_never_gate(store: str) -> None:
    _eval(store), _eval(store, "home_variants:slow_agent")
    with Store.open(store) as db:
        slower, base = (info.id for info in db.list_runs(limit=2))
    done = runner.invoke(app, ["compare", base, slower, "--store", store, "--json",
                               "--fail-on-regression"])  # fmt: skip
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    duration = next(m for m in doc["metrics"] if m["metric"] == "invocation_duration_v1")
    # Every turn is slower, beyond any noise, and lower is better: still never gating.
    assert duration["ci95"][0] > 0 and duration["verdict"] == "informational"
    assert doc["counts"]["unchanged"] == 14 and doc["regression"] is False


def test_compare_three_cases_that_lose_a_tool_call_is_a_regression_beyond_noise(
    store: str,
) -> None:
    base = _eval(store)
    worse = _eval(store, "home_variants:lost_call_agent")
    as_json = runner.invoke(app, ["compare", base, worse, "--store", store, "--json",
                                  "--fail-on-regression"])  # fmt: skip
    assert as_json.exit_code == 1, as_json.output
    doc = json.loads(as_json.output)
    assert doc["regression"] is True
    assert doc["counts"]["regressed"] == 3 and doc["counts"]["unchanged"] == 11
    trajectory = next(m for m in doc["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert trajectory["delta"] == pytest.approx(-3 / 14)
    low, high = trajectory["ci95"]
    assert low < high < 0 and trajectory["verdict"] == "regressed"
    shown = runner.invoke(app, ["compare", base, worse, "--store", store], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert max(len(line) for line in shown.output.splitlines()) <= 80
    assert "Cases: 3 regressed, 11 unchanged" in shown.output
    assert "why: missing call set_device_info" in shown.output


def test_compare_finds_the_seeded_regression_and_fails(store: str) -> None:
    base = _eval(store)
    worse = _eval(store, "home_variants:forgetful_agent")
    result = runner.invoke(
        app, ["compare", base[:12], worse, "--store", store, "--fail-on-regression"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    first_case = next(line for line in lines if "turn_off_device_by_id" in line)
    assert "regressed" in first_case and "PASSED" in first_case and "FAILED" in first_case
    assert "missing call set_device_info" in result.output
    # Without the flag the comparison is only a report.
    assert runner.invoke(app, ["compare", base, worse, "--store", store]).exit_code == 0
    as_json = runner.invoke(app, ["compare", base, worse, "--store", store, "--json"])
    doc = json.loads(as_json.output)
    assert doc["regression"] is True
    assert doc["newly_failing"] == ["home_automation/turn_off_device_by_id"]
    assert doc["cases"][0]["change"] == "regressed"
    assert doc["cases"][0]["other"]["reason"].startswith("missing call set_device_info")


def test_compare_runs_without_common_cases_is_an_input_error(store: str, tmp_path: Path) -> None:
    base = _eval(store)
    other_set = tmp_path / "other.evalset.json"
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["eval_set_id"] = "elsewhere"
    other_set.write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["eval", str(other_set), "--agent", AGENT, "--store", store])
    assert result.exit_code == 1, result.output
    compared = runner.invoke(app, ["compare", base, "latest", "--store", store])
    assert compared.exit_code == 2
    assert "no case in common" in compared.output and "Traceback" not in compared.output
    assert runner.invoke(app, ["compare", base, "--store", store]).exit_code == 2


def test_case_selection_name_and_gates(store: str) -> None:
    args = ["eval", str(EXAMPLE), "--agent", AGENT, "--store", store]
    picked = runner.invoke(app, [*args, "--case", "two_*", "--case", "energy_today",
                                 "--name", "nightly"])  # fmt: skip
    assert picked.exit_code == 1, picked.output
    assert "Result: 0 passed, 2 failed, 0 not evaluated (2 cases)" in picked.output
    listing = runner.invoke(app, ["runs", "--store", store], env={"COLUMNS": "200"})
    assert "nightly" in listing.output
    # Gates decide the exit code: 10 of 14 pass, so 0.7 holds and 0.9 does not.
    held = runner.invoke(app, [*args, "--min-pass-rate", "0.7",
                               "--min-mean", "response_match_score=0.8"])  # fmt: skip
    assert held.exit_code == 0, held.output
    assert "gates passed" in held.output
    missed = runner.invoke(app, [*args, "--min-pass-rate", "0.9", "--limit", "3"])
    assert missed.exit_code == 0, missed.output  # the first 3 cases all pass
    missed = runner.invoke(app, [*args, "--min-pass-rate", "0.9"])
    assert missed.exit_code == 1
    assert "gate failed: pass rate 0.714 (10/14) < --min-pass-rate 0.9" in missed.output
    sampled = runner.invoke(app, [*args, "--sample", "5", "--seed", "1", "--no-store"])
    assert "(5 cases)" in sampled.output
    for bad, message in (
        (["--case", "nope"], "--case nope matched no case"),
        (["--min-mean", "nope=0.5"], "--min-mean nope: not a metric of this run"),
        (["--min-pass-rate", "2"], "--min-pass-rate must be between 0 and 1"),
        (["--limit", "0"], "--limit must be a positive number"),
    ):
        result = runner.invoke(app, [*args, *bad])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output


def test_report_command_writes_a_stored_runs_report(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    example = EXAMPLE
    evaluated = runner.invoke(app, ["eval", str(example), "--agent",
                                    "examples.home_automation.agent:root_agent", "--store", store,
                                    "--html", str(tmp_path / "eval.html")])  # fmt: skip
    assert evaluated.exit_code == 1, evaluated.output
    from_eval = _data((tmp_path / "eval.html").read_text(encoding="utf-8"))
    assert from_eval["header"]["agent"] == "examples.home_automation.agent:root_agent"
    assert from_eval["analysis"]["failed"] == 4
    result = runner.invoke(app, ["report", "latest", "--html", str(tmp_path / "r.html"),
                                 "--store", store])  # fmt: skip
    assert result.exit_code == 0, result.output
    stored = _data((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert stored["header"]["status"] == "COMPLETED" and stored["header"]["run_id"]
    assert stored["analysis"]["by_cause"] == from_eval["analysis"]["by_cause"]
    bad = runner.invoke(app, ["report", "latest", "--store", store])
    assert bad.exit_code == 2 and "--html" in bad.output


def test_names_and_ids_that_look_like_rich_markup_are_printed_as_they_are(
    store: str, tmp_path: Path
) -> None:
    """`[/x]` in a case id, an eval set id or a run name is text, not a rich closing
    tag: before, the terminal report died with a MarkupError traceback."""
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["eval_set_id"] = "set[/]"
    data["eval_cases"] = data["eval_cases"][:2]
    data["eval_cases"][0]["eval_id"] = "odd[/x]"
    data["eval_cases"][1]["eval_id"] = "[bold]loud[/bold]"
    source = tmp_path / "markup.evalset.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    config = str(EXAMPLE.parent / "test_config.json")
    for name in ("[red]n[/x]", "[/]"):
        done = runner.invoke(app, ["eval", str(source), "--agent", AGENT, "--store", store,
                                   "--name", name, "--config", config])  # fmt: skip
        assert done.exit_code == 0, done.output
        assert "odd[/x]" in done.output and "[bold]loud[/bold]" in done.output
    for args in (["runs"], ["runs", "show", "latest"], ["compare", "latest~1", "latest"]):
        shown = runner.invoke(app, [*args, "--store", store], env={"COLUMNS": "120"})
        assert shown.exit_code == 0, shown.output
        assert "[/]" in shown.output and "Traceback" not in shown.output
    listing = runner.invoke(app, ["runs", "--store", store], env={"COLUMNS": "120"})
    assert "[red]n[/x]" in listing.output and "set[/]" in listing.output
