"""Judge cost on the service's runs (issue #38, items 1 and 2 for `assay serve`).

- The server's caps (`assay serve --max-judge-usd-per-run`, `--max-judge-calls-per-run`)
  stop a run's judging: the stand-in judge sees exactly the capped calls, the rest of the
  judged checks are NOT_EVALUATED "judge budget reached" in the CES results, and the run
  shows its budget and spending.
- A request asks for a lower cap (`assayJudgeBudget`); a hostile or too high one is 400
  naming the field, never a 500 and never a run.
- `evaluations:estimate` calls no model, creates no run, and counts the calls the run
  then makes (per metric), and the cache hits once they are cached.
- A resumed run (its server killed, another one resuming it) keeps the cap it started
  with, though the resuming server has none.

Real servers on loopback (in a thread: the in-process executor; `assay serve` in a
subprocess: run-worker processes), the real openai SDK against the stand-in judge, on
SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_process import ServeProcess, wait_for
from service_samples import error_of, golden
from service_server import RunningServer, create_key, serve
from typer.testing import CliRunner

from assay.agents.callable import CallableAgent
from assay.cli import app as cli_app
from assay.core.cases import Step, ToolCall, Turn
from assay.models.cost import BUDGET_REACHED
from assay.models.pricing import find_price, price_table
from assay.service.settings import JudgeBudget, ServiceRunSettings
from assay.store import Store
from assay.testing.judge_server import JudgeServer
from standin_judge import schema_reply, standin_judge

APP = "/v1/apps/shop"
JUDGE = "openai:gpt-4o-mini"
#: judge calls of one golden evaluation: semantic similarity and hallucination, one turn
CALLS_PER_EVALUATION = 2


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, schema_reply) as server:
        yield server


async def weather_agent(text: str) -> Turn:
    """Does what the golden expects (a call of get_weather, "Sunny."), so the judges see
    the very turns the estimate stood the golden in for."""
    call = ToolCall(name="get_weather", args={"city": "Paris"})
    return Turn(steps=[Step(tool_call=call)], final_response="Sunny.")


def _evaluation(day: int) -> dict[str, Any]:
    """A golden evaluation whose question differs by `day` (no judge cache hit between)."""
    body = golden(f"weather {day}")
    body["golden"]["turns"][0]["steps"][0]["userInput"]["text"] = f"Weather in Paris, day {day}?"
    return body


def _server(
    store: Store, budget: JudgeBudget, **options: Any
) -> tuple[RunningServer, httpx.Client]:
    running = serve(
        store,
        auth=False,
        agent=CallableAgent(weather_agent),
        judge_budget=budget,
        **{"judge_model": JUDGE, **options},
    )
    return running, httpx.Client(base_url=running.base_url, timeout=60)


@pytest.fixture
def started() -> Iterator[Callable[..., httpx.Client]]:
    servers: list[tuple[RunningServer, httpx.Client]] = []

    def start(store: Store, budget: JudgeBudget = JudgeBudget(), **options: Any) -> httpx.Client:
        servers.append(_server(store, budget, **options))
        return servers[-1][1]

    yield start
    for running, http in reversed(servers):
        http.close()
        running.stop()


def _create(http: httpx.Client, count: int) -> list[str]:
    names = []
    for day in range(count):
        reply = http.post(f"{APP}/evaluations", json=_evaluation(day))
        assert reply.status_code == 200, reply.text
        names.append(reply.json()["name"])
    return names


def _finished(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    reply = http.post(f"{APP}/evaluations:run", json=body)
    assert reply.status_code == 200, reply.text
    run = reply.json()["metadata"]["evaluationRun"]
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(http.get(f"/v1/{run}").json())
        return found["state"] != "RUNNING"

    wait_for(done, f"{run} to finish")
    assert found["state"] == "COMPLETED", found
    return found


def _judged_checks(http: httpx.Client, names: list[str], run: str) -> list[dict[str, Any]]:
    """The semantic similarity and hallucination results of `run`'s turns."""
    checks = []
    for name in names:
        listed = http.get(f"/v1/{name}/results", params={"filter": f'evaluationRun="{run}"'})
        assert listed.status_code == 200, listed.text
        (result,) = listed.json()["evaluationResults"]
        for turn in result["goldenResult"]["turnReplayResults"]:
            checks += [turn["semanticSimilarityResult"], turn["hallucinationResult"]]
    return checks


