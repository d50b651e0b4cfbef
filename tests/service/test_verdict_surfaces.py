"""One verdict per run: a case whose agent could not do its job is never PASS anywhere.

The same service run read through the CES REST results, the run's progress, the
evaluation's aggregated metrics, the store and `assay runs show`: all agree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
from service_samples import golden
from service_server import RunningServer, create_key

from assay.agents.callable import CallableAgent
from assay.agents.tools import ToolHook
from assay.core.cases import Step, ToolCall, ToolResponse, Turn
from assay.store import Store

APP = "/v1/apps/shop"


async def honest_agent(text: str, tools: ToolHook) -> Turn:
    """Calls get_weather through the hook and repeats what the tool answered."""
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    payload, _ = await tools.execute(call, lambda: {"sky": "sunny"})
    said = payload.get("error") or "Sunny."
    reply = ToolResponse(id="c1", name="get_weather", response=payload)
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response=said)


def _run(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    reply = http.post(f"{APP}/evaluations:run", json=body)
    assert reply.status_code == 200, reply.text
    run = reply.json()["metadata"]["evaluationRun"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found: dict[str, Any] = http.get(f"/v1/{run}").json()
        if found["state"] != "RUNNING":
            return found
        time.sleep(0.05)
    raise AssertionError(f"run {run} did not finish")


def _runs_show(store_url: str, run_id: str) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "assay", "runs", "show", run_id, "--store", store_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_fake_tool_call_without_a_mock_is_not_pass_in_any_surface(
    store: Store, store_url: str, start_server: Callable[..., RunningServer]
) -> None:
    server = start_server(store, agent=CallableAgent(honest_agent))
    key = create_key(store)
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as http:
        created = http.post(f"{APP}/evaluations", json=golden("paris"))
        assert created.status_code == 200, created.text
        name = created.json()["name"]
        final = _run(http, {"evaluations": [name], "config": {"toolCallBehaviour": "FAKE"}})
        assert final["state"] == "COMPLETED"
        progress = final["progress"]
        assert progress["passedCount"] == 0 and progress["errorCount"] == 1, progress

        (result,) = http.get(f"/v1/{name}/results").json()["evaluationResults"]
        assert result["executionState"] == "ERROR"
        assert result.get("evaluationStatus") != "PASS"
        assert result["errorInfo"]["errorType"] == "TOOL_NOT_RUN"
        assert "get_weather" in result["errorInfo"]["errorMessage"]
        full = http.get(f"/v1/{name}", params={"view": "FULL"}).json()
        for version in full.get("aggregatedMetrics", {}).get("metricsByAppVersion", []):
            assert version.get("passCount", 0) == 0, version

        # The same run with the mock given passes, in the same surfaces.
        mocked = golden("mocked")
        mocked["golden"]["turns"][0]["steps"].insert(
            2,
            {
                "expectation": {
                    "mockToolResponse": {"tool": "get_weather", "response": {"sky": "sunny"}}
                }
            },
        )
        ok_name = http.post(f"{APP}/evaluations", json=mocked).json()["name"]
        ok_run = _run(http, {"evaluations": [ok_name], "config": {"toolCallBehaviour": "FAKE"}})
        assert ok_run["progress"]["passedCount"] == 1, ok_run
        (ok,) = http.get(f"/v1/{ok_name}/results").json()["evaluationResults"]
        assert (ok["executionState"], ok["evaluationStatus"]) == ("COMPLETED", "PASS")

    run_id = final["name"].rsplit("/", 1)[1]
    info = store.get_run(run_id)
    assert (info.passed, info.not_evaluated) == (0, 1)
    shown = _runs_show(store_url, run_id)
    assert "NOT_EVALUATED" in shown and "not run (get_weather)" in shown, shown
    assert "PASSED" not in shown.replace("NOT_EVALUATED", ""), shown


def test_a_not_evaluated_case_is_fail_on_the_ces_wire(
    store: Store, start_server: Callable[..., RunningServer]
) -> None:
    # A golden whose only expectation is an agent response, run without a judge:
    # nothing scores it, so it is NOT_EVALUATED in the store and FAIL (not PASS) here.
    async def agent(text: str) -> str:
        return "Sunny."

    server = start_server(store, agent=CallableAgent(agent))
    key = create_key(store)
    body = {
        "displayName": "reply only",
        "golden": {
            "turns": [
                {
                    "steps": [
                        {"userInput": {"text": "Weather?"}},
                        {"expectation": {"agentResponse": {"chunks": [{"text": "Sunny."}]}}},
                    ]
                }
            ]
        },
    }
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as http:
        name = http.post(f"{APP}/evaluations", json=body).json()["name"]
        final = _run(http, {"evaluations": [name]})
        assert final["progress"]["passedCount"] == 0, final
        (result,) = http.get(f"/v1/{name}/results").json()["evaluationResults"]
        assert (result["executionState"], result["evaluationStatus"]) == ("COMPLETED", "FAIL")
    run_id = final["name"].rsplit("/", 1)[1]
    assert store.get_run(run_id).not_evaluated == 1
