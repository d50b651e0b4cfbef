"""Evaluation runs over real HTTP: lifecycle, results, aggregates, errors, restarts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from service_samples import error_of, golden
from service_server import RunningServer, create_key
from sqlalchemy import update

from assay.agents.callable import CallableAgent
from assay.core.cases import Step, ToolCall, ToolResponse, Turn
from assay.service.settings import ServiceLimits
from assay.store import Store
from assay.store.schema import runs as runs_table

APP = "/v1/apps/shop"


async def weather_agent(text: str) -> Turn:
    """Calls get_weather for Paris (with a recorded tool latency) and answers."""
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"}, latency_s=0.02)
    return Turn(
        steps=[Step(tool_call=call), Step(tool_response=reply)],
        final_response="Sunny.",
        latency_s=0.05,
    )


def _client(server: RunningServer) -> httpx.Client:
    key = create_key(server.store)
    return httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def _create(http: httpx.Client, body: dict[str, Any]) -> str:
    reply = http.post(f"{APP}/evaluations", json=body)
    assert reply.status_code == 200, reply.text
    name: str = reply.json()["name"]
    return name


def _start(http: httpx.Client, body: dict[str, Any]) -> str:
    reply = http.post(f"{APP}/evaluations:run", json=body)
    assert reply.status_code == 200, reply.text
    operation = reply.json()
    assert operation["done"] is False
    run: str = operation["metadata"]["evaluationRun"]
    return run


def _wait(http: httpx.Client, run: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body: dict[str, Any] = http.get(f"/v1/{run}").json()
        if until(body):
            return body
        time.sleep(0.05)
    raise AssertionError(f"run {run} never got there: {body}")


def _done(body: dict[str, Any]) -> bool:
    return body["state"] != "RUNNING"


def test_run_lifecycle_results_and_aggregates(
    store: Store, start_server: Callable[..., RunningServer]
) -> None:
    server = start_server(store, agent=CallableAgent(weather_agent))
    with _client(server) as http:
        good = _create(http, golden("paris"))
        bad = _create(http, golden("forecast", tool="get_forecast"))
        run = _start(
            http,
            {
                "evaluations": [good, bad.rsplit("/", 1)[1]],
                "appVersion": "v7",
                "runCount": 2,
                "displayName": "nightly",
                "config": {"toolCallBehaviour": "FAKE"},
                "goldenRunMethod": "NAIVE",
            },
        )
        final = _wait(http, run, _done)
        assert final["state"] == "COMPLETED"
        assert final["displayName"] == "nightly"
        assert final["progress"] == {
            "totalCount": 4,
            "completedCount": 4,
            "passedCount": 2,
            "failedCount": 2,
            "errorCount": 0,
        }
        assert final["config"] == {"toolCallBehaviour": "FAKE"}
        assert final["goldenRunMethod"] == "NAIVE"

        listed = http.get(f"/v1/{good}/results").json()["evaluationResults"]
        assert len(listed) == 2
        first = listed[0]
        assert first["evaluationRun"] == run
        assert (first["executionState"], first["evaluationStatus"]) == ("COMPLETED", "PASS")
        assert first["appVersion"] == "v7"
        turn = first["goldenResult"]["turnReplayResults"][0]
        assert turn["turnLatency"] == "0.050s"
        assert turn["toolCallLatencies"][0]["executionLatency"] == "0.020s"
        assert turn["overallToolInvocationResult"] == {
            "toolInvocationScore": 1.0,
            "outcome": "PASS",
        }
        call_outcome, response_outcome = turn["expectationOutcome"]
        assert call_outcome["outcome"] == "PASS"
        assert call_outcome["toolInvocationResult"]["parameterCorrectnessScore"] == 1.0
        assert call_outcome["observedToolCall"] == {
            "tool": "get_weather",
            "args": {"city": "Paris"},
        }
        assert response_outcome["observedAgentResponse"]["chunks"] == [{"text": "Sunny."}]
        assert http.get(f"/v1/{first['name']}").json() == first

        failed = http.get(f"/v1/{bad}/results").json()["evaluationResults"][0]
        assert failed["evaluationStatus"] == "FAIL"
        bad_turn = failed["goldenResult"]["turnReplayResults"][0]
        assert bad_turn["expectationOutcome"][0]["toolInvocationResult"]["outcome"] == "FAIL"

        full = http.get(f"/v1/{good}", params={"view": "FULL"}).json()
        assert full["evaluationRuns"] == [run]
        assert full["lastCompletedResult"]["name"] == first["name"]
        assert [r["name"] for r in full["lastTenResults"]] == [r["name"] for r in listed]
        (version,) = full["aggregatedMetrics"]["metricsByAppVersion"]
        assert version["appVersionId"] == "v7"
        assert (version["passCount"], version["failCount"]) == (2, 0)
        assert version["toolMetrics"] == [{"tool": "get_weather", "passCount": 2, "failCount": 0}]
        assert version["toolCallLatencyMetrics"] == [
            {"tool": "get_weather", "averageLatency": "0.020s"}
        ]
        assert version["turnLatencyMetrics"] == [{"averageLatency": "0.050s"}]
        assert version["metricsByTurn"][0]["turnIndex"] == 0
        assert version["metricsByTurn"][0]["toolMetrics"] == version["toolMetrics"]
        assert "lastTenResults" not in http.get(f"/v1/{good}").json()

        bad_metrics = http.get(f"/v1/{bad}").json()["aggregatedMetrics"]["metricsByAppVersion"][0]
        assert (bad_metrics["passCount"], bad_metrics["failCount"]) == (0, 2)
        assert bad_metrics["toolMetrics"] == [
            {"tool": "get_forecast", "passCount": 0, "failCount": 2}
        ]

        runs = http.get(f"{APP}/evaluationRuns").json()["evaluationRuns"]
        assert [r["name"] for r in runs] == [run]
        assert http.delete(f"/v1/{run}").status_code == 200
        assert error_of(http.get(f"/v1/{run}"))["status"] == "NOT_FOUND"
        after = http.get(f"/v1/{good}").json()
        assert after["evaluationRuns"] == [] and "aggregatedMetrics" not in after


def test_results_page_and_filter_by_run(tmp_path: Any, start_server: Any) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        server = start_server(store, agent=CallableAgent(weather_agent))
        with _client(server) as http:
            good = _create(http, golden("paris"))
            first = _start(http, {"evaluations": [good], "runCount": 3, "appVersion": "v1"})
            _wait(http, first, _done)
            second = _start(http, {"evaluations": [good], "appVersion": "v2"})
            _wait(http, second, _done)
            page = http.get(f"/v1/{good}/results", params={"pageSize": 2}).json()
            rest = http.get(
                f"/v1/{good}/results", params={"pageSize": 2, "pageToken": page["nextPageToken"]}
            ).json()
            names = [r["name"] for r in page["evaluationResults"] + rest["evaluationResults"]]
            assert len(set(names)) == 4 and "nextPageToken" not in rest
            only = http.get(f"/v1/{good}/results", params={"filter": f'evaluationRun="{first}"'})
            assert {r["evaluationRun"] for r in only.json()["evaluationResults"]} == {first}
            assert len(only.json()["evaluationResults"]) == 3
            versions = http.get(f"/v1/{good}").json()["aggregatedMetrics"]["metricsByAppVersion"]
            assert [(v["appVersionId"], v["passCount"]) for v in versions] == [("v1", 3), ("v2", 1)]
            assert http.get(f"/v1/{good}").json()["evaluationRuns"] == [second, first]


def test_run_errors_are_statuses(store: Store, start_server: Any) -> None:
    no_agent = start_server(store)
    with _client(no_agent) as http:
        good = _create(http, golden("paris"))
        refused = http.post(f"{APP}/evaluations:run", json={"evaluations": [good]})
        error = error_of(refused)
        assert (refused.status_code, error["status"]) == (400, "FAILED_PRECONDITION")
        assert "--agent" in error["message"]
    server = start_server(store, agent=CallableAgent(weather_agent))
    with _client(server) as http:
        cases = [
            ({"evaluations": ["missing"]}, 404, "NOT_FOUND"),
            ({"evaluations": [good], "runCount": 0}, 400, "INVALID_ARGUMENT"),
            ({"evaluations": [good], "goldenRunMethod": "FAST"}, 400, "INVALID_ARGUMENT"),
            ({"evaluations": [good], "personaRunConfigs": []}, 400, "INVALID_ARGUMENT"),
            ({}, 400, "INVALID_ARGUMENT"),
            ({"evaluations": ["apps/other/evaluations/x"]}, 400, "INVALID_ARGUMENT"),
        ]
        for body, status, code in cases:
            reply = http.post(f"{APP}/evaluations:run", json=body)
            assert (reply.status_code, error_of(reply)["status"]) == (status, code), body
        missing = http.get(f"/v1/{good}/results/01nope-0")
        assert error_of(missing)["status"] == "NOT_FOUND"
        assert http.get(f"{APP}/evaluationRuns").json() == {"evaluationRuns": []}


def test_agent_failure_is_an_error_result(store: Store, start_server: Any) -> None:
    async def flaky(text: str) -> Turn:
        if "Rome" in text:
            raise RuntimeError("backend down")
        return await weather_agent(text)

    server = start_server(store, agent=CallableAgent(flaky))
    rome = golden("rome")
    rome["golden"]["turns"][0]["steps"][0] = {"userInput": {"text": "Weather in Rome?"}}
    with _client(server) as http:
        good, bad = _create(http, golden("paris")), _create(http, rome)
        run = _wait(http, _start(http, {"evaluations": [good, bad]}), _done)
        assert run["state"] == "COMPLETED"
        assert run["progress"]["errorCount"] == 1 and run["progress"]["passedCount"] == 1
        (result,) = http.get(f"/v1/{bad}/results").json()["evaluationResults"]
        assert result["executionState"] == "ERROR" and "evaluationStatus" not in result
        assert result["errorInfo"]["errorType"] == "RUNTIME_FAILURE"
        assert "backend down" in result["errorInfo"]["errorMessage"]
        assert "aggregatedMetrics" not in http.get(f"/v1/{bad}").json()
    # The run's store keeps the agent's traceback with the case (`assay runs show --case`).
    (stored,) = [d for d in store.case_results(run["name"].rsplit("/", 1)[1]) if d["error"]]
    assert (
        "in flaky\n" in stored["traceback"]
        and "RuntimeError: backend down" in (stored["traceback"])
    )


class SlowAgent:
    """Counts calls; each takes `delay_s`."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.calls = 0
        self._lock = threading.Lock()

    async def __call__(self, text: str) -> Turn:
        with self._lock:
            self.calls += 1
        await asyncio.sleep(self.delay_s)
        return await weather_agent(text)


