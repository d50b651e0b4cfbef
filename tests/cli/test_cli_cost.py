"""Judge cost (issue #38, items 1 and 2): `--dry-run`, `--max-judge-usd`, `--max-judge-calls`.

Every scenario drives `assay eval` through the real openai SDK against the stand-in
judge on 127.0.0.1, with a SQLite store on disk, and checks against the stand-in's own
request log: the estimate's calls are the calls a real run then makes, per metric; the
price is the price table's; a cap stops judging and a run with a higher cap makes only
the calls that are missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from assay.cli import app
from assay.models.pricing import find_price, price_table
from assay.store import Store
from assay.testing.judge_server import JudgeServer
from standin_judge import (
    arithmetic_rows,
    eval_report,
    runner,
    schema_reply,
    standin_judge,
    write_rows,
)

JUDGE = "openai:gpt-4o-mini"
#: judged metrics of every family that scores recorded rows (Databricks, Vertex, ADK, CES)
METRICS = (
    "correctness",
    "guideline_adherence",
    "groundedness",
    "chunk_relevance",
    "response_evaluation_score",
    "final_response_match_v2",  # 5 samples per invocation
    "hallucinations_v1",  # a segmenting call, then a verifying call
    "safety_v1",
    "semantic_similarity",
    "hallucination",
    "multi_turn_task_success_v1",
)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, schema_reply) as server:
        yield server


def _eval(
    tmp_path: Path, *args: str, metrics: tuple[str, ...] = METRICS
) -> tuple[Result, dict[str, Any]]:
    return eval_report(tmp_path, write_rows(tmp_path, arithmetic_rows(3)), JUDGE, metrics, *args)


def _last_run(tmp_path: Path) -> str:
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as db:
        return db.list_runs(limit=1)[0].id


def _per_metric_calls(summary: dict[str, Any]) -> dict[str, int]:
    calls: dict[str, int] = {}
    for key, value in summary.items():
        parts = key.split("/")
        if key.startswith("judge/cost/") and parts[-1] == "calls":
            calls[parts[2]] = calls.get(parts[2], 0) + value
    return calls


def test_dry_run_calls_are_the_calls_the_run_then_makes(tmp_path: Path, judge: JudgeServer) -> None:
    dry, estimate = _eval(tmp_path, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "dry run: nothing was called" in dry.output
    assert judge.requests == []  # nothing was called
    planned = {m: line["calls"] for m, line in estimate["judge"]["per_metric"].items()}
    assert set(planned) == set(METRICS)
    assert planned["final_response_match_v2"] == 3 * 5  # its 5 samples per invocation
    real, report = _eval(tmp_path)
    assert real.exit_code == 0, real.output
    assert len(judge.requests) == estimate["judge"]["calls"]
    assert _per_metric_calls(report["summary"]) == planned
    assert "judge cost: $" in real.output and "(estimated $" in real.output


def test_dry_run_counts_rubrics_and_samples(tmp_path: Path, judge: JudgeServer) -> None:
    rubrics = [
        {"rubric_id": f"r{i}", "rubric_content": {"text_property": f"The answer is {w}."}}
        for i, w in enumerate(("a number", "short"))
    ]
    config = tmp_path / "test_config.json"
    criterion = {"threshold": 0.5, "rubrics": rubrics, "judge_model_options": {"num_samples": 3}}
    config.write_text(
        json.dumps({"criteria": {"rubric_based_final_response_quality_v1": criterion}}), "utf-8"
    )
    dry, estimate = _eval(tmp_path, "--config", str(config), "--dry-run", metrics=())
    assert dry.exit_code == 0, dry.output
    real, _ = _eval(tmp_path, "--config", str(config), metrics=())
    assert real.exit_code in (0, 1), real.output
    assert estimate["judge"]["calls"] == len(judge.requests) > 0


def test_the_estimate_is_priced_from_the_table_and_prices_overrides_it(
    tmp_path: Path, judge: JudgeServer
) -> None:
    _, estimate = _eval(tmp_path, "--dry-run", metrics=("correctness",))
    price = find_price(JUDGE, price_table())
    assert price is not None
    line = estimate["judge"]["per_metric"]["correctness"]
    assert line["usd"] == pytest.approx(price.usd(line["input_tokens"], line["output_tokens"]))
    prices = tmp_path / "prices.json"
    dear = {"gpt-4o-mini": {"input_per_million": 1000.0, "output_per_million": 2000.0}}
    prices.write_text(json.dumps({"models": dear}), "utf-8")
    _, dearer = _eval(tmp_path, "--dry-run", "--prices", str(prices), metrics=("correctness",))
    line = dearer["judge"]["per_metric"]["correctness"]
    expected = (line["input_tokens"] * 1000.0 + line["output_tokens"] * 2000.0) / 1e6
    assert line["usd"] == pytest.approx(expected)
    assert dearer["judge"]["usd"] == pytest.approx(expected)


def test_the_dry_run_counts_the_stores_cache_hits_and_writes_nothing(
    tmp_path: Path, judge: JudgeServer
) -> None:
    first, _ = _eval(tmp_path, metrics=("correctness", "safety_v1"))
    assert first.exit_code == 0, first.output
    made = len(judge.requests)
    _, again = _eval(tmp_path, "--dry-run", metrics=("correctness", "safety_v1", "groundedness"))
    assert again["judge"]["cache_hits"] == made
    assert again["judge"]["per_metric"]["groundedness"]["calls"] == 3
    assert again["judge"]["calls"] == 3  # only the new metric's calls are to pay
    # The dry run cached nothing: the real run still makes groundedness's calls.
    _, report = _eval(tmp_path, metrics=("correctness", "safety_v1", "groundedness"))
    assert len(judge.requests) == made + 3
    assert report["summary"]["judge/cache_hits"] == made


def test_max_judge_calls_stops_judging_and_a_higher_cap_makes_only_the_missing_calls(
    tmp_path: Path, judge: JudgeServer
) -> None:
    metrics = ("correctness", "guideline_adherence", "safety")
    capped, report = _eval(tmp_path, "--max-judge-calls", "4", metrics=metrics)
    assert capped.exit_code == 1, capped.output
    assert len(judge.requests) == 4
    summary = report["summary"]
    assert summary["judge/calls"] == 4 and summary["judge/errors"] == 0
    assert summary["judge/refused"] == 9 - 4
    not_evaluated = [
        (case["eval_id"], m["metric_name"])
        for case in report["cases"]
        for m in case["overall_eval_metric_results"]
        if m["score"] is None
    ]
    assert len(not_evaluated) >= 2
    for case_id, metric in not_evaluated:
        case = next(c for c in report["cases"] if c["eval_id"] == case_id)
        assert case["explanations"][metric].startswith("judge budget reached"), case_id
    resumed, report = _eval(tmp_path, "--max-judge-calls", "100", metrics=metrics)
    assert resumed.exit_code == 0, resumed.output
    assert len(judge.requests) == 9  # the 5 missing calls, the 4 verdicts from the cache
    assert report["summary"]["judge/cache_hits"] == 4


def test_a_capped_invocation_is_not_scored_from_fewer_samples(
    tmp_path: Path, judge: JudgeServer
) -> None:
    # final_response_match_v2 asks 5 samples per invocation: the cap lets 7 calls through.
    metrics = ("final_response_match_v2",)
    capped, report = _eval(tmp_path, "--max-judge-calls", "7", "--concurrency", "1",
                           "--judge-concurrency", "1", metrics=metrics)  # fmt: skip
    assert len(judge.requests) == 7
    scores = [case["overall_eval_metric_results"][0]["score"] for case in report["cases"]]
    assert sorted(scores, key=lambda s: s is None) == [1.0, None, None], capped.output
    assert "judge budget reached" in capped.output
    resumed, _ = _eval(tmp_path, "--concurrency", "1", metrics=metrics)
    assert resumed.exit_code == 0, resumed.output
    assert len(judge.requests) == 15  # the 2 samples made under the cap came from the cache


def test_max_judge_usd_stops_within_one_calls_price_of_the_cap(
    tmp_path: Path, judge: JudgeServer
) -> None:
    prices = tmp_path / "prices.json"
    table = {"gpt-4o-mini": {"input_per_million": 100.0, "output_per_million": 100.0}}
    prices.write_text(json.dumps({"models": table}), "utf-8")
    one_call = (300 + 40) * 100.0 / 1e6  # the stand-in reports 300 + 40 tokens a call
    cap = 3.5 * one_call
    metrics = ("correctness", "guideline_adherence", "safety")
    args = ("--prices", str(prices), "--judge-concurrency", "8")
    capped, report = _eval(tmp_path, *args, "--max-judge-usd", str(cap), metrics=metrics)
    assert capped.exit_code == 1, capped.output
    summary = report["summary"]
    assert 0 < len(judge.requests) < 9
    assert summary["judge/usd"] <= cap + one_call
    assert summary["judge/usd"] == pytest.approx(len(judge.requests) * one_call)
    assert "judge budget reached" in capped.output
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as db:  # the store keeps it too
        stored = db.list_runs(limit=1)[0].summary
    assert stored["judge/usd"] == summary["judge/usd"] and stored["judge/max_usd"] == cap
    assert stored["judge/cost/safety/openai:gpt-4o-mini/calls"] >= 0
    shown = runner.invoke(
        app, ["runs", "show", _last_run(tmp_path), "--store", f"sqlite:///{tmp_path / 'assay.db'}"]
    )
    assert shown.exit_code == 0, shown.output
    assert "judge cost: $" in shown.output and "judge budget reached" in shown.output
    made = len(judge.requests)
    higher, report = _eval(tmp_path, *args, "--max-judge-usd", "1", metrics=metrics)
    assert higher.exit_code == 0, higher.output
    assert len(judge.requests) == 9 and report["summary"]["judge/cache_hits"] == made


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--max-judge-usd", "-1", "--max-judge-usd must be a positive number"),
        ("--max-judge-usd", "nan", "--max-judge-usd must be a positive number"),
        ("--max-judge-calls", "0", "--max-judge-calls must be at least 1"),
    ],
)
def test_a_bad_cap_is_a_usage_error(tmp_path: Path, flag: str, value: str, said: str) -> None:
    result, _ = _eval(tmp_path, flag, value, "--dry-run")
    assert result.exit_code == 2
    assert said in result.output


def test_a_broken_prices_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "prices.json"
    broken.write_text('{"models": {"x": {"input_per_million": "free"}}}', "utf-8")
    result, _ = _eval(tmp_path, "--prices", str(broken), "--dry-run")
    assert result.exit_code == 2
    assert f"prices file {broken}" in result.output and "input_per_million" in result.output


def test_an_agent_run_is_estimated_without_running_the_agent(
    tmp_path: Path, judge: JudgeServer
) -> None:
    evalset = Path(__file__).resolve().parents[2] / "examples/home_automation/home.evalset.json"
    args = [
        "eval", str(evalset), "--agent", "examples.home_automation.agent:root_agent",
        "-m", "final_response_match_v2", "--judge", JUDGE, "--no-store", "-q",
    ]  # fmt: skip
    estimate_file = tmp_path / "estimate.json"
    dry = runner.invoke(app, [*args, "--dry-run", "--out", str(estimate_file)])
    assert dry.exit_code == 0, dry.output
    estimate = json.loads(estimate_file.read_text(encoding="utf-8"))
    turns = sum(len(case["conversation"]) for case in json.loads(evalset.read_text())["eval_cases"])
    assert estimate["agent"] == {"calls": turns, "upper_bound": False}
    assert judge.requests == []
    real = runner.invoke(app, args)
    assert real.exit_code == 0, real.output
    assert len(judge.requests) == estimate["judge"]["calls"] == turns * 5


def test_a_dry_run_with_a_mistyped_agent_is_a_usage_error(tmp_path: Path) -> None:
    result, _ = _eval(tmp_path, "--agent", "no_such_module_here:agent", "--dry-run")
    assert result.exit_code == 2
    assert "no_such_module_here" in result.output


def test_a_dry_run_refuses_flags_about_results(tmp_path: Path) -> None:
    result, _ = _eval(tmp_path, "--dry-run", "--junit", str(tmp_path / "j.xml"), "--html",
                      str(tmp_path / "r.html"))  # fmt: skip
    assert result.exit_code == 2
    assert "--dry-run runs nothing, so it has no results for --junit, --html" in result.output
    assert not (tmp_path / "j.xml").exists()
