"""Pairwise judging of two stored runs: `assay compare A B --judge M`, over a real
SQLite store and stand-in judges behind a real HTTP server, and the viewer's compare
page reading the verdicts back from the judge cache."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.core.cases import Step, ToolCall, Turn, UserInput
from assay.core.results import CaseResult, EvalResult, InvocationResult, Status
from assay.errors import ConfigError
from assay.judges.client import JudgePool
from assay.judges.types import JudgeModelOptions
from assay.report.pairwise import (
    VERTEX_PAIRWISE,
    Criterion,
    apairwise_compare,
    resolve_criterion,
)
from assay.store import Store
from assay.testing import JudgeServer, StandinReply
from assay.testing.standin_judges import first_shown, longer_answer

# The store's fixtures: every test taking `runs` runs on SQLite and on PostgreSQL.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from postgres_server import _shared_postgres_database, postgres_server, store_url

__all__ = ["_shared_postgres_database", "postgres_server", "store_url"]
runner = CliRunner()

#: (case id, prompt, run A's response, run B's response): B is longer in c1 and c3,
#: A in c2, and c4 is the same answer in both runs
CASES = [
    ("c1", "Turn on the kitchen light", "Done.", "I switched on the kitchen light for you."),
    ("c2", "What is the thermostat at?",
     "The thermostat is set to 21 degrees in the living room.", "21 degrees."),
    ("c3", "Lock the door", "Locked.", "The front door is now locked."),
    ("c4", "Is the oven off?", "Yes, the oven is off.", "Yes, the oven is off."),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def runs(tmp_path: Path, store_url: str) -> tuple[str, str, str]:
    """(store URL, run A's id, run B's id): the two runs `assay eval` stored (on each
    backend in turn)."""
    store = store_url
    for side, column in (("a", 2), ("b", 3)):
        folder = tmp_path / side
        folder.mkdir()
        rows = [{"id": c[0], "prompt": c[1], "response": c[column], "reference": c[1]}
                for c in CASES]  # fmt: skip
        (folder / "home.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        result = runner.invoke(app, ["eval", str(folder / "home.jsonl"), "--store", store])
        assert result.exit_code in (0, 1), result.output
    with Store.open(store) as db:
        b, a = (info.id for info in db.list_runs(limit=2))
    return store, a, b


def compare(server: JudgeServer, store: str, a: str, b: str, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["compare", a, b, "--store", store, "--json", "--judge",
                                 "openai:standin", "--base-url", server.openai_base_url,
                                 *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)["pairwise"]
    return doc


def by_case(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in doc["results"]}


def test_a_judge_that_prefers_the_first_answer_shown_is_a_tie_everywhere(
    runs: tuple[str, str, str],
) -> None:
    store, a, b = runs
    with JudgeServer(first_shown) as server:
        doc = compare(server, store, a, b)
        # Three differing pairs, each asked in both orders; the identical one is not asked.
        assert len(server.requests) == 6
    cases = by_case(doc)
    for case in ("c1", "c2", "c3"):
        assert cases[case]["a_first"] == cases[case]["b_first"] == "A"
        assert cases[case]["choice"] == "tie" and cases[case]["pairwise_choice"] == "TIE"
        assert cases[case]["inconsistent"] and cases[case]["follows_position"]
        assert cases[case]["confidence"] == 0.0
    assert cases["c4"]["identical"] and cases["c4"]["choice"] == "tie"
    assert not cases["c4"]["inconsistent"]
    assert doc["win_rate"] == 0.5 and doc["win_rate_ci95"] == [0.5, 0.5]
    assert (doc["a_wins"], doc["b_wins"], doc["ties"], doc["inconsistent"]) == (0, 0, 4, 3)
    assert doc["pairwise_preference/candidate_model_win_rate"] == 0.0
    assert doc["pairwise_preference/baseline_model_win_rate"] == 0.0
    assert doc["position"] == {"pairs_decided": 3, "follows_position": 3,
                               "first_shown_share": 1.0, "bias": True}  # fmt: skip
    assert "position bias: 3 of 3 pairs followed the position" in doc["summary"]


def test_a_judge_that_prefers_the_longer_answer_picks_b_where_b_is_longer(
    runs: tuple[str, str, str],
) -> None:
    store, a, b = runs
    with JudgeServer(longer_answer) as server:
        doc = compare(server, store, a, b)
    cases = by_case(doc)
    for case in ("c1", "c3"):  # B longer: B picked in both orders (as B, then as A)
        assert (cases[case]["a_first"], cases[case]["b_first"]) == ("B", "A")
        assert cases[case]["pairwise_choice"] == "CANDIDATE" and cases[case]["choice"] == "B"
        assert cases[case]["confidence"] == 1.0 and not cases[case]["inconsistent"]
    assert (cases["c2"]["a_first"], cases["c2"]["b_first"]) == ("A", "B")
    assert cases["c2"]["pairwise_choice"] == "BASELINE"
    assert (doc["b_wins"], doc["a_wins"], doc["ties"], doc["inconsistent"]) == (2, 1, 1, 0)
    assert doc["win_rate"] == pytest.approx((2 + 0.5) / 4)
    low, high = doc["win_rate_ci95"]
    assert 0.0 <= low < doc["win_rate"] < high <= 1.0
    assert doc["pairwise_preference/candidate_model_win_rate"] == 0.5
    assert doc["pairwise_preference/baseline_model_win_rate"] == 0.25
    assert doc["position"]["bias"] is False and doc["position"]["first_shown_share"] == 0.5
    # The explanation is the judge's, per order.
    assert cases["c1"]["explanation"].startswith("A shown first: ")


def test_the_terminal_shows_the_verdicts_and_the_bias(runs: tuple[str, str, str]) -> None:
    store, a, b = runs
    with JudgeServer(first_shown) as server:
        result = runner.invoke(app, ["compare", a, b, "--store", store, "--judge",
                                     "openai:standin", "--base-url", server.openai_base_url],
                               env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Pairwise:" in out and "win rate of B 0.50" in out
    assert "position bias: 3 of 3 pairs followed the position" in out
    assert "tie (inconsistent)" in out


def test_criteria_and_vertex_metric_names_reach_the_judge(runs: tuple[str, str, str]) -> None:
    store, a, b = runs
    with JudgeServer(longer_answer) as server:
        doc = compare(server, store, a, b, "--metric", "pairwise_fluency")
        assert doc["metric"] == "pairwise_fluency"
        assert "pairwise_fluency/candidate_model_win_rate" in doc
        assert all(VERTEX_PAIRWISE["pairwise_fluency"] in r.user for r in server.requests)
        asked = len(server.requests)
        custom = compare(server, store, a, b, "--criteria", "Prefer the politer answer.")
        assert custom["metric"] == "pairwise_custom"
        assert custom["criteria"] == "Prefer the politer answer."
        new = server.requests[asked:]
        assert len(new) == 6 and all("<criteria>\nPrefer the politer answer." in r.user
                                     for r in new)  # fmt: skip
        # The same comparison again is answered from the store's judge cache.
        before = len(server.requests)
        again = compare(server, store, a, b, "--criteria", "Prefer the politer answer.")
        assert len(server.requests) == before and again["win_rate"] == custom["win_rate"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metric", "final_response_match_v2"], "needs a pairwise metric"),
        (["--metric", "pairwise_nope"], "unknown pairwise metric"),
        (["--criteria", "  "], "--criteria is empty"),
        (["--criteria", "x", "--metric", "pairwise_fluency"], "has its own criteria"),
        (["--judge-samples", "0"], "--judge-samples must be at least 1"),
        (["--judge", "nonsense-model"], "nonsense-model"),
    ],
)
def test_pairwise_usage_errors_exit_2(
    runs: tuple[str, str, str], extra: list[str], message: str
) -> None:
    store, a, b = runs
    args = ["compare", a, b, "--store", store, "--judge", "openai:standin", *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_pairwise_options_need_a_judge(runs: tuple[str, str, str]) -> None:
    store, a, b = runs
    for extra in (["--trajectories"], ["--metric", "pairwise_fluency"], ["--criteria", "x"]):
        result = runner.invoke(app, ["compare", a, b, "--store", store, *extra])
        assert result.exit_code == 2 and "add --judge MODEL" in result.output, result.output


def test_a_failing_judge_leaves_pairs_not_judged_never_tied(runs: tuple[str, str, str]) -> None:
    store, a, b = runs
    with JudgeServer(StandinReply(status=400, text="bad request")) as server:
        args = ["compare", a, b, "--store", store, "--json"]
        result = runner.invoke(app, [*args, "--judge", "openai:standin", "--base-url",
                                     server.openai_base_url])  # fmt: skip
    doc = json.loads(result.output)["pairwise"]
    cases = by_case(doc)
    assert all("error" in cases[c] and cases[c]["choice"] is None for c in ("c1", "c2", "c3"))
    assert doc["not_judged"] == 3 and doc["ties"] == 1 and doc["win_rate"] == 0.5
    # The identical pair is a tie without a judge call, so something was measured.
    assert result.exit_code == 0, result.output


def test_a_judge_failing_on_every_pair_exits_1(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    for side, response in (("a", "Done."), ("b", "Done, the light is on.")):
        (tmp_path / side).mkdir()
        row = {"id": "c1", "prompt": "Light on", "response": response, "reference": "On."}
        (tmp_path / side / "home.jsonl").write_text(json.dumps(row) + "\n")
        runner.invoke(app, ["eval", str(tmp_path / side / "home.jsonl"), "--store", store])
    with JudgeServer(StandinReply(status=400, text="bad request")) as server:
        result = runner.invoke(app, ["compare", "latest~1", "latest", "--store", store,
                                     "--judge", "openai:standin", "--base-url",
                                     server.openai_base_url])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no case was judged in both orders" in result.output
    assert "not judged" in result.output


def test_a_reply_without_a_choice_is_not_judged_and_says_so(runs: tuple[str, str, str]) -> None:
    store, a, b = runs
    with JudgeServer(StandinReply(text="Both answers have merit.")) as server:
        args = ["compare", a, b, "--store", store, "--json"]
        result = runner.invoke(app, [*args, "--judge", "openai:standin", "--base-url",
                                     server.openai_base_url])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)["pairwise"]
    c1 = by_case(doc)["c1"]
    assert c1["choice"] is None and c1["pairwise_choice"] is None
    assert c1["explanation"] == (
        "the judge's reply named no choice (A, B or tie): Both answers have merit."
    )
    assert doc["not_judged"] == 3 and doc["inconsistent"] == 0


# ----------------------------------------------------------------------------- viewer


def test_the_viewer_shows_the_cached_verdicts_and_never_calls_the_judge(
    runs: tuple[str, str, str],
) -> None:
    from fastapi.testclient import TestClient

    from assay.view import create_view_app

    store, a, b = runs
    with JudgeServer(first_shown) as server:
        compare(server, store, a, b)
        asked = len(server.requests)
        with Store.open(store) as db, TestClient(create_view_app(db)) as client:
            page = client.get("/compare", params={"runs": [a, b], "judge": "openai:standin",
                                                  "base_url": server.openai_base_url})  # fmt: skip
            assert page.status_code == 200, page.text
            assert 'id="pairwise-win-rate">0.50<' in page.text
            assert 'id="pairwise-inconsistent">3<' in page.text
            assert 'id="pairwise-bias"' in page.text
            # Not judged with these criteria: shown as such, with how to judge it.
            other = client.get("/compare", params={"runs": [a, b], "judge": "openai:standin",
                                                   "base_url": server.openai_base_url,
                                                   "metric": "pairwise_fluency"})  # fmt: skip
            assert other.status_code == 200
            assert "not in the judge cache: run assay compare" in other.text
            assert other.text.count('data-choice="none"') == 3
            bad = client.get("/compare", params={"runs": [a, b], "judge": "openai:standin",
                                                 "metric": "nope"})  # fmt: skip
            assert bad.status_code == 400 and "needs a pairwise metric" in bad.text
            for judge, said in (("nonsense-model", "unknown judge model"),
                                ("local:/etc/model.gguf", "API judges only")):  # fmt: skip
                refused = client.get("/compare", params={"runs": [a, b], "judge": judge})
                assert refused.status_code == 400 and said in refused.text, refused.text
            plain = client.get("/compare", params={"runs": [a, b]})
            assert 'id="pairwise-form"' in plain.text and "pairwise-stats" not in plain.text
        assert len(server.requests) == asked


# ----------------------------------------------------------------------------- library


def _result(run_id: str, calls: list[str], response: str) -> EvalResult:
    turn = Turn(user_input=UserInput(text="switch the heater off"),
                steps=[Step(tool_call=ToolCall(name=n, args={"id": 1})) for n in calls],
                final_response=response)  # fmt: skip
    case = CaseResult(case_id="c1", status=Status.PASSED, eval_set_id="s",
                      invocations=[InvocationResult(0, None, turn, None)])  # fmt: skip
    return EvalResult({}, cases=[case], run_id=run_id)


def test_trajectories_show_the_judge_the_tool_calls() -> None:
    a = _result("A", ["get_device_info"], "The heater is off.")
    b = _result("B", ["get_device_info", "set_device_info"], "The heater is off.")

    async def judge(trajectories: bool) -> Any:
        pool = JudgePool(default_model="openai:standin")
        try:
            chosen = pool.judge(
                "openai:standin", JudgeModelOptions(base_url=server.openai_base_url)
            )
            return await apairwise_compare(a, b, chosen, judge_name="openai:standin",
                                           trajectories=trajectories)  # fmt: skip
        finally:
            await pool.aclose()

    with JudgeServer(longer_answer) as server:
        plain = asyncio.run(judge(False))
        assert plain.cases[0].identical and not server.requests
        traced = asyncio.run(judge(True))
    assert traced.cases[0].choice == "B" and traced.win_rate == 1.0
    assert any('set_device_info({"id": 1})' in r.user for r in server.requests)


def test_resolve_criterion() -> None:
    assert resolve_criterion(None, None) == Criterion("pairwise_preference", None)
    assert resolve_criterion("pairwise_safety", None).criteria == VERTEX_PAIRWISE["pairwise_safety"]
    named = resolve_criterion("pairwise_tone", "Friendlier is better.")
    assert named == Criterion("pairwise_tone", "Friendlier is better.")
    assert named.prompt_version == "pairwise_tone.v1"
    with pytest.raises(ConfigError, match="unknown pairwise metric"):
        resolve_criterion("pairwise_tone", None)


# ----------------------------------------------------------------------------- reconciling


CHOICES: list[Any] = ["A", "B", "tie", None]


@pytest.mark.parametrize("forward", CHOICES)
@pytest.mark.parametrize("backward", CHOICES)
def test_every_pair_of_orders_reconciles_by_content(forward: Any, backward: Any) -> None:
    from assay.judges.pairwise import OrderAnswer, PairJudgement
    from assay.report.pairwise import PairwiseCase

    judgement = PairJudgement(OrderAnswer((forward,), ("f",)), OrderAnswer((backward,), ("b",)))
    case = PairwiseCase("s", "c", judgement=judgement)
    # The same answers with the runs swapped: A's verdicts are B's, mirrored.
    swapped = PairwiseCase(
        "s", "c", judgement=PairJudgement(OrderAnswer((backward,), ()), OrderAnswer((forward,), ()))
    )
    if forward is None or backward is None:
        assert case.choice is None and case.confidence is None and not case.inconsistent
        return
    expected = ("A" if (forward, backward) == ("A", "B")
                else "B" if (forward, backward) == ("B", "A") else "tie")  # fmt: skip
    assert case.choice == expected
    assert swapped.choice == {"A": "B", "B": "A", "tie": "tie"}[expected]
    assert case.inconsistent == (expected == "tie" and (forward, backward) != ("tie", "tie"))
    confidence = case.confidence
    assert confidence is not None and 0.0 <= confidence <= 1.0
    assert (confidence == 1.0) == (expected != "tie" or (forward, backward) == ("tie", "tie"))
    assert case.to_dict()["pairwise_choice"] == {"A": "BASELINE", "B": "CANDIDATE",
                                                 "tie": "TIE"}[expected]  # fmt: skip


def test_samples_vote_and_the_confidence_counts_every_reply() -> None:
    from assay.judges.pairwise import OrderAnswer, PairJudgement

    # Three samples per order: B, B, A with B's answer second, then A, A, tie with B's first.
    judgement = PairJudgement(OrderAnswer(("B", "B", "A"), ()), OrderAnswer(("A", "A", "tie"), ()))
    assert judgement.verdict.winner == "second"
    assert judgement.confidence == pytest.approx(4 / 6)


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ('{"reasoning": "B is right", "winner": "B"}', "B is right"),
        ('Let me think.\n{"explanation": "A names Paris", "choice": "A"}', "A names Paris"),
        ("B", "B"),
        ('{"winner": "tie"}', '{"winner": "tie"}'),
    ],
)
def test_parse_explanation(reply: str, said: str) -> None:
    from assay.judges.pairwise import parse_explanation

    assert parse_explanation(reply) == said