def _slow_server(start_server: Any, store: Store, delay_s: float) -> tuple[Any, SlowAgent]:
    """A service on `store` whose agent takes `delay_s` per call, and that agent."""
    agent = SlowAgent(delay_s)
    return start_server(store, agent=CallableAgent(agent)), agent


def _start_slow_run(http: httpx.Client, count: int) -> tuple[str, list[str]]:
    names = [_create(http, golden(f"g{i}")) for i in range(count)]
    return _start(http, {"evaluations": names, "runCount": 2}), names


def _stored_keys(store: Store, run: str) -> list[tuple[str, str, int]]:
    return [
        (r["eval_set_id"], r["case_id"], r["run_index"])
        for r in store.case_results(run.rsplit("/", 1)[1])
    ]


def test_run_resumes_after_a_graceful_restart(tmp_path: Any, start_server: Any) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    with Store.open(url) as store:
        server, _agent = _slow_server(start_server, store, 0.25)
        with _client(server) as http:
            run, _names = _start_slow_run(http, 6)
            _wait(http, run, lambda b: b["progress"]["completedCount"] >= 2)
        server.stop()
        stopped = store.get_run(run.rsplit("/", 1)[1])
        assert stopped.status == "INTERRUPTED" and stopped.case_count < 12
    with Store.open(url) as store:
        server, second_agent = _slow_server(start_server, store, 0.01)
        with _client(server) as http:
            final = _wait(http, run, _done)
        assert final["state"] == "COMPLETED"
        assert final["progress"]["completedCount"] == final["progress"]["totalCount"] == 12
        keys = _stored_keys(store, run)
        assert len(keys) == len(set(keys)) == 12
        # The second server ran only what the first had not stored.
        assert second_agent.calls == 12 - stopped.case_count