def _stopped(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in checks if str(c.get("explanation", "")).startswith(BUDGET_REACHED)]


def test_the_servers_call_cap_stops_judging_and_the_rest_are_not_evaluated(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_calls=3))
    names = _create(http, 3)
    run = _finished(http, {"evaluations": names, "judgeModel": JUDGE})
    assert len(judge.requests) == 3
    checks = _judged_checks(http, names, run["name"])
    assert len(checks) == 3 * CALLS_PER_EVALUATION
    stopped = _stopped(checks)
    assert len(stopped) == 3
    # A stopped check has no score (not a 0) and no label: CES's score is optional.
    assert all("score" not in c and "label" not in c for c in stopped)
    assert sum("score" in c for c in checks) == 3
    assert all("3 judge calls (this run's assayJudgeBudget.maxCalls)" in c["explanation"]
               for c in stopped)  # fmt: skip
    assert run["assayJudgeBudget"] == {"maxCalls": 3}
    assert run["assayJudgeCost"]["calls"] == 3 and run["assayJudgeCost"]["refused"] == 3
    summary = store.get_run(run["name"].rsplit("/", 1)[-1]).summary
    assert summary["judge/max_calls"] == 3 and summary["judge/refused"] == 3
    assert summary["judge/calls"] == 3


def test_the_servers_usd_cap_stops_judging_before_it_is_passed(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    # A call is admitted on its estimate (its prompt's tokens, 256 output tokens at
    # most) and then costs what the stand-in reports (300 in, 40 out, far less): a cap
    # of a little over two estimates lets some calls through, not all six.
    probe = started(store)
    names = _create(probe, 3)
    body = {"evaluations": names, "judgeModel": JUDGE}
    estimated = probe.post(f"{APP}/evaluations:estimate", json=body).json()["judge"]
    cap = 2.2 * estimated["usd"] / estimated["calls"]
    http = started(store, JudgeBudget(max_usd=cap))
    run = _finished(http, body)
    made = len(judge.requests)
    assert 0 < made < 3 * CALLS_PER_EVALUATION
    assert run["assayJudgeCost"]["calls"] == made
    assert 0 < run["assayJudgeCost"]["usd"] <= cap
    stopped = _stopped(_judged_checks(http, names, run["name"]))
    assert len(stopped) == run["assayJudgeCost"]["refused"] == 3 * CALLS_PER_EVALUATION - made
    # named as the run shows its budget, not as `assay eval`'s flag
    assert all("this run's assayJudgeBudget.maxUsd" in c["explanation"] for c in stopped)
    assert not any("--max-judge" in c["explanation"] for c in stopped)


def test_a_request_asks_for_a_lower_cap_than_the_servers(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_calls=5, max_usd=1.0))
    names = _create(http, 2)
    body = {"evaluations": names, "judgeModel": JUDGE, "assayJudgeBudget": {"maxCalls": 1}}
    run = _finished(http, body)
    assert len(judge.requests) == 1
    # The request's calls cap, the server's dollars cap
    assert run["assayJudgeBudget"] == {"maxCalls": 1, "maxUsd": 1.0}
    assert len(_stopped(_judged_checks(http, names, run["name"]))) == 3
    run_id = run["name"].rsplit("/", 1)[-1]
    stored = ServiceRunSettings.of_run(store.get_run(run_id))
    assert stored.judge_budget == JudgeBudget(max_calls=1, max_usd=1.0)