def test_run_of_a_dead_process_is_resumed(tmp_path: Any, start_server: Any) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    with Store.open(url) as store:
        server, _agent = _slow_server(start_server, store, 0.25)
        with _client(server) as http:
            run, _names = _start_slow_run(http, 4)
            _wait(http, run, lambda b: b["progress"]["completedCount"] >= 1)
        server.stop()
        run_id = run.rsplit("/", 1)[1]
        # As if the owning process had been killed mid-run: still RUNNING, owner gone.
        info = store.get_run(run_id)
        config = dict(info.config)
        config["service"] = {
            **config["service"],
            "owner": {**config["service"]["owner"], "pid": dead_pid, "instance": "gone"},
        }
        with store.engine.begin() as conn:
            conn.execute(
                update(runs_table)
                .where(runs_table.c.id == run_id)
                .values(status="RUNNING", config=config, finished_at=None)
            )
        server, _agent = _slow_server(start_server, store, 0.01)
        with _client(server) as http:
            assert _wait(http, run, _done)["state"] == "COMPLETED"
        keys = _stored_keys(store, run)
        assert len(keys) == len(set(keys)) == 8


def test_a_live_owner_keeps_its_run(tmp_path: Any, start_server: Any) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    with Store.open(url) as store:
        first, agent = _slow_server(start_server, store, 0.2)
        with _client(first) as http:
            run, _names = _start_slow_run(http, 3)
            # A second server on the same store must not take over a run still going.
            second, _agent = _slow_server(start_server, store, 0.0)
            with _client(second) as other:
                assert _wait(other, run, _done)["state"] == "COMPLETED"
        assert agent.calls == 6
        keys = _stored_keys(store, run)
        assert len(keys) == len(set(keys)) == 6


def test_progress_is_readable_while_running(tmp_path: Any, start_server: Any) -> None:
    count = 3
    with Store.open(f"sqlite:///{tmp_path / 'p.db'}") as store:
        server, _agent = _slow_server(start_server, store, 0.3)
        with _client(server) as http:
            run, names = _start_slow_run(http, count)
            seen = _wait(http, run, lambda b: b["progress"]["completedCount"] > 0)
            assert seen["state"] == "RUNNING"
            assert seen["progress"]["totalCount"] == 2 * count
            assert seen["progress"]["completedCount"] < 2 * count
            assert http.get(f"/v1/{names[0]}").json()["evaluationRuns"] == [run]
            _wait(http, run, _done)


def test_scenario_runs_use_the_apps_stored_personas(
    store: Store, start_server: Callable[..., RunningServer], monkeypatch: Any
) -> None:
    from assay.testing.judge_server import JudgeServer, StandinRequest

    prompts: list[str] = []

    def user(request: StandinRequest) -> str:
        prompts.append(request.messages[0]["content"])
        return "</finished>"

    async def host(text: str) -> str:
        return "How many guests?"

    with JudgeServer(user) as standin:
        monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        server = start_server(store, agent=CallableAgent(host))
        # The simulated user's model, as `assay serve --allow-model openai:u` allows it.
        server._server.config.app.state.ctx.limits = ServiceLimits(allowed_models=("openai:u",))
        with _client(server) as http:
            persona = {
                "displayName": "Grumpy regular",
                "personality": "Answers in three words at most and hates small talk.",
            }
            reply = http.post(f"{APP}/personas?personaId=grumpy", json=persona)
            assert reply.status_code == 200, reply.text
            scenario = {
                "displayName": "table for two",
                "scenario": {
                    "task": "Book a table for two tonight.",
                    "startingPrompt": "Table for two.",
                    "persona": "apps/shop/personas/grumpy",
                    "maxTurns": 3,
                },
            }
            evaluation = _create(http, scenario)
            run = _start(
                http, {"evaluations": [evaluation], "runCount": 1, "userModel": "openai:u"}
            )
            final = _wait(http, run, _done)
            assert final["state"] == "COMPLETED", final
            assert final["progress"]["errorCount"] == 0, final
    # The simulated user was built from the stored persona's personality.
    assert prompts and all("hates small talk" in p for p in prompts)