def _mcp(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {"accept": "application/json, text/event-stream"}
    reply = http.post("/mcp", json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result


def test_mcp_estimates_and_runs_with_a_lower_cap_and_refuses_a_hostile_one(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_calls=5))
    names = _create(http, 2)
    arguments = {"app": "apps/shop", "evaluations": names, "judgeModel": JUDGE}
    refused = _mcp(http, "run_evaluation", {**arguments, "assayJudgeBudget": {"maxUsd": -1}})
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith(
        "INVALID_ARGUMENT: assayJudgeBudget.maxUsd: expected a positive number"
    )
    budget = {"assayJudgeBudget": {"maxCalls": 1}}
    estimated = _mcp(http, "estimate_evaluation_run", {**arguments, **budget})
    assert estimated.get("isError") is not True, estimated
    found = json.loads(estimated["content"][0]["text"])
    assert found["judge"]["calls"] == 2 * CALLS_PER_EVALUATION
    assert found["judgeBudget"] == {"maxCalls": 1, "exceeded": True}
    assert judge.requests == []
    assert http.get(f"{APP}/evaluationRuns").json().get("evaluationRuns", []) == []
    result = _mcp(http, "run_evaluation", {**arguments, **budget})
    assert result.get("isError") is not True, result
    operation = json.loads(result["content"][0]["text"])
    run = operation["metadata"]["evaluationRun"]
    wait_for(lambda: http.get(f"/v1/{run}").json()["state"] != "RUNNING", f"{run} to finish")
    assert len(judge.requests) == 1
    assert http.get(f"/v1/{run}").json()["assayJudgeBudget"] == {"maxCalls": 1}


NAMED = "assayJudgeBudget"
HOSTILE = [
    # (budget JSON text, the field named, words in the message)
    ('{"maxUsd": -1}', f"{NAMED}.maxUsd", "positive"),
    ('{"maxUsd": 0}', f"{NAMED}.maxUsd", "positive"),
    ('{"maxUsd": "1.5"}', f"{NAMED}.maxUsd", "positive"),
    ('{"maxUsd": true}', f"{NAMED}.maxUsd", "positive"),
    ('{"maxUsd": [1]}', f"{NAMED}.maxUsd", "positive"),
    ('{"maxUsd": 5}', f"{NAMED}.maxUsd", "above this server's cap"),
    ('{"maxCalls": 0}', f"{NAMED}.maxCalls", "whole number"),
    ('{"maxCalls": -3}', f"{NAMED}.maxCalls", "whole number"),
    ('{"maxCalls": 1.5}', f"{NAMED}.maxCalls", "whole number"),
    ('{"maxCalls": "2"}', f"{NAMED}.maxCalls", "whole number"),
    ('{"maxCalls": false}', f"{NAMED}.maxCalls", "whole number"),
    ('{"maxCalls": 11}', f"{NAMED}.maxCalls", "above this server's cap"),
    ('{"maxCalls": 100000000000000000000000}', f"{NAMED}.maxCalls", ""),
    ('{"maxUSD": 1}', f"{NAMED}.maxUSD", "unknown field"),
    ("1.5", NAMED, "expected an object"),
    ('"cheap"', NAMED, "expected an object"),
    ("[]", NAMED, "expected an object"),
    ('{"maxUsd": NaN}', f"{NAMED}.maxUsd", ""),
    ('{"maxUsd": Infinity}', f"{NAMED}.maxUsd", ""),
    ('{"maxUsd": 1e400}', f"{NAMED}.maxUsd", ""),
]


@pytest.mark.parametrize("endpoint", ["run", "estimate"])
def test_a_hostile_budget_is_400_naming_the_field_and_starts_nothing(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client], endpoint: str
) -> None:
    http = started(store, JudgeBudget(max_calls=10, max_usd=2.0))
    (name,) = _create(http, 1)
    for budget, field, words in HOSTILE:
        text = f'{{"evaluations": ["{name}"], "judgeModel": "{JUDGE}", "{NAMED}": {budget}}}'
        reply = http.post(
            f"{APP}/evaluations:{endpoint}",
            content=text.encode(),
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 400, (budget, reply.text)
        error = error_of(reply)
        violations = [v for d in error["details"] for v in d.get("fieldViolations", [])]
        assert [v["field"] for v in violations] == [field], (budget, error)
        assert words in error["message"], (budget, error["message"])
    assert http.get(f"{APP}/evaluationRuns").json().get("evaluationRuns", []) == []
    assert judge.requests == []


def test_the_estimate_counts_the_calls_the_run_then_makes(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store)
    names = _create(http, 3)
    body = {"evaluations": names, "judgeModel": JUDGE}
    reply = http.post(f"{APP}/evaluations:estimate", json=body)
    assert reply.status_code == 200, reply.text
    estimate = reply.json()
    # nothing called, nothing stored
    assert judge.requests == []
    assert http.get(f"{APP}/evaluationRuns").json().get("evaluationRuns", []) == []
    assert estimate["evaluations"] == names and "judgeBudget" not in estimate
    assert estimate["agent"] == {"calls": 3, "upper_bound": False}
    assert estimate["complete"] is True and "notCounted" not in estimate
    per_metric = {m: line["calls"] for m, line in estimate["judge"]["per_metric"].items()}
    assert per_metric == {"semantic_similarity": 3, "hallucination": 3}
    price = find_price(JUDGE, price_table())
    assert price is not None
    for line in estimate["judge"]["per_metric_model"]:
        usd = price.usd(line["input_tokens"], line["output_tokens"])
        assert line["usd"] == pytest.approx(usd, rel=1e-6) and line["model"] == JUDGE

    run = _finished(http, body)
    summary = store.get_run(run["name"].rsplit("/", 1)[-1]).summary
    made = {m: summary[f"judge/cost/{m}/{JUDGE}/calls"] for m in per_metric}
    assert made == per_metric
    assert len(judge.requests) == estimate["judge"]["calls"] == 6
    assert run["assayJudgeCost"]["usdEstimated"] == pytest.approx(estimate["judge"]["usd"])

    # Every verdict is cached now: the same estimate has nothing left to pay.
    again = http.post(f"{APP}/evaluations:estimate", json=body).json()["judge"]
    assert (again["calls"], again["cache_hits"], again["usd"]) == (0, 6, 0)


def test_the_estimate_of_repeated_runs_counts_every_judge_question(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    # Three runs of each evaluation: the agent answers the same each time, so the
    # judges' later calls are the first's prompts again. The estimate counts them as
    # cache hits; in the run, the same prompt asked by two runs at once is asked of the
    # judge twice (the reply cache does not wait for a reply in flight), so the run
    # makes at least the estimated calls, and asks as often in all.
    http = started(store)
    names = _create(http, 2)
    body = {"evaluations": names, "judgeModel": JUDGE, "runCount": 3}
    estimate = http.post(f"{APP}/evaluations:estimate", json=body).json()["judge"]
    assert estimate["calls"] == 2 * CALLS_PER_EVALUATION
    assert estimate["cache_hits"] == 2 * 2 * CALLS_PER_EVALUATION
    run = _finished(http, body)
    cost = run["assayJudgeCost"]
    assert cost["calls"] == len(judge.requests) >= estimate["calls"]
    assert cost["calls"] + cost["cacheHits"] == estimate["calls"] + estimate["cache_hits"]


def test_the_estimate_names_the_scenarios_it_cannot_count(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    from service_samples import scenario

    http = started(store)
    (golden_name,) = _create(http, 1)
    made = http.post(f"{APP}/evaluations", json=scenario("booking"))
    assert made.status_code == 200, made.text
    simulated = made.json()["name"]
    body = {"evaluations": [golden_name, simulated], "judgeModel": JUDGE, "userModel": JUDGE}
    found = http.post(f"{APP}/evaluations:estimate", json=body).json()
    assert found["complete"] is False and found["notCounted"] == [simulated]
    assert found["agent"]["upper_bound"] is True
    assert found["judge"]["calls"] == CALLS_PER_EVALUATION  # the golden's, counted
    assert judge.requests == []


def test_the_estimate_says_when_it_passes_the_runs_budget(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_calls=4))
    names = _create(http, 2)
    body: dict[str, Any] = {"evaluations": names, "judgeModel": JUDGE}
    found = http.post(f"{APP}/evaluations:estimate", json=body).json()
    assert found["judgeBudget"] == {"maxCalls": 4, "exceeded": False}
    body["assayJudgeBudget"] = {"maxCalls": 3}
    found = http.post(f"{APP}/evaluations:estimate", json=body).json()
    assert found["judgeBudget"] == {"maxCalls": 3, "exceeded": True}
    assert judge.requests == []


def test_the_estimate_is_refused_as_the_run_is(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store)
    (name,) = _create(http, 1)
    for body, status, words in (
        ({"evaluations": [name], "judgeModel": "openai:gpt-4o"}, 400, "not a model"),
        ({"evaluations": ["apps/shop/evaluations/gone"]}, 404, "gone"),
        ({"evaluations": [name], "runCount": 0}, 400, "runCount"),
        ({"evaluations": [name], "bogus": 1}, 400, "bogus"),
    ):
        reply = http.post(f"{APP}/evaluations:estimate", json=body)
        assert reply.status_code == status, reply.text
        assert words in error_of(reply)["message"]
    # The service's limit on nesting (ServiceLimits.max_depth) holds here too.
    nested = "[" * 150 + "]" * 150
    deep = f'{{"evaluations": ["{name}"], "config": {{"x": {nested}}}}}'
    reply = http.post(
        f"{APP}/evaluations:estimate",
        content=deep.encode(),
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 400, reply.text
    assert "nest" in error_of(reply)["message"] or "deep" in error_of(reply)["message"]
    assert judge.requests == []
    no_agent = serve(store, auth=False)
    try:
        with httpx.Client(base_url=no_agent.base_url, timeout=30) as bare:
            reply = bare.post(f"{APP}/evaluations:estimate", json={"evaluations": [name]})
            assert reply.status_code == 400 and "no agent" in error_of(reply)["message"]
    finally:
        no_agent.stop()


# -- a resumed run keeps its cap (run workers, `assay serve` killed and replaced) --------

SLOW_AGENT = """
import os
import time


def agent(text):
    # The first evaluation answers at once; the others wait for the gate, which opens
    # only once the first server is gone.
    if "day 0" not in text:
        while not os.path.exists(os.environ["GATE"]):
            time.sleep(0.05)
    return "Sunny."
"""


def test_a_resumed_run_keeps_the_cap_it_started_with(tmp_path: Path, judge: JudgeServer) -> None:
    (tmp_path / "gated_agent.py").write_text(SLOW_AGENT)
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Store.open(url).close()
    env = {
        "OPENAI_BASE_URL": judge.openai_base_url,
        "OPENAI_API_KEY": "unused",
        "GATE": str(tmp_path / "gate"),
    }
    first = ServeProcess(
        url,
        tmp_path,
        "gated_agent:agent",
        env=env,
        extra=("--judge-model", JUDGE, "--max-judge-calls-per-run", str(CALLS_PER_EVALUATION)),
    )
    try:
        names = _create(first.http, 3)
        reply = first.http.post(
            f"{APP}/evaluations:run", json={"evaluations": names, "judgeModel": JUDGE}
        )
        assert reply.status_code == 200, reply.text
        run = reply.json()["metadata"]["evaluationRun"]

        def first_stored() -> bool:
            return first.http.get(f"/v1/{run}").json()["progress"]["completedCount"] >= 1

        wait_for(first_stored, "the first evaluation's result")
        assert len(judge.requests) == CALLS_PER_EVALUATION
        first.kill()
    finally:
        first.stop()
    (tmp_path / "gate").touch()
    # A server with no cap of its own resumes the run: the run's stored cap applies.
    second = ServeProcess(
        url, tmp_path, "gated_agent:agent", env=env, extra=("--judge-model", JUDGE)
    )
    try:
        found: dict[str, Any] = {}

        def finished() -> bool:
            found.update(second.http.get(f"/v1/{run}").json())
            return found["state"] != "RUNNING"

        wait_for(finished, f"{run} to be resumed and finish")
        assert found["state"] == "COMPLETED", found
        assert found["assayJudgeBudget"] == {"maxCalls": CALLS_PER_EVALUATION}
        # The resumed execution judged under the same cap: two more calls, two refused.
        assert len(judge.requests) == 2 * CALLS_PER_EVALUATION
        checks = _judged_checks(second.http, names, run)
        assert len(_stopped(checks)) == CALLS_PER_EVALUATION
        assert sum("score" in c for c in checks) == 2 * CALLS_PER_EVALUATION
    finally:
        second.stop()


def test_settings_stored_before_caps_still_load() -> None:
    old = {"version": 1, "evaluationIds": ["e"], "metrics": ["tool_invocation_score"]}
    assert ServiceRunSettings.model_validate(old).judge_budget is None
    capped = ServiceRunSettings.model_validate(
        {**old, "judgeBudget": {"maxUsd": 0.5, "maxCalls": 20}}
    )
    assert capped.judge_budget == JudgeBudget(max_usd=0.5, max_calls=20)
    assert capped.document()["judgeBudget"] == {"maxUsd": 0.5, "maxCalls": 20}


# -- the flags, the price table, --workers ----------------------------------------------

HOUSE_JUDGE = "openai:house-judge-v1"
"""A judge the shipped price table does not know: only `--prices` prices it."""


def _house_prices(tmp_path: Path) -> Path:
    prices = tmp_path / "prices.json"
    table = {"models": {"house-judge-v1": {"input_per_million": 1.0, "output_per_million": 4.0}}}
    prices.write_text(json.dumps(table), encoding="utf-8")
    return prices


def test_an_unpriced_judge_fits_no_usd_cap(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_usd=1.0), judge_model=HOUSE_JUDGE)
    names = _create(http, 1)
    body = {"evaluations": names, "judgeModel": HOUSE_JUDGE}
    estimate = http.post(f"{APP}/evaluations:estimate", json=body).json()
    assert estimate["judge"]["unpriced_models"] == [HOUSE_JUDGE]
    assert estimate["judgeBudget"] == {"maxUsd": 1.0, "exceeded": True}
    run = _finished(http, body)
    assert judge.requests == []
    stopped = _stopped(_judged_checks(http, names, run["name"]))
    assert len(stopped) == CALLS_PER_EVALUATION
    assert all("has no price" in c["explanation"] for c in stopped)
    assert all("assay serve --prices FILE" in c["explanation"] for c in stopped)


def test_the_servers_price_table_reaches_its_run_workers(
    tmp_path: Path, judge: JudgeServer
) -> None:
    (tmp_path / "plain_agent.py").write_text('def agent(text):\n    return "Sunny."\n')
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Store.open(url).close()
    env = {"OPENAI_BASE_URL": judge.openai_base_url, "OPENAI_API_KEY": "unused"}
    flags = ("--judge-model", HOUSE_JUDGE, "--max-judge-usd-per-run", "1")
    server = ServeProcess(
        url,
        tmp_path,
        "plain_agent:agent",
        env=env,
        extra=(*flags, "--prices", str(_house_prices(tmp_path))),
    )
    try:
        names = _create(server.http, 1)
        body = {"evaluations": names, "judgeModel": HOUSE_JUDGE}
        estimate = server.http.post(f"{APP}/evaluations:estimate", json=body).json()["judge"]
        assert estimate["unpriced_models"] == [] and estimate["usd"] > 0
        run = _finished(server.http, body)
        assert server.run_workers() == []  # it ran in a worker, now gone
    finally:
        server.stop()
    assert len(judge.requests) == CALLS_PER_EVALUATION
    # 300 input and 40 output tokens per call at 1 and 4 US dollars per million
    assert run["assayJudgeCost"]["usd"] == pytest.approx(CALLS_PER_EVALUATION * 460e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-judge-usd-per-run", "0"], "--max-judge-usd-per-run must be a positive"),
        (["--max-judge-usd-per-run", "-1"], "--max-judge-usd-per-run must be a positive"),
        (["--max-judge-usd-per-run", "inf"], "--max-judge-usd-per-run must be a positive"),
        (["--max-judge-usd-per-run", "nan"], "--max-judge-usd-per-run must be a positive"),
        (["--max-judge-calls-per-run", "0"], "--max-judge-calls-per-run must be at least 1"),
        (["--prices", "/no/such/prices.json"], "--prices: cannot read prices file"),
    ],
)
def test_bad_judge_cap_flags_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
    result = CliRunner().invoke(cli_app, ["serve", "--no-auth", *store, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")


def test_a_broken_price_table_is_refused_at_start(tmp_path: Path) -> None:
    broken = tmp_path / "prices.json"
    broken.write_text('{"models": {"m": {"input_per_million": "cheap"}}}', encoding="utf-8")
    store = ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
    result = CliRunner().invoke(cli_app, ["serve", "--no-auth", *store, "--prices", str(broken)])
    assert result.exit_code == 2, result.output
    assert "--prices: prices file" in result.output.replace("\n", " ")


def test_the_workers_of_assay_serve_get_the_caps_and_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.service.workers import SETTINGS_ENV, ServeSettings, app_from_environment

    prices = str(_house_prices(tmp_path))
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Store.open(url).close()
    settings = ServeSettings(
        store_url=url, max_judge_usd_per_run=0.25, max_judge_calls_per_run=7, prices_file=prices
    )
    monkeypatch.setenv(SETTINGS_ENV, settings.model_dump_json())
    app = app_from_environment()
    ctx = app.state.ctx
    try:
        assert ctx.judge_budget == JudgeBudget(max_usd=0.25, max_calls=7)
        assert ctx.prices_file == prices
    finally:
        ctx.store.close()


def test_googles_ces_client_reads_a_stopped_check_as_unscored(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    # CES's RunEvaluation names no judge model (runs started through Google's client are
    # not judged); a run started over /v1 is read through the client like any other.
    pytest.importorskip("google.cloud.ces_v1beta")
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1beta as ces

    http = started(store, JudgeBudget(max_calls=1))
    names = _create(http, 2)
    run = _finished(http, {"evaluations": names, "judgeModel": JUDGE})
    client = ces.EvaluationServiceClient(
        transport="rest",
        client_options={"api_endpoint": str(http.base_url)},
        credentials=AnonymousCredentials(),
    )
    full = "projects/default/locations/global/"
    assert client.get_evaluation_run(name=full + run["name"]).state.name == "COMPLETED"
    checks = []
    for name in names:
        (result,) = client.list_evaluation_results(parent=full + name)
        turn = result.golden_result.turn_replay_results[0]
        checks += [turn.semantic_similarity_result, turn.hallucination_result]
    scored = [c for c in checks if "score" in c]
    stopped = [c for c in checks if c.explanation.startswith(BUDGET_REACHED)]
    assert len(scored) == 1 and len(stopped) == 3
    assert all("score" not in c and c.label == "" for c in stopped)


def test_a_schedules_budget_is_checked_against_the_server_when_written(
    store: Store, judge: JudgeServer, started: Callable[..., httpx.Client]
) -> None:
    http = started(store, JudgeBudget(max_calls=10))
    (name,) = _create(http, 1)
    url = f"{APP}/scheduledEvaluationRuns"
    schedule: dict[str, Any] = {
        "displayName": "nightly",
        "active": True,
        "schedulingConfig": {"frequency": "DAILY"},
        "request": {"evaluations": [name], "judgeModel": JUDGE},
    }
    for budget, field in (
        ({"maxCalls": 11}, "request.assayJudgeBudget.maxCalls"),
        ({"maxUsd": "1"}, "request.assayJudgeBudget.maxUsd"),
        ([], "request.assayJudgeBudget"),
    ):
        schedule["request"]["assayJudgeBudget"] = budget
        reply = http.post(url, json=schedule)
        assert reply.status_code == 400, reply.text
        error = error_of(reply)
        assert error["details"][0]["fieldViolations"][0]["field"] == field, error
    schedule["request"]["assayJudgeBudget"] = {"maxCalls": 3}
    created = http.post(url, json=schedule)
    assert created.status_code == 200, created.text
    assert created.json()["request"]["assayJudgeBudget"] == {"maxCalls": 3}
    patched = http.patch(
        f"/v1/{created.json()['name']}",
        params={"updateMask": "request"},
        json={"request": {"evaluations": [name], "assayJudgeBudget": {"maxCalls": 0}}},
    )
    assert patched.status_code == 400, patched.text
    field = error_of(patched)["details"][0]["fieldViolations"][0]["field"]
    assert field == "request.assayJudgeBudget.maxCalls"


def test_the_estimate_needs_an_api_key_as_the_run_does(store: Store, judge: JudgeServer) -> None:
    running = serve(
        store,
        auth=True,
        agent=CallableAgent(weather_agent),
        judge_model=JUDGE,
        max_body_bytes=2_000,
    )
    try:
        key = create_key(store)
        with httpx.Client(base_url=running.base_url, timeout=30) as http:
            authorized = {"Authorization": f"Bearer {key}"}
            created = http.post(f"{APP}/evaluations", json=_evaluation(0), headers=authorized)
            assert created.status_code == 200, created.text
            body = {"evaluations": [created.json()["name"]], "judgeModel": JUDGE}
            for headers in ({}, {"Authorization": "Bearer assay_nope_nope"}):
                reply = http.post(f"{APP}/evaluations:estimate", json=body, headers=headers)
                assert reply.status_code == 401, reply.text
            huge = {**body, "displayName": "x" * 5_000}
            reply = http.post(f"{APP}/evaluations:estimate", json=huge, headers=authorized)
            assert reply.status_code == 413, reply.text
            reply = http.post(f"{APP}/evaluations:estimate", json=body, headers=authorized)
            assert reply.status_code == 200, reply.text
            assert reply.json()["judge"]["calls"] == CALLS_PER_EVALUATION
    finally:
        running.stop()
    assert judge.requests == []


_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
_BUDGETS = st.one_of(
    _ANY_JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "maxUsd": _ANY_JSON | st.floats() | st.integers(10**300, 10**400),
            "maxCalls": _ANY_JSON | st.integers() | st.integers(10**300, 10**400),
        },
    ),
)


@settings(max_examples=400, deadline=None, database=None)
@given(
    value=_BUDGETS,
    server_usd=st.none() | st.floats(0.01, 100),
    server_calls=st.none() | st.integers(1, 50),
)
def test_any_budget_is_within_the_servers_or_refused_naming_its_field(
    value: object, server_usd: float | None, server_calls: int | None
) -> None:
    from assay.service.errors import InvalidArgument
    from assay.service.settings import requested_budget

    server = JudgeBudget(max_usd=server_usd, max_calls=server_calls)
    try:
        budget = requested_budget(value, server)
    except InvalidArgument as exc:
        (violation,) = exc.details[0]["fieldViolations"]
        assert violation["field"].startswith("assayJudgeBudget")
        return
    for asked, allowed in ((budget.max_usd, server_usd), (budget.max_calls, server_calls)):
        assert allowed is None or (asked is not None and asked <= allowed)
    if budget.max_usd is not None:
        assert math.isfinite(budget.max_usd) and budget.max_usd > 0
    if budget.max_calls is not None:
        assert isinstance(budget.max_calls, int) and budget.max_calls >= 1
